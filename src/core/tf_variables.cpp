#include "core/tf_variables.h"

#include <array>

namespace berth {

std::optional<std::string> ReservedTfVariable(std::string_view name) {
  struct Reserved {
    std::string_view name;
    bool prefix;  // every name that starts with name
    std::string_view why;
  };
  static constexpr std::array kReserved = {
      Reserved{"TF_DATA_DIR", false, "the runner keeps TF's data in the run's work folder"},
      Reserved{"TF_WORKSPACE", false, "one state per environment: berth uses no workspaces"},
      Reserved{"TF_IN_AUTOMATION", false, "the runner sets it"},
      Reserved{"TF_INPUT", false, "runs never ask for input"},
      Reserved{"TF_CLI_ARGS", false, "it would change the commands the runner runs"},
      Reserved{"TF_CLI_ARGS_", true, "it would change the commands the runner runs"},
      Reserved{"TF_HTTP_", true, "berth's state backend is the runner's to configure"},
      Reserved{"TF_ENCRYPTION", false, "berth's state encryption is the runner's to configure"},
      Reserved{"TF_LOG_PATH", false,
               "a log file berth would not mask: TF_LOG goes to the run's log"},
      Reserved{"TF_REATTACH_PROVIDERS", false, "providers run by the runner's TF only"},
  };
  for (const Reserved& reserved : kReserved) {
    if (reserved.prefix ? name.starts_with(reserved.name) : name == reserved.name)
      return std::string(name) + " is berth's own: " + std::string(reserved.why);
  }
  return std::nullopt;
}

}  // namespace berth
