// A real berthd on its embedded SQLite (the `berth up` default), in the middle of a run: its
// database locked by another process for longer than berthd's busy timeout
// (testenv::SqliteFaults), or the disk under it full for a while. The run's log, state and
// result wait and then arrive, nothing is lost or applied twice, and berthd serves as before.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "berthd_process.h"
#include "sqlite_faults.h"
#include "sys/files.h"
#include "test_tools.h"

namespace berth::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(SqliteFaultsE2e, AWriteLockHeldPastTheBusyTimeoutStallsARunThatThenEndsWithNothingLost) {
  auto dir = sys::TempDir::Create("sqlite-faults");
  ASSERT_TRUE(dir);
  BerthdProcess berthd(dir->Path(), "data");
  ASSERT_TRUE(berthd.Start({"--rate-limit=0"}));
  auto http = net::MakeCurlHttpClient();
  BerthdClient api{berthd.Url(), berthd.AdminToken(), http.get()};
  api.CreateWebDev({{"type", "local"}});
  if (::testing::Test::HasFailure()) return;
  auto faults = testenv::SqliteFaults::Open(berthd.DataDir() / "berth.db");
  ASSERT_TRUE(faults) << faults.error().ToString();

  std::string id = api.Deploy(testenv::SourceDir() / "examples/slow",
                              {{"op", "apply"}, {"variables", {{"seconds", 4}}}});
  ASSERT_TRUE(api.WaitForLog(id, "berth-slow-started")) << api.Log(id);
  // Longer than berthd's 5-second busy timeout: its writes fail as busy, and are made again.
  ASSERT_TRUE(faults->HoldWriteLock());
  std::this_thread::sleep_for(std::chrono::seconds(8));
  ASSERT_TRUE(faults->ReleaseWriteLock());

  json done = api.WaitFor(id, {"succeeded", "failed", "cancelled"});
  std::string log = api.Log(id);
  ASSERT_EQ(done["state"], "succeeded") << done.dump(2) << log;
  EXPECT_EQ(Occurrences(log, "Apply complete!"), 1) << log;
  EXPECT_EQ(Occurrences(log, "(local-exec): berth-slow-started"), 1) << log;
  auto versions = json::parse(api.Call("GET", "/projects/web/envs/dev/state/versions").body);
  EXPECT_EQ(versions["items"].size(), 1u) << versions.dump(2);
  auto state = json::parse(api.Call("GET", "/projects/web/envs/dev/state").body);
  EXPECT_TRUE(state["lock"].is_null()) << state.dump(2);
  // And berthd goes on as before.
  std::string next = api.Deploy(testenv::SourceDir() / "examples/slow",
                                {{"op", "apply"}, {"variables", {{"seconds", 0}}}});
  EXPECT_EQ(api.WaitFor(next, {"succeeded", "failed", "cancelled"})["state"], "succeeded")
      << api.Log(next);
  EXPECT_EQ(berthd.Stop(), 0);
  // The fault did reach berthd: its own loops found the database locked, and said so.
  std::string berthd_log = sys::ReadFile(berthd.LogPath(1)).value();
  EXPECT_NE(berthd_log.find("database is locked"), std::string::npos) << berthd_log;
}

// The disk under berthd's data folder (a tmpfs of this test's own mount namespace) fills up
// while a run prints; the run's work folder is elsewhere, as a runner's work_dir may put it.
TEST(SqliteFaultsE2e, ADiskFullUnderTheDatabaseLosesNoLogLineOnceThereIsRoomAgain) {
  ASSERT_EQ(unshare(CLONE_NEWNS), 0) << std::strerror(errno);
  ASSERT_EQ(mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0) << std::strerror(errno);
  auto dir = sys::TempDir::Create("sqlite-disk-full");
  ASSERT_TRUE(dir);
  const fs::path data = dir->Path() / "data";
  fs::create_directories(data);
  ASSERT_EQ(mount("tmpfs", data.c_str(), "tmpfs", 0, "size=32m,mode=0755"), 0)
      << std::strerror(errno);
  BerthdProcess berthd(dir->Path(), "data");
  ASSERT_TRUE(berthd.Start({"--rate-limit=0"}));
  auto http = net::MakeCurlHttpClient();
  BerthdClient api{berthd.Url(), berthd.AdminToken(), http.get()};
  fs::create_directories(dir->Path() / "runs");
  api.CreateWebDev({{"type", "local"}, {"work_dir", (dir->Path() / "runs").string()}});
  if (::testing::Test::HasFailure()) return;
  fs::path module =
      LocalExecModule(dir->Path(), "for i in $(seq 1 60); do echo berth-line-$i; sleep 0.1; done");

  std::string id = api.Deploy(module, {{"op", "apply"}});
  ASSERT_TRUE(api.WaitForLog(id, "berth-line-1")) << api.Log(id);
  {
    // Every byte the disk has left goes to one file, for a while.
    std::ofstream filler(data / "filler", std::ios::binary);
    const std::string block(1 << 16, 'x');
    while (filler.write(block.data(), static_cast<std::streamsize>(block.size()))) {
    }
    filler.close();
    std::this_thread::sleep_for(std::chrono::seconds(3));
    fs::remove(data / "filler");
  }

  json done = api.WaitFor(id, {"succeeded", "failed", "cancelled"});
  std::string log = api.Log(id);
  ASSERT_EQ(done["state"], "succeeded") << done.dump(2) << log;
  for (int i = 1; i <= 60; ++i)
    EXPECT_EQ(Occurrences(log, "(local-exec): berth-line-" + std::to_string(i) + "\n"), 1)
        << "line " << i << "\n"
        << log;
  EXPECT_EQ(Occurrences(log, "Apply complete!"), 1) << log;
  EXPECT_EQ(berthd.Stop(), 0);
  std::string berthd_log = sys::ReadFile(berthd.LogPath(1)).value();
  EXPECT_NE(berthd_log.find("full"), std::string::npos) << berthd_log;
  EXPECT_EQ(umount(data.c_str()), 0) << std::strerror(errno);
}

}  // namespace
}  // namespace berth::server
