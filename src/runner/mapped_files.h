// --file-mapping: files copied into the home folder or the folder TF runs in before TF starts
// (berth-controller's spec.fileMappings: credentials files from Secrets).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "runner/options.h"
#include "sys/fd.h"

namespace berth::runner {

// The files a run mapped into the home folder, removed when this goes (the run's end): a
// kept runner Pod serves its next run with only that run's mappings, and a credential lives no
// longer than the run that needed it. The work folder is emptied by the next run anyway.
class MappedHomeFiles {
 public:
  MappedHomeFiles() = default;
  MappedHomeFiles(MappedHomeFiles&&) = default;
  MappedHomeFiles& operator=(MappedHomeFiles&&) = delete;
  ~MappedHomeFiles();

  // name in the folder dir is open on (reached without following a link).
  void Add(sys::Fd dir, std::string name) { placed_.emplace_back(std::move(dir), std::move(name)); }

 private:
  std::vector<std::pair<sys::Fd, std::string>> placed_;
};

// Copies each mapping's file to its path (mode 0600; missing folders made 0700). The module is
// hostile: no part of the way is followed if it is a symbolic link, so a link in the module
// cannot send a credential elsewhere. Errors name the mapping.
Result<MappedHomeFiles> PlaceMappedFiles(const std::vector<FileMapping>& mappings,
                                         const std::filesystem::path& home,
                                         const std::filesystem::path& workspace);

}  // namespace berth::runner
