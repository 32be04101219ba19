#include "controller/state_tokens.h"

#include <charconv>

#include "crypto/digest.h"

namespace berth::controller {

std::string StateTokens::Mac(const std::string& ns, const std::string& name,
                             const std::string& expiry) const {
  // Namespaces and names hold no '/', so the message reads one way only.
  return crypto::HmacSha256Hex(key_, "berth-state:" + ns + "/" + name + "/" + expiry);
}

std::string StateTokens::Mint(const std::string& ns, const std::string& name,
                              std::chrono::system_clock::time_point expires) const {
  const std::string expiry = std::to_string(
      std::chrono::duration_cast<std::chrono::seconds>(expires.time_since_epoch()).count());
  return expiry + "." + Mac(ns, name, expiry);
}

StateTokens::Verdict StateTokens::Verify(const std::string& token, const std::string& ns,
                                         const std::string& name,
                                         std::chrono::system_clock::time_point now) const {
  const size_t dot = token.find('.');
  if (dot == std::string::npos || dot == 0 || dot > 19) return Verdict::kInvalid;
  const std::string expiry = token.substr(0, dot);
  int64_t seconds = 0;
  auto [end, error] = std::from_chars(expiry.data(), expiry.data() + expiry.size(), seconds);
  if (error != std::errc() || end != expiry.data() + expiry.size()) return Verdict::kInvalid;
  if (!crypto::EqualConstantTime(token.substr(dot + 1), Mac(ns, name, expiry)))
    return Verdict::kInvalid;
  if (now >= std::chrono::system_clock::time_point(std::chrono::seconds(seconds)))
    return Verdict::kExpired;
  return Verdict::kValid;
}

}  // namespace berth::controller
