// Reads the tool locations once; a variable set by the caller wins over the cached file.
#include "test_tools.h"

#include <cstdlib>
#include <map>
#include <sstream>

#include "sys/files.h"

namespace berth::testenv {
namespace {

std::filesystem::path EnvFilePath() {
  if (const char* cache = std::getenv("BERTH_CACHE"); cache && *cache) {
    return std::filesystem::path(cache) / "testenv/env.sh";
  }
  std::filesystem::path base;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    base = xdg;
  } else {
    const char* home = std::getenv("HOME");
    base = std::filesystem::path(home ? home : "/root") / ".cache";
  }
  return base / "berth/testenv/env.sh";
}

// Lines of the form `export NAME=VALUE`; anything else is a comment.
std::map<std::string, std::string> ReadEnvFile() {
  std::map<std::string, std::string> values;
  auto content = sys::ReadFile(EnvFilePath());
  if (!content) return values;
  std::istringstream lines(*content);
  std::string line;
  while (std::getline(lines, line)) {
    constexpr std::string_view kExport = "export ";
    if (!line.starts_with(kExport)) continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    values[line.substr(kExport.size(), eq - kExport.size())] = line.substr(eq + 1);
  }
  return values;
}

}  // namespace

Result<std::filesystem::path> TestTool(std::string_view variable) {
  std::string name(variable);
  std::string value;
  if (const char* set = std::getenv(name.c_str()); set && *set) {
    value = set;
  } else {
    static const auto kCached = ReadEnvFile();
    if (auto it = kCached.find(name); it != kCached.end()) value = it->second;
  }
  if (value.empty()) {
    return MakeError(ErrorKind::kFailedPrecondition, name + " is not set and " +
                                                         EnvFilePath().string() +
                                                         " does not name it: run scripts/testenv");
  }
  std::error_code ec;
  if (!std::filesystem::exists(value, ec)) {
    return MakeError(ErrorKind::kFailedPrecondition,
                     name + " names a path that does not exist: run scripts/testenv", value);
  }
  return std::filesystem::path(value);
}

std::filesystem::path SourceDir() { return BERTH_SOURCE_DIR; }

}  // namespace berth::testenv
