// Copy through a temporary sibling and rename.
#include "runner/copy_self.h"

#include <sys/stat.h>

#include "sys/files.h"

namespace berth::runner {

Result<void> CopySelf(const std::filesystem::path& dest) {
  auto self = sys::ReadFile("/proc/self/exe");
  if (!self) return self.error();
  namespace fs = std::filesystem;
  return sys::WriteFileAtomic(dest, *self,
                              fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
}

}  // namespace berth::runner
