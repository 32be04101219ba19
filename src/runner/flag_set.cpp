// pflag-compatible parsing.
#include "runner/flag_set.h"

namespace berth::runner {

Result<bool> ParseBool(std::string_view value) {
  // strconv.ParseBool's spellings.
  for (std::string_view t : {"1", "t", "T", "true", "TRUE", "True"}) {
    if (value == t) return true;
  }
  for (std::string_view f : {"0", "f", "F", "false", "FALSE", "False"}) {
    if (value == f) return false;
  }
  return MakeError(ErrorKind::kInvalidArgument, "must be true or false");
}

void FlagSet::Value(const std::string& name, Setter set, char shorthand) {
  flags_[name] = Flag{std::move(set)};
  if (shorthand != 0) shorthands_[shorthand] = name;
}

void FlagSet::Bool(const std::string& name, bool* target) {
  flags_[name] = Flag{[target](std::string_view v) -> Result<void> {
                        auto b = ParseBool(v);
                        if (!b) return b.error();
                        *target = *b;
                        return {};
                      },
                      true};
}

void FlagSet::OptionalValue(const std::string& name, std::string* target, std::string bare_value) {
  flags_[name] = Flag{[target](std::string_view v) -> Result<void> {
                        *target = std::string(v);
                        return {};
                      },
                      false, true, std::move(bare_value)};
}

Error FlagSet::Invalid(const std::string& message) const {
  return MakeError(ErrorKind::kInvalidArgument, name_ + ": " + message);
}

Result<std::vector<std::string>> FlagSet::Parse(const std::vector<std::string>& args,
                                                bool stop_at_first_positional) {
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      positional.insert(positional.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      if (stop_at_first_positional) {
        positional.insert(positional.end(), args.begin() + static_cast<long>(i), args.end());
        break;
      }
      positional.push_back(arg);
      continue;
    }
    std::string name;
    std::string value;
    bool has_value = false;
    if (arg[1] == '-') {
      std::string body = arg.substr(2);
      auto eq = body.find('=');
      name = body.substr(0, eq);
      if (eq != std::string::npos) {
        value = body.substr(eq + 1);
        has_value = true;
      }
    } else {
      // A shorthand: -v, -v=3, -v 3 (pflag also takes -v3).
      auto it = shorthands_.find(arg[1]);
      if (it == shorthands_.end())
        return Invalid("unknown shorthand flag: '" + arg.substr(1, 1) + "' in " + arg);
      name = it->second;
      if (arg.size() > 2) {
        value = arg.substr(arg[2] == '=' ? 3 : 2);
        has_value = true;
      }
    }
    auto flag = flags_.find(name);
    if (flag == flags_.end()) return Invalid("unknown flag: --" + name);
    if (!has_value) {
      if (flag->second.is_bool) {
        value = "true";
      } else if (flag->second.optional_value) {
        value = flag->second.bare_value;
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return Invalid("flag needs an argument: --" + name);
      }
    }
    if (auto set = flag->second.set(value); !set) {
      return Invalid("invalid argument \"" + value + "\" for \"--" + name +
                     "\" flag: " + set.error().message);
    }
    changed_[name] = true;
  }
  return positional;
}

}  // namespace berth::runner
