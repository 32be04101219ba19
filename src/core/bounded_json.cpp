#include "core/bounded_json.h"

namespace berth {

Result<nlohmann::json> ParseBoundedJson(std::string_view text, int max_depth) {
  using json = nlohmann::json;
  bool too_deep = false;
  // nlohmann's parser is iterative; only the document it builds is recursive. An object or
  // array that opens beyond the bound is discarded as it is read, so it is never built.
  json::parser_callback_t bound = [&](int depth, json::parse_event_t event, json&) {
    bool opens =
        event == json::parse_event_t::object_start || event == json::parse_event_t::array_start;
    if (opens && depth >= max_depth) {
      too_deep = true;
      return false;
    }
    return true;
  };
  json doc = json::parse(text, bound, false);
  if (too_deep) {
    return MakeError(ErrorKind::kInvalidArgument,
                     "JSON nested deeper than " + std::to_string(max_depth) + " levels is refused");
  }
  if (doc.is_discarded()) return MakeError(ErrorKind::kInvalidArgument, "not valid JSON");
  return Ok(std::move(doc));
}

nlohmann::json ParseBoundedJsonOrNull(std::string_view text, int max_depth) {
  auto doc = ParseBoundedJson(text, max_depth);
  return doc ? std::move(*doc) : nlohmann::json();
}

}  // namespace berth
