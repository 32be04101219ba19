// Taking a run's fetched provider packages into its runner's shared cache: what a package
// holds is copied read-only under the hash of the copy; what a hostile run leaves (links, a
// FIFO, a linked package, too much) is not taken, and nothing it points at is read.
#include "launch/local/provider_harvest.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "crypto/digest.h"
#include "sys/files.h"
#include "tf/provider_packages.h"

namespace berth::launch {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSecret = "the-secret-berthd-keeps";
constexpr const char* kEnv = "web/dev";  // the environment whose runs these are

class ProviderHarvest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("provider-harvest");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    ASSERT_TRUE(sys::WriteFileAtomic(Secret(), kSecret));
  }

  fs::path RunCache() const { return dir_->Path() / "run-cache"; }
  fs::path Shared() const { return dir_->Path() / "shared"; }
  fs::path Secret() const { return dir_->Path() / "secret"; }

  static tf::LockedProvider Provider(const std::string& type) {
    return {.host = "registry.opentofu.org", .ns = "berth", .type = type, .version = "1.0.0"};
  }
  fs::path Package(const std::string& type, std::string_view platform = tf::ThisPlatform()) {
    return RunCache() / "registry.opentofu.org/berth" / type / "1.0.0" / std::string(platform);
  }
  void Write(const fs::path& path, const std::string& content, fs::perms perms) {
    fs::create_directories(path.parent_path());
    ASSERT_TRUE(sys::WriteFileAtomic(path, content));
    fs::permissions(path, perms);
  }
  // A plain package: its executable, a licence, a file in a folder.
  fs::path PlainPackage(const std::string& type, const std::string& binary = "binary") {
    fs::path package = Package(type);
    Write(package / ("terraform-provider-" + type), binary, fs::perms(0755));
    Write(package / "LICENSE", "licence", fs::perms(0644));
    Write(package / "docs/README", "read me", fs::perms(0600));
    return package;
  }
  // The h1 of a package's regular files, as tofu computes it.
  static std::string H1Of(const fs::path& package) {
    tf::PackageHasher hasher;
    for (const auto& entry : fs::recursive_directory_iterator(package)) {
      if (entry.is_symlink() || !entry.is_regular_file()) continue;
      hasher.AddFile(entry.path().lexically_relative(package).generic_string(),
                     crypto::Sha256Hex(*sys::ReadFile(entry.path())));
    }
    return hasher.Finish();
  }
  fs::path Kept(const std::string& type, const std::string& h1) {
    return tf::SharedPackagePath(Shared(), Provider(type), tf::ThisPlatform(), h1);
  }

  std::optional<sys::TempDir> dir_;
};

TEST_F(ProviderHarvest, APackageIsCopiedReadOnlyUnderItsHashAndOnlyOnce) {
  const std::string h1 = H1Of(PlainPackage("good"));
  // tofu's install lock beside the package is no package.
  Write(Package("good").parent_path() / "linux_amd64.lock", "", fs::perms(0644));
  HarvestCounts counts = HarvestProviders(RunCache(), Shared(), kEnv);
  EXPECT_EQ(counts.taken, 1);
  EXPECT_EQ(counts.refused, 0);
  const fs::path kept = Kept("good", h1);
  ASSERT_TRUE(fs::is_directory(kept)) << kept;
  EXPECT_EQ(H1Of(kept), h1);
  EXPECT_EQ(*sys::ReadFile(kept / "docs/README"), "read me");
  EXPECT_EQ(fs::status(kept / "terraform-provider-good").permissions(), fs::perms(0555));
  EXPECT_EQ(fs::status(kept / "LICENSE").permissions(), fs::perms(0444));
  EXPECT_EQ(fs::status(kept / "docs/README").permissions(), fs::perms(0444));
  EXPECT_FALSE(fs::exists(Shared() / ".incoming"));

  counts = HarvestProviders(RunCache(), Shared(), kEnv);
  EXPECT_EQ(counts.taken, 0);
  EXPECT_EQ(counts.known, 1);
}

TEST_F(ProviderHarvest, WhatAHostileRunLeavesIsNotTakenAndNothingItPointsAtIsRead) {
  fs::path hostile = Package("hostile");
  Write(hostile / "terraform-provider-hostile", "#!/bin/sh\necho evil\n", fs::perms(0755));
  fs::create_symlink(Secret(), hostile / "stolen");
  fs::create_directories(dir_->Path() / "secrets");
  ASSERT_TRUE(sys::WriteFileAtomic(dir_->Path() / "secrets/key", kSecret));
  fs::create_directory_symlink(dir_->Path() / "secrets", hostile / "folder");
  ASSERT_EQ(mkfifo((hostile / "pipe").c_str(), 0644), 0);  // read, it would block for ever
  // A package that is a link, one for another platform, names no package path may have.
  fs::create_directories(Package("linked").parent_path());
  fs::create_directory_symlink(dir_->Path() / "secrets", Package("linked"));
  PlainPackage("other");
  fs::rename(Package("other"), Package("other", "darwin_arm64"));
  fs::create_directories(RunCache() / "registry.opentofu.org/berth/-dash/1.0.0");
  fs::create_directory_symlink(Package("good").parent_path().parent_path().parent_path(),
                               RunCache() / "registry.opentofu.org/berth/loop");

  HarvestCounts counts = HarvestProviders(RunCache(), Shared(), kEnv);
  EXPECT_EQ(counts.taken, 1);
  // Kept under the hash of what was copied: the executable alone.
  fs::remove(hostile / "stolen");
  fs::remove(hostile / "folder");
  fs::remove(hostile / "pipe");
  const fs::path kept = Kept("hostile", H1Of(hostile));
  ASSERT_TRUE(fs::is_directory(kept));
  std::vector<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(Shared())) {
    names.push_back(entry.path().lexically_relative(Shared()).generic_string());
    if (entry.is_regular_file()) {
      EXPECT_EQ(sys::ReadFile(entry.path())->find(kSecret), std::string::npos) << entry.path();
    }
  }
  for (const std::string& name : names) {
    EXPECT_EQ(name.find("linked"), std::string::npos) << name;
    EXPECT_EQ(name.find("darwin"), std::string::npos) << name;
    EXPECT_EQ(name.find("dash"), std::string::npos) << name;
    EXPECT_EQ(name.find("loop"), std::string::npos) << name;
    EXPECT_EQ(name.find("stolen"), std::string::npos) << name;
    EXPECT_EQ(name.find("pipe"), std::string::npos) << name;
  }
}

TEST_F(ProviderHarvest, WhatIsBeyondALimitIsRefusedAndNothingOfItKept) {
  PlainPackage("a");
  PlainPackage("b");
  EXPECT_EQ(HarvestProviders(RunCache(), Shared(), kEnv, {.packages = 1}).refused, 1);
  fs::remove_all(Shared());
  EXPECT_EQ(HarvestProviders(RunCache(), Shared(), kEnv, {.files = 2}).refused, 2);
  EXPECT_EQ(HarvestProviders(RunCache(), Shared(), kEnv, {.package_bytes = 10}).refused, 2);
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(Shared(), ec))
    EXPECT_FALSE(entry.is_regular_file()) << entry.path();
  // Each package alone is within package_bytes; the second is beyond what one harvest reads
  // (the first is read twice: hashed, then copied).
  fs::remove_all(Shared());
  HarvestCounts counts = HarvestProviders(RunCache(), Shared(), kEnv, {.run_bytes = 50});
  EXPECT_EQ(counts.taken, 1);
  EXPECT_EQ(counts.refused, 1);
}

TEST_F(ProviderHarvest, AFolderOfTooManyEntriesIsNeitherHeldNorTaken) {
  // Past 10000 entries in one folder, berthd stops listing: a run could make millions.
  const fs::path crowded = PlainPackage("crowded");
  for (int i = 0; i < 10001; ++i) fs::create_directory(crowded / ("d" + std::to_string(i)));
  const std::string h1 = H1Of(PlainPackage("fine"));
  HarvestCounts counts = HarvestProviders(RunCache(), Shared(), kEnv);
  EXPECT_EQ(counts.refused, 1);
  EXPECT_EQ(counts.taken, 1);
  EXPECT_TRUE(fs::exists(Kept("fine", h1)));
  fs::remove_all(Shared());
  for (int i = 0; i < 10001; ++i)
    fs::create_directory(RunCache() / "registry.opentofu.org" / ("host" + std::to_string(i)));
  counts = HarvestProviders(RunCache(), Shared(), kEnv);
  EXPECT_EQ(counts.taken + counts.known + counts.refused, 0);
}

TEST_F(ProviderHarvest, BeyondItsSizeTheCacheLetsThePackagesTakenLongestAgoGo) {
  const std::string old_h1 = H1Of(PlainPackage("old"));
  HarvestProviders(RunCache(), Shared(), kEnv);
  fs::last_write_time(Kept("old", old_h1),
                      fs::last_write_time(Kept("old", old_h1)) - std::chrono::hours(24));
  fs::remove_all(RunCache());
  const std::string new_h1 = H1Of(PlainPackage("new", "a newer binary"));
  // Room for one: the old package goes, the one just taken stays.
  HarvestCounts counts = HarvestProviders(RunCache(), Shared(), kEnv, {.cache_bytes = 30});
  EXPECT_EQ(counts.taken, 1);
  EXPECT_FALSE(fs::exists(Kept("old", old_h1)));
  EXPECT_TRUE(fs::exists(Kept("new", new_h1)));
}

// A run that fetches heaps of junk cannot push out of the cache what other environments use:
// what they used (fetched, or borrowed: the links in their runs' caches) within the window
// stays, and the junk goes instead; what its own environment used, or nobody did for longer
// than the window, makes room.
TEST_F(ProviderHarvest, ARunsJunkCannotPushOutWhatOtherEnvironmentsUse) {
  const std::string pinned_h1 = H1Of(PlainPackage("pinned"));
  ASSERT_EQ(HarvestProviders(RunCache(), Shared(), "web/prod").taken, 1);
  fs::remove_all(RunCache());
  const std::string lent_h1 = H1Of(PlainPackage("lent", "lent binary"));
  ASSERT_EQ(HarvestProviders(RunCache(), Shared(), "web/dev").taken, 1);
  fs::remove_all(RunCache());
  // Another environment's run borrows "lent": its cache holds a link to the shared package.
  fs::create_directories(Package("lent").parent_path());
  fs::create_directory_symlink(Kept("lent", lent_h1), Package("lent"));
  // A forged link (outside the cache, or not a package) records nothing.
  fs::create_directories(Package("forged").parent_path());
  fs::create_directory_symlink(Secret().parent_path(), Package("forged"));
  EXPECT_EQ(HarvestProviders(RunCache(), Shared(), "web/stage").taken, 0);
  fs::remove_all(RunCache());
  // Both older than the junk run's packages, and the cache room for one only.
  for (const fs::path& kept : {Kept("pinned", pinned_h1), Kept("lent", lent_h1)})
    fs::last_write_time(kept, fs::last_write_time(kept) - std::chrono::hours(24));

  const std::string junk_h1 = H1Of(PlainPackage("junk", "junk binary"));
  HarvestCounts counts =
      HarvestProviders(RunCache(), Shared(), "attacker/env", {.cache_bytes = 30});
  EXPECT_EQ(counts.taken, 0);
  EXPECT_EQ(counts.refused, 1) << "no room for the junk";
  EXPECT_TRUE(fs::exists(Kept("pinned", pinned_h1)));
  EXPECT_TRUE(fs::exists(Kept("lent", lent_h1))) << "web/stage borrowed it";
  EXPECT_FALSE(fs::exists(Kept("junk", junk_h1)));
  fs::remove_all(RunCache());

  // web/prod's own new package makes room by what only it used ("pinned", 20 bytes), not by
  // what web/dev and web/stage used ("lent", 25): room for two.
  const std::string next_h1 = H1Of(PlainPackage("next", "next binary"));
  counts = HarvestProviders(RunCache(), Shared(), "web/prod", {.cache_bytes = 50});
  EXPECT_EQ(counts.taken, 1);
  EXPECT_FALSE(fs::exists(Kept("pinned", pinned_h1)));
  EXPECT_TRUE(fs::exists(Kept("lent", lent_h1)));
  EXPECT_TRUE(fs::exists(Kept("next", next_h1)));
  fs::remove_all(RunCache());

  // Past the window nobody holds a package: the junk makes room then.
  PlainPackage("junk", "junk binary");
  counts = HarvestProviders(RunCache(), Shared(), "attacker/env",
                            {.cache_bytes = 30, .protected_for = std::chrono::seconds(0)});
  EXPECT_EQ(counts.taken, 1);
  EXPECT_TRUE(fs::exists(Kept("junk", junk_h1)));
  EXPECT_FALSE(fs::exists(Kept("lent", lent_h1)));
}

TEST_F(ProviderHarvest, TheHarvesterTakesWhatIsQueuedOnAThreadOfItsOwnAndStopsWithPendingWork) {
  const std::string h1 = H1Of(PlainPackage("good"));
  std::atomic<int> taken{0}, harvests{0};
  {
    ProviderHarvester harvester({}, [&](const HarvestCounts& counts) {
      taken += counts.taken;
      ++harvests;
    });
    harvester.Enqueue(RunCache(), Shared(), kEnv);
    for (int i = 0; i < 200 && harvests == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(taken, 1);
    EXPECT_TRUE(fs::exists(Kept("good", h1)));
    // Queued work left when it stops is dropped, not waited for.
    for (int i = 0; i < 100; ++i) harvester.Enqueue(RunCache(), Shared(), kEnv);
  }
  EXPECT_TRUE(fs::exists(Kept("good", h1)));
}

}  // namespace
}  // namespace berth::launch
