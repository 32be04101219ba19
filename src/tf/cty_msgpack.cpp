#include "tf/cty_msgpack.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

namespace berth::tf {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 64;
constexpr uint8_t kUnknownExt = 0x00, kUnknownRefinedExt = 0x0c;  // go-cty's unknown values

Error Malformed(const std::string& rule) {
  return MakeError(ErrorKind::kInvalidArgument, "plan value (msgpack): " + rule);
}

class Decoder {
 public:
  explicit Decoder(std::string_view bytes) : bytes_(bytes) {}

  Result<json> Whole() {
    auto value = Value(0);
    if (!value) return value;
    if (at_ != bytes_.size()) return Malformed("bytes after the value");
    return value;
  }

 private:
  bool Take(size_t n, std::string_view* out) {
    if (n > bytes_.size() - at_) return false;
    *out = bytes_.substr(at_, n);
    at_ += n;
    return true;
  }

  // A big-endian unsigned integer of n bytes.
  bool Uint(size_t n, uint64_t* out) {
    std::string_view raw;
    if (!Take(n, &raw)) return false;
    *out = 0;
    for (char c : raw) *out = (*out << 8) | static_cast<uint8_t>(c);
    return true;
  }

  Result<json> Value(int depth) {
    if (depth > kMaxDepth) return Malformed("nested deeper than " + std::to_string(kMaxDepth));
    uint64_t tag = 0;
    if (!Uint(1, &tag)) return Malformed("ends early");
    const auto t = static_cast<uint8_t>(tag);
    if (t <= 0x7f) return Ok(json(static_cast<uint64_t>(t)));
    if (t >= 0xe0) return Ok(json(static_cast<int64_t>(static_cast<int8_t>(t))));
    if ((t & 0xf0) == 0x80) return Map(t & 0x0f, depth);
    if ((t & 0xf0) == 0x90) return Array(t & 0x0f, depth);
    if ((t & 0xe0) == 0xa0) return String(t & 0x1f);
    uint64_t n = 0;
    switch (t) {
      case 0xc0:
        return Ok(json(nullptr));
      case 0xc2:
        return Ok(json(false));
      case 0xc3:
        return Ok(json(true));
      case 0xc4:
      case 0xc5:
      case 0xc6:  // bin: what cty writes only as a dynamic value's type
        if (!Uint(size_t{1} << (t - 0xc4), &n)) return Malformed("ends early");
        return Binary(n);
      case 0xc7:
      case 0xc8:
      case 0xc9:
        if (!Uint(size_t{1} << (t - 0xc7), &n)) return Malformed("ends early");
        return Extension(n);
      case 0xca:
        return Float(4);
      case 0xcb:
        return Float(8);
      case 0xcc:
      case 0xcd:
      case 0xce:
      case 0xcf:
        if (!Uint(size_t{1} << (t - 0xcc), &n)) return Malformed("ends early");
        return Ok(json(n));
      case 0xd0:
      case 0xd1:
      case 0xd2:
      case 0xd3:
        return Signed(size_t{1} << (t - 0xd0));
      case 0xd4:
      case 0xd5:
      case 0xd6:
      case 0xd7:
      case 0xd8:
        return Extension(size_t{1} << (t - 0xd4));
      case 0xd9:
      case 0xda:
      case 0xdb:
        if (!Uint(size_t{1} << (t - 0xd9), &n)) return Malformed("ends early");
        return String(n);
      case 0xdc:
      case 0xdd:
        if (!Uint(size_t{2} << (t - 0xdc), &n)) return Malformed("ends early");
        return Array(n, depth);
      case 0xde:
      case 0xdf:
        if (!Uint(size_t{2} << (t - 0xde), &n)) return Malformed("ends early");
        return Map(n, depth);
      default:
        return Malformed("unknown type byte " + std::to_string(t));
    }
  }

  Result<json> String(uint64_t n) {
    std::string_view raw;
    if (!Take(n, &raw)) return Malformed("a string longer than what is left");
    return Ok(json(std::string(raw)));
  }

  Result<json> Binary(uint64_t n) {
    std::string_view raw;
    if (!Take(n, &raw)) return Malformed("bytes longer than what is left");
    return Ok(json::binary(std::vector<uint8_t>(raw.begin(), raw.end())));
  }

  Result<json> Signed(size_t n) {
    uint64_t raw = 0;
    if (!Uint(n, &raw)) return Malformed("ends early");
    const int shift = static_cast<int>(64 - 8 * n);  // sign-extend n bytes
    return Ok(json(static_cast<int64_t>(raw << shift) >> shift));
  }

  Result<json> Float(size_t n) {
    uint64_t raw = 0;
    if (!Uint(n, &raw)) return Malformed("ends early");
    if (n == 4)
      return Ok(json(static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(raw)))));
    return Ok(json(std::bit_cast<double>(raw)));
  }

  // Extensions: cty writes only its unknown values so (the type byte, then any refinements).
  Result<json> Extension(uint64_t n) {
    std::string_view raw;
    if (!Take(1, &raw)) return Malformed("ends early");
    const auto type = static_cast<uint8_t>(raw[0]);
    if (!Take(n, &raw)) return Malformed("an extension longer than what is left");
    if (type != kUnknownExt && type != kUnknownRefinedExt)
      return Malformed("extension type " + std::to_string(type) + " is not cty's");
    return Ok(UnknownMarker());
  }

  Result<json> Array(uint64_t n, int depth) {
    if (n > bytes_.size() - at_) return Malformed("more elements than bytes left");
    json out = json::array();
    for (uint64_t i = 0; i < n; ++i) {
      auto element = Value(depth + 1);
      if (!element) return element;
      out.push_back(std::move(*element));
    }
    // A dynamic value: [its type as JSON bytes, the value]; cty writes bytes for nothing else.
    if (n == 2 && out[0].is_binary()) return Ok(std::move(out[1]));
    return Ok(std::move(out));
  }

  Result<json> Map(uint64_t n, int depth) {
    if (n > (bytes_.size() - at_) / 2) return Malformed("more entries than bytes left");
    json out = json::object();
    for (uint64_t i = 0; i < n; ++i) {
      auto key = Value(depth + 1);
      if (!key) return key;
      if (!key->is_string()) return Malformed("a map key that is not a string");
      auto value = Value(depth + 1);
      if (!value) return value;
      out[key->get<std::string>()] = std::move(*value);
    }
    return Ok(std::move(out));
  }

  std::string_view bytes_;
  size_t at_ = 0;
};

// A module's own map with this one key reads as a marker too: shown as "(sensitive value)" or
// "(known after apply)", which reveals nothing.
constexpr std::string_view kMarkerKey{"\0berth", 6};

json Marker(const char* what) { return json{{std::string(kMarkerKey), what}}; }

bool IsMarker(const json& value, const char* what) {
  if (!value.is_object() || value.size() != 1) return false;
  auto it = value.find(std::string(kMarkerKey));
  return it != value.end() && *it == what;
}

}  // namespace

json UnknownMarker() { return Marker("unknown"); }
json SensitiveMarker() { return Marker("sensitive"); }
bool IsUnknownMarker(const json& value) { return IsMarker(value, "unknown"); }
bool IsSensitiveMarker(const json& value) { return IsMarker(value, "sensitive"); }

Result<json> DecodeCtyMsgpack(std::string_view bytes) { return Decoder(bytes).Whole(); }

}  // namespace berth::tf
