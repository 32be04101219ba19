#include "controller/known_hosts.h"

#include <sstream>
#include <string>

#include "core/base64.h"
#include "crypto/digest.h"

namespace berth::controller {
namespace {

// One comma-separated name of a line: plain, or `|1|base64(salt)|base64(HMAC-SHA1(salt, name))`.
bool NameMatches(std::string_view pattern, const std::string& name) {
  if (!pattern.starts_with("|1|")) return pattern == name;
  const std::string_view rest = pattern.substr(3);
  const size_t bar = rest.find('|');
  if (bar == std::string_view::npos) return false;
  auto salt = Base64Decode(rest.substr(0, bar));
  auto hash = Base64Decode(rest.substr(bar + 1));
  return salt && hash && crypto::EqualConstantTime(crypto::HmacSha1(*salt, name), *hash);
}

}  // namespace

bool KnownHostsAccept(std::string_view known_hosts, std::string_view host, int port,
                      std::string_view host_key) {
  const std::string name =
      port == 22 ? std::string(host) : "[" + std::string(host) + "]:" + std::to_string(port);
  std::istringstream lines{std::string(known_hosts)};
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string names;
    std::string type;
    std::string key;
    if (!(fields >> names >> type >> key) || names.starts_with('#') || names.starts_with('@'))
      continue;
    auto blob = Base64Decode(key);
    if (!blob || !crypto::EqualConstantTime(*blob, host_key)) continue;
    std::istringstream patterns(names);
    for (std::string pattern; std::getline(patterns, pattern, ',');)
      if (NameMatches(pattern, name)) return true;
  }
  return false;
}

}  // namespace berth::controller
