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

// Whether tofu of this version (`version -json`'s "1.12.6") writes its machine-readable events
// to a file beside its human output (`-json-into=FILE`, OpenTofu 1.12). Terraform does not.
bool WritesJsonInto(const Binary& binary, std::string_view version);

}  // namespace berth::tf
