// One environment of one organization's project. Its key ("org/project/env") is the one name
// of the environment's state everywhere: berth's state backend path, the store's state key,
// the run token's scope, and the tail of every other backend's key. Built here only.
#pragma once

#include <string>
#include <string_view>

#include "core/error.h"

namespace berth {

struct EnvironmentRef {
  std::string org;
  std::string project;
  std::string env;

  // "org/project/env".
  std::string Key() const { return org + "/" + project + "/" + env; }
  // From a key (a state backend path's tail, a token's scope): three ids, each a DNS label.
  static Result<EnvironmentRef> FromKey(std::string_view key);

  bool operator==(const EnvironmentRef&) const = default;
};

// An id of berth's: a DNS label (RFC 1123), 1 to 63 of a-z, 0-9 and '-', not starting or
// ending with '-'.
bool IsDnsLabel(std::string_view id);

}  // namespace berth
