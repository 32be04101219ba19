// Build information from the compile definitions the build sets.
#include "runner/build_info.h"

#include <nlohmann/json.hpp>

namespace berth::runner {

const BuildInfo& GetBuildInfo() {
  static const BuildInfo kInfo{BERTH_VERSION, BERTH_GIT_COMMIT, BERTH_BUILD_DATE,
                               std::string("gcc ") + __VERSION__};
  return kInfo;
}

std::string BuildInfoJson() {
  const auto& b = GetBuildInfo();
  return nlohmann::json{{"name", "runner"},
                        {"version", b.version},
                        {"gitCommit", b.git_commit},
                        {"buildDate", b.build_date},
                        {"compiler", b.compiler}}
      .dump();
}

}  // namespace berth::runner
