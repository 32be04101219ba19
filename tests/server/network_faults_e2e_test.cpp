// A real berthd whose runners reach it through a network that delays every piece and cuts
// connections mid-request and mid-answer (testenv::FaultyNetwork, at the advertised address):
// a deployment that waits for approval uploads its plan, the apply fetches and applies exactly
// that plan, every line of the log is there exactly once, and the apply ran once.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "berthd_process.h"
#include "faulty_network.h"
#include "sys/files.h"

namespace berth::server {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kLines = 20000;

TEST(NetworkFaultsE2e,
     AnApprovedDeploymentBehindACuttingDelayingNetworkLosesNothingAndAppliesOnce) {
  auto dir = sys::TempDir::Create("network-faults");
  ASSERT_TRUE(dir);
  BerthdProcess berthd(dir->Path(), "data");
  const int port = std::stoi(berthd.Url().substr(berthd.Url().rfind(':') + 1));
  auto network = testenv::FaultyNetwork::Start(
      port, {.delay = std::chrono::milliseconds(2), .cut_within_bytes = 4096, .seed = 20261202});
  ASSERT_TRUE(network) << network.error().ToString();
  ASSERT_TRUE(berthd.Start({"--rate-limit=0", "--advertise-url=" + (*network)->Url()}));
  auto http = net::MakeCurlHttpClient();
  BerthdClient api{berthd.Url(), berthd.AdminToken(), http.get()};
  api.CreateWebDev({{"type", "local"}});
  if (::testing::Test::HasFailure()) return;
  // A module whose apply prints numbered lines: each must be in the stored log once.
  fs::path module =
      LocalExecModule(dir->Path(), "seq 1 " + std::to_string(kLines) + " | sed 's/^/berth-line-/'");

  std::string id = api.Deploy(module, {{"op", "apply"}, {"approval", {{"required", true}}}});
  json waiting = api.WaitFor(id, {"waiting_approval", "failed"});
  ASSERT_EQ(waiting["state"], "waiting_approval") << waiting.dump(2) << api.Log(id);
  std::string hash = waiting["plan"]["hash"];
  auto approved =
      api.Call("POST", "/deployments/" + id + "/approve", json{{"plan_hash", hash}}.dump());
  ASSERT_EQ(approved.status, 202) << approved.body;
  json d = api.WaitFor(id, {"succeeded", "failed", "cancelled"});
  std::string log = api.Log(id);
  ASSERT_EQ(d["state"], "succeeded") << d.dump(2) << log;
  EXPECT_EQ(d["result"]["approved_plan"]["hash"], hash);

  std::map<int, int> seen;
  std::istringstream lines(log);
  const std::string marker = "(local-exec): berth-line-";
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find(marker);
    if (at != std::string::npos) ++seen[std::stoi(line.substr(at + marker.size()))];
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kLines));
  for (const auto& [n, times] : seen) EXPECT_EQ(times, 1) << "line " << n;
  EXPECT_EQ(Occurrences(log, "terraform_data.lines: Creation complete"), 1) << log;
  auto versions = json::parse(api.Call("GET", "/projects/web/envs/dev/state/versions").body);
  EXPECT_EQ(versions["items"].size(), 1u) << versions.dump(2);
  // The network did what it was set to do, both ways.
  EXPECT_GT((*network)->CutRequests(), 0) << (*network)->Connections() << " connections";
  EXPECT_GT((*network)->CutResponses(), 0) << (*network)->Connections() << " connections";
  std::cout << (*network)->Connections() << " connections, " << (*network)->CutRequests()
            << " cut in the request, " << (*network)->CutResponses() << " in the answer\n";
  EXPECT_EQ(berthd.Stop(), 0);
}

}  // namespace
}  // namespace berth::server
