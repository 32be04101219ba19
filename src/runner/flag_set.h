// A flag parser with pflag's rules, which Kubernetes components (and so the runner's contract)
// follow: --name=value or --name value, -x=value or -x value for a shorthand, --flag or
// --flag=true|false for booleans, "--" ends the flags. Every error names the flag.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace berth::runner {

class FlagSet {
 public:
  // set is called with each value given; it returns an error that says the rule broken.
  using Setter = std::function<Result<void>(std::string_view value)>;

  explicit FlagSet(std::string name) : name_(std::move(name)) {}

  void Value(const std::string& name, Setter set, char shorthand = 0);
  void Bool(const std::string& name, bool* target);
  // A flag that may stand alone (--version) or take a value (--version=raw).
  void OptionalValue(const std::string& name, std::string* target, std::string bare_value);

  // Parses args; flags and positional arguments may mix. With stop_at_first_positional, the
  // first positional argument and everything after it are returned unparsed (a subcommand).
  Result<std::vector<std::string>> Parse(const std::vector<std::string>& args,
                                         bool stop_at_first_positional = false);

  bool Changed(const std::string& name) const { return changed_.count(name) > 0; }

 private:
  struct Flag {
    Setter set;
    bool is_bool = false;
    bool optional_value = false;
    std::string bare_value;
  };
  Error Invalid(const std::string& message) const;

  std::string name_;
  std::map<std::string, Flag> flags_;
  std::map<char, std::string> shorthands_;
  std::map<std::string, bool> changed_;
};

Result<bool> ParseBool(std::string_view value);

}  // namespace berth::runner
