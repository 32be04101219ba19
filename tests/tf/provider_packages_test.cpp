// Lock files, package hashes and the shared cache's layout: what tofu writes is read, and a
// hostile lock file names no folder outside the shared cache.
#include "tf/provider_packages.h"

#include <gtest/gtest.h>

#include "core/base64.h"
#include "crypto/digest.h"

namespace berth::tf {
namespace {

constexpr const char* kH1 = "h1:6Vu9uT8mi6sJqh7sB2gvlPEjm3lnV2v1Yl3j0YdlCWs=";
constexpr const char* kOtherH1 = "h1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

TEST(LockFile, TheProvidersTofuWritesAreReadWithTheirH1HashesOnly) {
  auto providers =
      ParseLockFile(std::string(R"(# This file is maintained automatically by "tofu init".
# Manual edits may be lost in future updates.

provider "registry.opentofu.org/berth/berthtest" {
  version     = "0.1.0"
  constraints = "0.1.0"
  hashes = [
    ")") + kH1 + R"(",
    ")" + kOtherH1 + R"(",
    "zh:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
  ]
}

provider "registry.opentofu.org/hashicorp/aws" {
  version = "5.0.0+ent"
  hashes  = []
}
)");
  ASSERT_EQ(providers.size(), 2u);
  EXPECT_EQ(providers[0].host, "registry.opentofu.org");
  EXPECT_EQ(providers[0].ns, "berth");
  EXPECT_EQ(providers[0].type, "berthtest");
  EXPECT_EQ(providers[0].version, "0.1.0");
  EXPECT_EQ(providers[0].h1_hashes, (std::vector<std::string>{kH1, kOtherH1}));
  EXPECT_EQ(providers[1].version, "5.0.0+ent");
  EXPECT_TRUE(providers[1].h1_hashes.empty());
}

TEST(LockFile, AHostileOneNamesNoFolderOutsideTheCache) {
  const std::string hostile = std::string(R"(
provider "registry.opentofu.org/../../etc" { version = "1.0.0" hashes = [")") +
                              kH1 + R"("] }
provider "../x/y" { version = "1.0.0" }
provider "a/b/c/d" { version = "1.0.0" }
provider "a/b/.hidden" { version = "1.0.0" }
provider "a/b/c" { version = "../../.." hashes = [")" +
                              kH1 + R"("] }
provider "a/b/c" { version = "1.0.0/x" }
provider "a/b/c" { version = "1.0.0" hashes = ["h1:c2hvcnQ=", "h1:!!!", "h1:)" +
                              kH1 + R"(\n"] }
provider "a/b/c" { version = "2.0.0" hashes = [")" +
                              kH1 +
                              R"("
provider "unterminated {
)";
  auto providers = ParseLockFile(hostile);
  // Only the a/b/c blocks with a plain version stand; none of their bad hashes is kept.
  ASSERT_EQ(providers.size(), 2u);
  EXPECT_EQ(providers[0].version, "1.0.0");
  EXPECT_TRUE(providers[0].h1_hashes.empty());
  EXPECT_EQ(providers[1].version, "2.0.0");
  const std::filesystem::path shared = "/shared";
  for (const LockedProvider& p : providers) {
    for (const std::string& h1 : p.h1_hashes) {
      auto path = SharedPackagePath(shared, p, ThisPlatform(), h1).lexically_normal();
      EXPECT_EQ(path.string().rfind("/shared/a/b/c/", 0), 0u) << path;
    }
  }
  EXPECT_TRUE(SharedPackagePath(shared, providers[0], ThisPlatform(), "h1:c2hvcnQ=").empty());
  EXPECT_TRUE(SharedPackagePath(shared, providers[0], ThisPlatform(), "zh:00").empty());
}

TEST(LockFile, OnlyItsFirstMebibyteIsRead) {
  std::string text = "provider \"a/b/c\" {\n version = \"1.0.0\"\n}\n";
  text += std::string(kMaxLockFileBytes, '\n');
  text += "provider \"a/b/d\" {\n version = \"1.0.0\"\n}\n";
  auto providers = ParseLockFile(text);
  ASSERT_EQ(providers.size(), 1u);
  EXPECT_EQ(providers[0].type, "c");
}

TEST(PackageHash, IsDirhashHash1OfTheFilesInByteOrder) {
  const std::string a = crypto::Sha256Hex("a"), b = crypto::Sha256Hex("b");
  PackageHasher hasher;
  hasher.AddFile("sub/b", b);
  hasher.AddFile("a", a);
  // dirhash.Hash1: SHA-256 over "HEX  PATH\n" lines sorted by path, base64 encoded.
  EXPECT_EQ(hasher.Finish(),
            "h1:" + Base64Encode(crypto::Sha256Bytes(a + "  a\n" + b + "  sub/b\n")));
  PackageHasher renamed;
  renamed.AddFile("a", a);
  renamed.AddFile("sub/c", b);
  EXPECT_NE(hasher.Finish(), renamed.Finish());
}

TEST(PackagePath, AHashIsKeptUnderItsHexDigits) {
  LockedProvider p{.host = "h", .ns = "n", .type = "t", .version = "1.0.0"};
  EXPECT_EQ(SharedPackagePath("/s", p, "linux_amd64", kOtherH1),
            "/s/h/n/t/1.0.0/linux_amd64/"
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
}

}  // namespace
}  // namespace berth::tf
