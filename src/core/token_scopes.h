// What an API token may do. Scopes add up; `admin` holds every permission, and every scope
// reads. A CI token holds `deploy`, a reviewer's `approve`: a token that cannot approve cannot
// skip approval either (its applies stop at their plan), which is what makes the two duties
// separate.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace berth {

enum class Scope : uint8_t {
  kRead,       // every GET
  kDeploy,     // upload bundles, create and cancel deployments
  kApprove,    // approve a plan
  kConfigure,  // projects, environments, environment types, runners, runner rules
  kAdmin,      // all of it, and tokens, state rollback and unlock, relaxed runner Pods
};
std::string_view ScopeName(Scope scope);

class Scopes {
 public:
  static Scopes Of(std::initializer_list<Scope> scopes);
  // Names as a request gives them; unknown, repeated or none is kInvalidArgument naming path.
  static Result<Scopes> Parse(const std::vector<std::string>& names, const std::string& path);

  bool Holds(Scope scope) const { return (bits_ & Bit(scope)) != 0; }
  // Whether a request that needs `needed` may go on.
  bool Allow(Scope needed) const {
    return bits_ != 0 && (needed == Scope::kRead || Holds(needed) || Holds(Scope::kAdmin));
  }
  std::vector<std::string> Names() const;  // in the enum's order

  bool operator==(const Scopes&) const = default;

 private:
  static uint8_t Bit(Scope scope) {
    return static_cast<uint8_t>(1U << static_cast<unsigned>(scope));
  }
  uint8_t bits_ = 0;
};

}  // namespace berth
