// What `runner version` reports: filled in by the build (apps/runner/CMakeLists.txt).
#pragma once

#include <string>

namespace berth::runner {

struct BuildInfo {
  std::string version;
  std::string git_commit;
  std::string build_date;
  std::string compiler;
};

const BuildInfo& GetBuildInfo();
std::string BuildInfoJson();

}  // namespace berth::runner
