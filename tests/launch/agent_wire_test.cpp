// What berthd and berth-agent send each other about a launch: the launch request as JSON (no
// token, no placement; strict on the way in) and the agent's report of a run's end, which can
// fail a run but never make one succeed.
#include <gtest/gtest.h>

#include "core/ed25519_key.h"
#include "launch/launch_request_json.h"
#include "launch/run_outcome.h"

namespace berth::launch {
namespace {

using nlohmann::json;

// A kubernetes-agent runner as saved: its agents' key, their namespace, its queue's expiry.
json AgentRunner() {
  return {{"type", "kubernetes-agent"},
          {"key", Ed25519PublicKeyPem(std::string(32, 'k'))},
          {"command_expiry", "5m"},
          {"job", {{"namespace", "b"}}}};
}

LaunchRequest Example() {
  LaunchRequest request{.run_id = "d-1",
                        .revision = "1",
                        .org_id = "acme",
                        .runner_id = "agent",
                        .token = "secret-run-token"};
  request.invocation = {.op = "apply",
                        .gateway = "https://berth.example.com",
                        .run_id = "d-1",
                        .inputs_hash = "sha256:ab",
                        .state_backend = "http",
                        .backend_config = {"address=https://berth.example.com/state/x"},
                        .lock = false,
                        .allow_destroy = true,
                        .ns = "placement-is-the-agents"};
  request.labels = {{"team", "web"}};
  request.runner = ParseRunnerSettings(RunnerType::kKubernetesAgent, AgentRunner()).value();
  return request;
}

TEST(LaunchRequestJson, RoundTripsWhatTheRunIsAndNeverItsTokenOrPlacement) {
  json doc = LaunchRequestToJson(Example());
  EXPECT_EQ(doc.dump().find("secret-run-token"), std::string::npos);
  EXPECT_EQ(doc.dump().find("placement-is-the-agents"), std::string::npos);
  auto back = LaunchRequestFromJson(doc);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(back->org_id, "acme");
  EXPECT_EQ(back->runner_id, "agent");
  EXPECT_EQ(back->invocation.Args(), [] {
    RunnerInvocation expected = Example().invocation;
    expected.ns.clear();
    return expected.Args();
  }());
  EXPECT_FALSE(back->invocation.lock) << "berthd holds the lock: the agent's runner must not wait";
  EXPECT_EQ(back->labels.at("team"), "web");
  const auto* agent = std::get_if<AgentRunnerSettings>(&back->runner);
  ASSERT_NE(agent, nullptr);
  EXPECT_EQ(agent->job.pod.ns, "b");
  EXPECT_EQ(agent->command_expiry, std::chrono::minutes(5));
}

TEST(LaunchRequestJson, RefusesWhatItDoesNotKnowOrCannotTrust) {
  json doc = LaunchRequestToJson(Example());
  auto refused = [](const json& bad, const std::string& why) {
    auto parsed = LaunchRequestFromJson(bad);
    ASSERT_FALSE(parsed) << bad.dump();
    EXPECT_NE(parsed.error().message.find(why), std::string::npos) << parsed.error().message;
  };
  json extra = doc;
  extra["invocation"]["workdir"] = "/etc";
  refused(extra, "request.invocation.workdir is not a field");
  json unknown = doc;
  unknown["privileged"] = true;
  refused(unknown, "request.privileged is not a field");
  json other_run = doc;
  other_run["invocation"]["run_id"] = "d-2";
  refused(other_run, "invocation's run_id");
  json wrong_type = doc;
  wrong_type["invocation"]["allow_destroy"] = "yes";
  refused(wrong_type, "request:");
  json lock_as_text = doc;  // a runner must never be told to skip the lock by a string
  lock_as_text["invocation"]["lock"] = "false";
  refused(lock_as_text, "request:");
  refused(json::array(), "must be an object");
  json bad_runner = doc;  // read as its schema reads it, with the path of what it breaks
  bad_runner["runner_configuration"]["job"]["namespace"] = "Not A Namespace";
  refused(bad_runner, "$.runner_configuration.job.namespace");
  json no_key = doc;
  no_key["runner_configuration"].erase("key");
  refused(no_key, "$.runner_configuration.key");
}

TEST(AgentReport, AnEndTheAgentSawFailsTheRunButOnlyThePostedResultMakesItSucceed) {
  RunResult applied;
  applied.op = "apply";
  const std::string ok = RunResultToJson(applied).dump();
  RunnerExit oom = RunnerStopped(RunnerEnd::kOomKilled, "out of memory");
  oom.exit_code = 137;
  oom.image_id = "sha256:abc";
  RunnerExit read = RunnerExitFromAgentReport(AgentReportOf(oom));
  EXPECT_EQ(read.ended_as, RunnerEnd::kOomKilled);
  EXPECT_EQ(read.exit_code, 137);
  EXPECT_EQ(read.message, "out of memory");
  EXPECT_EQ(read.image_id, "sha256:abc");
  EXPECT_EQ(JoinRunEnd(read, ok, "apply").FailureName(), "OOMKilled");

  // An agent sends no result: it cannot make a run succeed, even with one in its report.
  RunnerExit exited{.exit_code = 0, .written_result = ok};
  json claimed = AgentReportOf(exited);
  EXPECT_FALSE(claimed.contains("written_result"));
  claimed["written_result"] = ok;
  RunnerExit taken = RunnerExitFromAgentReport(claimed);
  EXPECT_TRUE(taken.written_result.empty());
  EXPECT_EQ(JoinRunEnd(taken, std::nullopt, "apply").FailureName(), "RunnerFailed");
  EXPECT_TRUE(JoinRunEnd(taken, ok, "apply").succeeded);

  // Hostile reports: types that are not theirs count as absent, text is bounded.
  json hostile = {{"exit_code", "0"},
                  {"ended_as", "Succeeded"},
                  {"message", std::string(100000, 'x')},
                  {"stop_requested", "yes"},
                  {"image_id", 7}};
  RunnerExit bounded = RunnerExitFromAgentReport(hostile);
  EXPECT_FALSE(bounded.exit_code);
  EXPECT_FALSE(bounded.ended_as);
  EXPECT_FALSE(bounded.stop_requested);
  EXPECT_EQ(bounded.message.size(), 4096u);
  EXPECT_FALSE(JoinRunEnd(bounded, std::nullopt, "apply").succeeded);
  EXPECT_EQ(RunnerExitFromAgentReport({{"exit_code", 300}}).exit_code, std::nullopt);
}

}  // namespace
}  // namespace berth::launch
