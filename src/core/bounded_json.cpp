#include "core/bounded_json.h"

#include <string>

namespace berth {
namespace {

using json = nlohmann::json;

Error TooDeep(int max_depth) {
  return MakeError(ErrorKind::kInvalidArgument,
                   "JSON nested deeper than " + std::to_string(max_depth) + " levels is refused");
}

// nlohmann's SAX events, with only the nesting counted: parse errors end the parse.
class DepthCheck final : public json::json_sax_t {
 public:
  explicit DepthCheck(int max_depth) : max_depth_(max_depth) {}
  bool too_deep = false;

  bool null() override { return true; }
  bool boolean(bool /*value*/) override { return true; }
  bool number_integer(number_integer_t /*value*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*value*/) override { return true; }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override { return true; }
  bool string(string_t& /*value*/) override { return true; }
  bool binary(binary_t& /*value*/) override { return true; }
  bool start_object(std::size_t /*elements*/) override { return Open(); }
  bool key(string_t& /*value*/) override { return true; }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t /*elements*/) override { return Open(); }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& /*error*/) override {
    return false;
  }

 private:
  bool Open() {
    too_deep = ++depth_ > max_depth_;
    return !too_deep;
  }
  bool Close() {
    --depth_;
    return true;
  }
  const int max_depth_;
  int depth_ = 0;
};

}  // namespace

Result<json> ParseBoundedJson(std::string_view text, JsonBounds bounds) {
  bool too_deep = false;
  size_t values = 0;
  // nlohmann's parser is iterative; only the document it builds is recursive. An object or
  // array that opens beyond the bound is discarded as it is read, so it is never built; the
  // values are counted as they are read, and the parse ends at the first one beyond the bound.
  json::parser_callback_t bound = [&](int depth, json::parse_event_t event, json&) {
    const bool opens =
        event == json::parse_event_t::object_start || event == json::parse_event_t::array_start;
    if (opens && depth >= bounds.depth) {
      too_deep = true;
      return false;
    }
    if (opens || event == json::parse_event_t::value) ++values;
    return values <= bounds.values;
  };
  json doc = json::parse(text, bound, false);
  if (too_deep) return TooDeep(bounds.depth);
  if (values > bounds.values)
    return MakeError(ErrorKind::kInvalidArgument,
                     "JSON of more than " + std::to_string(bounds.values) + " values is refused");
  if (doc.is_discarded()) return MakeError(ErrorKind::kInvalidArgument, "not valid JSON");
  return Ok(std::move(doc));
}

json ParseBoundedJsonOrNull(std::string_view text, JsonBounds bounds) {
  auto doc = ParseBoundedJson(text, bounds);
  return doc ? std::move(*doc) : json();
}

Result<void> CheckBoundedJson(std::string_view text, int max_depth) {
  DepthCheck check(max_depth);
  const bool valid = json::sax_parse(text, &check, json::input_format_t::json, true);
  if (check.too_deep) return TooDeep(max_depth);
  if (!valid) return MakeError(ErrorKind::kInvalidArgument, "not valid JSON");
  return {};
}

}  // namespace berth
