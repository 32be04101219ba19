// Base64 by the RFC's table; strict on decode so that two encodings never mean the same bytes.
#include "core/base64.h"

#include <array>
#include <cstdint>

namespace berth {
namespace {

constexpr std::string_view kStandard =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kUrl =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::array<int8_t, 256> ReverseTable(std::string_view symbols) {
  std::array<int8_t, 256> table{};
  table.fill(-1);
  for (size_t i = 0; i < symbols.size(); ++i) {
    table[static_cast<unsigned char>(symbols[i])] = static_cast<int8_t>(i);
  }
  return table;
}

Error Invalid(std::string rule) {
  return MakeError(ErrorKind::kInvalidArgument, "base64: " + std::move(rule));
}

}  // namespace

std::string Base64Encode(std::string_view data, Base64Alphabet alphabet) {
  std::string_view symbols = alphabet == Base64Alphabet::kStandard ? kStandard : kUrl;
  bool pad = alphabet == Base64Alphabet::kStandard;
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(data[i])) << 16 |
                 static_cast<uint32_t>(static_cast<unsigned char>(data[i + 1])) << 8 |
                 static_cast<unsigned char>(data[i + 2]);
    out += symbols[n >> 18 & 63];
    out += symbols[n >> 12 & 63];
    out += symbols[n >> 6 & 63];
    out += symbols[n & 63];
  }
  size_t rest = data.size() - i;
  if (rest > 0) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(data[i])) << 16;
    if (rest == 2) n |= static_cast<uint32_t>(static_cast<unsigned char>(data[i + 1])) << 8;
    out += symbols[n >> 18 & 63];
    out += symbols[n >> 12 & 63];
    if (rest == 2) out += symbols[n >> 6 & 63];
    if (pad) out.append(rest == 1 ? "==" : "=");
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text, Base64Alphabet alphabet) {
  static const auto kStandardTable = ReverseTable(kStandard);
  static const auto kUrlTable = ReverseTable(kUrl);
  const auto& table = alphabet == Base64Alphabet::kStandard ? kStandardTable : kUrlTable;
  if (alphabet == Base64Alphabet::kStandard) {
    if (text.size() % 4 != 0) return Invalid("length must be a multiple of 4");
    size_t padding = 0;
    while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') {
      ++padding;
    }
    text.remove_suffix(padding);
  } else if (text.size() % 4 == 1) {
    return Invalid("length leaves a lone symbol");
  }
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    int8_t v = table[static_cast<unsigned char>(c)];
    if (v < 0) return Invalid("character outside the alphabet");
    buffer = buffer << 6 | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>(buffer >> bits & 0xff);
    }
  }
  if (bits > 0 && (buffer & ((1u << bits) - 1)) != 0) return Invalid("non-zero trailing bits");
  return out;
}

}  // namespace berth
