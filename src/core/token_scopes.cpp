#include "core/token_scopes.h"

#include "core/enum_names.h"

namespace berth {
namespace {

constexpr EnumNames<Scope, 5> kScopeNames = {{{Scope::kRead, "read"},
                                              {Scope::kDeploy, "deploy"},
                                              {Scope::kApprove, "approve"},
                                              {Scope::kConfigure, "configure"},
                                              {Scope::kAdmin, "admin"}}};

}  // namespace

std::string_view ScopeName(Scope scope) { return NameOf(kScopeNames, scope, "unknown"); }

Scopes Scopes::Of(std::initializer_list<Scope> scopes) {
  Scopes out;
  for (Scope s : scopes) out.bits_ |= Bit(s);
  return out;
}

Result<Scopes> Scopes::Parse(const std::vector<std::string>& names, const std::string& path) {
  std::string known = "read, deploy, approve, configure or admin";
  if (names.empty())
    return InvalidFields("invalid scopes", {{path, "must name a scope: " + known}});
  Scopes out;
  FieldErrors errors;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string at = path + "[" + std::to_string(i) + "]";
    auto scope = ValueOf(kScopeNames, names[i]);
    if (!scope) {
      errors.push_back({at, "must be " + known});
    } else if (out.Holds(*scope)) {
      errors.push_back({at, "repeats scope " + names[i]});
    } else {
      out.bits_ |= Bit(*scope);
    }
  }
  if (!errors.empty()) return InvalidFields("invalid scopes", std::move(errors));
  return out;
}

std::vector<std::string> Scopes::Names() const {
  std::vector<std::string> out;
  for (Scope s : ValuesOf(kScopeNames)) {
    if (Holds(s)) out.emplace_back(ScopeName(s));
  }
  return out;
}

}  // namespace berth
