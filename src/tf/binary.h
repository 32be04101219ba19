// Choosing the TF binary a run uses: tofu or terraform, found on PATH or named outright.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "core/error.h"

namespace berth::tf {

struct Binary {
  std::string name;  // "tofu" or "terraform"
  std::filesystem::path path;
};

// choice is auto (prefers tofu), tofu or terraform. explicit_path, when set, wins; its name is
// the choice, or guessed from the file name under auto. search_path is a PATH value.
Result<Binary> ChooseBinary(std::string_view choice, const std::string& explicit_path,
                            std::string_view search_path);

}  // namespace berth::tf
