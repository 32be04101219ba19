// What berth needs to know of TF's provider packages to share them between runs safely: the
// providers and content hashes a dependency lock file (.terraform.lock.hcl) pins, tofu's "h1:"
// hash of an unpacked package, and where a runner's shared cache keeps a package by that hash.
// A package is only ever lent to a run whose own lock file lists its hash, which is tofu's own
// rule for its plugin cache: a package one run put in the cache can serve no other module.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace berth::tf {

struct LockedProvider {
  std::string host, ns, type;  // registry.opentofu.org, hashicorp, aws
  std::string version;
  std::vector<std::string> h1_hashes;  // "h1:..." only: the hash of an unpacked package
};

// The providers a lock file pins, with their h1 hashes; what it cannot read is left out (a
// provider without a version, an address or version that cannot be a folder name, a hash that
// is not 32 bytes of base64). Reads at most the first kMaxLockFileBytes.
inline constexpr size_t kMaxLockFileBytes = size_t{1} << 20;
std::vector<LockedProvider> ParseLockFile(std::string_view text);

// tofu's "h1:" hash of an unpacked package (golang.org/x/mod's dirhash.Hash1): SHA-256 over
// one "HEX  PATH\n" line per file, in byte order of the paths, base64 encoded.
class PackageHasher {
 public:
  // path: relative, with '/' separators; sha256_hex: of the file's bytes.
  void AddFile(std::string path, std::string sha256_hex);
  std::string Finish() const;

 private:
  std::vector<std::pair<std::string, std::string>> files_;
};

// The platform packages are for on the machine this runs on: linux_amd64, linux_arm64.
std::string_view ThisPlatform();

// Where shared keeps the package with hash h1 (its "h1:..." text): shared/HOST/NS/TYPE/
// VERSION/PLATFORM/HEX, HEX the hash's 64 hex digits. Empty when h1 is not an h1 hash.
std::filesystem::path SharedPackagePath(const std::filesystem::path& shared,
                                        const LockedProvider& provider, std::string_view platform,
                                        std::string_view h1);

// Whether name can be one folder of that path: a letter or digit first, then letters, digits
// and . _ - + (a version's build), at most 255 bytes.
bool IsPackagePathPart(std::string_view name);

}  // namespace berth::tf
