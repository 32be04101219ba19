#include "core/environment_ref.h"

namespace berth {

bool IsDnsLabel(std::string_view id) {
  if (id.empty() || id.size() > 63 || id.front() == '-' || id.back() == '-') return false;
  for (char c : id) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

Result<EnvironmentRef> EnvironmentRef::FromKey(std::string_view key) {
  EnvironmentRef ref;
  std::string* parts[] = {&ref.org, &ref.project, &ref.env};
  for (size_t i = 0; i < 3; ++i) {
    size_t slash = key.find('/');
    bool last = i == 2;
    if (last != (slash == std::string_view::npos) || !IsDnsLabel(key.substr(0, slash)))
      return MakeError(ErrorKind::kInvalidArgument,
                       "an environment key is ORG/PROJECT/ENV, each a DNS label",
                       std::string(key.substr(0, 200)));
    *parts[i] = std::string(key.substr(0, slash));
    key.remove_prefix(last ? key.size() : slash + 1);
  }
  return ref;
}

}  // namespace berth
