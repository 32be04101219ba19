// A real berthd on its embedded SQLite (the `berth up` default) whose database another process
// locks for longer than berthd's busy timeout (testenv::SqliteFaults), in the middle of a run:
// the run's log, state and result wait and then arrive, nothing is lost or applied twice, and
// berthd serves as before.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "berthd_process.h"
#include "sqlite_faults.h"
#include "sys/files.h"
#include "test_tools.h"

namespace berth::server {
namespace {

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

}  // namespace
}  // namespace berth::server
