// PATH lookup without a shell.
#include "tf/binary.h"

#include <unistd.h>

#include <string>

#include "core/decimal.h"

namespace berth::tf {
namespace {

std::filesystem::path FindOnPath(std::string_view name, std::string_view search_path) {
  size_t start = 0;
  while (start <= search_path.size()) {
    size_t end = search_path.find(':', start);
    if (end == std::string_view::npos) end = search_path.size();
    std::string_view dir = search_path.substr(start, end - start);
    if (!dir.empty()) {
      std::filesystem::path candidate = std::filesystem::path(dir) / name;
      if (access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) {
        return candidate;
      }
    }
    start = end + 1;
  }
  return {};
}

}  // namespace

Result<Binary> ChooseBinary(std::string_view choice, const std::string& explicit_path,
                            std::string_view search_path) {
  if (choice != "auto" && choice != "tofu" && choice != "terraform") {
    return MakeError(
        ErrorKind::kInvalidArgument,
        "--binary: must be auto, tofu or terraform, not \"" + std::string(choice) + "\"");
  }
  if (!explicit_path.empty()) {
    if (access(explicit_path.c_str(), X_OK) != 0) {
      return MakeError(ErrorKind::kFailedPrecondition, "--bin: not an executable file",
                       explicit_path);
    }
    std::string name(choice);
    if (choice == "auto") {
      name = std::filesystem::path(explicit_path).filename().string().starts_with("terraform")
                 ? "terraform"
                 : "tofu";
    }
    return Binary{name, explicit_path};
  }
  for (std::string_view name : {"tofu", "terraform"}) {
    if (choice != "auto" && choice != name) continue;
    auto found = FindOnPath(name, search_path);
    if (!found.empty()) return Binary{std::string(name), found};
  }
  return MakeError(ErrorKind::kFailedPrecondition,
                   choice == "auto" ? std::string("neither tofu nor terraform is on PATH")
                                    : std::string(choice) + " is not on PATH",
                   std::string(search_path));
}

bool WritesJsonInto(const Binary& binary, std::string_view version) {
  if (binary.name != "tofu") return false;
  // MAJOR.MINOR[.PATCH[-PRE]]: the first two numbers decide.
  const size_t first_dot = version.find('.');
  if (first_dot == std::string_view::npos) return false;
  const size_t second_dot = version.find('.', first_dot + 1);
  auto major = ParseDecimal<int>(version.substr(0, first_dot));
  // With no second dot the length is past the end, which substr clamps.
  auto minor = ParseDecimal<int>(version.substr(first_dot + 1, second_dot - first_dot - 1));
  if (!major || !minor) return false;
  return *major > 1 || (*major == 1 && *minor >= 12);
}

}  // namespace berth::tf
