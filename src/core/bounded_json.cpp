#include "core/bounded_json.h"

#include <cstdint>
#include <string>

namespace berth {
namespace {

using json = nlohmann::json;

// nlohmann's SAX events with only the nesting and the values counted: nothing is built, and the
// parse ends at the first value beyond a bound (or a parse error).
class BoundsCheck final : public json::json_sax_t {
 public:
  explicit BoundsCheck(JsonBounds bounds) : bounds_(bounds) {}
  bool too_deep = false;
  bool too_many = false;

  bool null() override { return Value(); }
  bool boolean(bool /*value*/) override { return Value(); }
  bool number_integer(number_integer_t /*value*/) override { return Value(); }
  bool number_unsigned(number_unsigned_t /*value*/) override { return Value(); }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override { return Value(); }
  bool string(string_t& /*value*/) override { return Value(); }
  bool binary(binary_t& /*value*/) override { return Value(); }
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
  bool Value() {
    too_many = ++values_ > bounds_.values;
    return !too_many;
  }
  bool Open() {
    too_deep = ++depth_ > bounds_.depth;
    return !too_deep && Value();
  }
  bool Close() {
    --depth_;
    return true;
  }
  const JsonBounds bounds_;
  int depth_ = 0;
  size_t values_ = 0;
};

// The bounds checked as the text streams by, before anything is built.
Result<void> Check(std::string_view text, JsonBounds bounds) {
  BoundsCheck check(bounds);
  const bool valid = json::sax_parse(text, &check, json::input_format_t::json, true);
  if (check.too_deep)
    return MakeError(
        ErrorKind::kInvalidArgument,
        "JSON nested deeper than " + std::to_string(bounds.depth) + " levels is refused");
  if (check.too_many)
    return MakeError(ErrorKind::kInvalidArgument,
                     "JSON of more than " + std::to_string(bounds.values) + " values is refused");
  if (!valid) return MakeError(ErrorKind::kInvalidArgument, "not valid JSON");
  return {};
}

}  // namespace

Result<json> ParseBoundedJson(std::string_view text, JsonBounds bounds) {
  // Checked first, then built by the plain parser: nlohmann's callback parser, which could
  // discard values as they are read, looks for a discarded value in the whole parent at the
  // end of each object, which made `[{},{},...]` quadratic.
  if (auto checked = Check(text, bounds); !checked) return checked.error();
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return MakeError(ErrorKind::kInvalidArgument, "not valid JSON");
  return Ok(std::move(doc));
}

json ParseBoundedJsonOrNull(std::string_view text, JsonBounds bounds) {
  auto doc = ParseBoundedJson(text, bounds);
  return doc ? std::move(*doc) : json();
}

Result<void> CheckBoundedJson(std::string_view text, int max_depth) {
  return Check(text, {.depth = max_depth, .values = SIZE_MAX});
}

}  // namespace berth
