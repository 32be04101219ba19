// The runner against the real tofu, one behaviour of docs/runner.md per test.
#include <gtest/gtest.h>
#include <signal.h>
#include <zlib.h>

#include <sstream>

#include "crypto/digest.h"
#include "runner_harness.h"
#include "sys/files.h"
#include "sys/stream_relay.h"
#include "tar_builder.h"
#include "test_tools.h"

namespace berth::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Keeps state in one local file across runs, as a real backend would.
constexpr char kLocalBackend[] = "terraform {\n  backend \"local\" {}\n}\n";

class RunnerE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    auto h = RunnerHarness::Create();
    ASSERT_TRUE(h);
    h_.emplace(std::move(*h));
    state_ = (h_->Root() / "state/terraform.tfstate").string();
    fs::create_directories(h_->Root() / "state");
    target_ = (h_->Root() / "world/file.txt").string();
  }

  // Flags that every run of the file example shares: the module, its state, its variables.
  std::vector<std::string> FileModule(const fs::path& module, const std::string& name,
                                      const std::string& content) {
    std::string config = (h_->Root() / (name + ".tfvars.json")).string();
    EXPECT_TRUE(sys::WriteFileAtomic(config, json{{"path", target_}, {"content", content}}.dump()));
    return {"--module=" + module.string(),
            "--namespace=test",
            "--name=" + name,
            "--workdir=" + (h_->Root() / ("work-" + name)).string(),
            "--config=" + config,
            "--backend-config=path=" + state_};
  }

  std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  // The runner started with exactly these arguments and environment (no flag of the harness's
  // own), and the result it wrote at --result=RESULT, with its exit code.
  struct Spawned {
    int exit_code = -1;
    std::string output;
    json result;  // null when it wrote none (a test failure, said)
  };
  Spawned SpawnForResult(std::vector<std::string> args, std::vector<std::string> env,
                         const std::string& result) {
    sys::SpawnOptions options;
    options.argv = {RunnerBinary().string()};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.argv.push_back("--result=" + result);
    options.env = std::move(env);
    auto done = sys::RunToCompletion(options);
    EXPECT_TRUE(done) << (done ? "" : done.error().ToString());
    if (!done) return {};
    auto text = sys::ReadFile(result);
    EXPECT_TRUE(text) << "no result at --result: " << done->output;
    return {.exit_code = done->exit_code,
            .output = done->output,
            .result = text ? json::parse(*text, nullptr, false) : json()};
  }

  std::optional<RunnerHarness> h_;
  std::string state_;
  std::string target_;
};

// The caller's TF_* variables reach TF (the seed's TF_LOG, a TF_VAR_), berth's own do not.
TEST_F(RunnerE2E, TheCallersTfVariablesReachTfButBerthsOwnDoNot) {
  auto module = h_->Module("hello", {{"backend.tf", kLocalBackend}});
  auto run = h_->Run({"--module=" + module.string(), "--namespace=test", "--name=vars",
                      "--workdir=" + (h_->Root() / "work-vars").string(),
                      "--backend-config=path=" + state_, "--op=plan"},
                     {"TF_LOG=INFO", "TF_VAR_name=set-by-the-pod", "TF_CLI_ARGS_plan=-target=x",
                      "TF_DATA_DIR=/tmp/elsewhere"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_NE(run.log.find("[INFO]  OpenTofu version"), std::string::npos) << run.log;
  EXPECT_NE(run.log.find("[inputs] TF_LOG=INFO: TF's own log follows"), std::string::npos)
      << run.log;
  EXPECT_NE(run.log.find("set-by-the-pod"), std::string::npos) << run.log;
  for (const char* name : {"TF_CLI_ARGS_plan", "TF_DATA_DIR"})
    EXPECT_NE(run.log.find(std::string("[inputs] not passed to TF: ") + name + " is berth's own"),
              std::string::npos)
        << run.log;
  EXPECT_FALSE(std::filesystem::exists("/tmp/elsewhere"));
}

TEST_F(RunnerE2E, PlanReportsCountsAndTheSameEffectPlannedTwiceHasTheSameHash) {
  auto module = h_->Module("file", {{"backend.tf", kLocalBackend}});
  auto first = h_->Run(With(FileModule(module, "a", "one"), {"--op=plan"}));
  ASSERT_EQ(first.exit_code, 0) << Describe(first);
  EXPECT_TRUE(first.result["error"].is_null());
  EXPECT_EQ(first.result["plan"]["add"], 1);
  EXPECT_EQ(first.result["plan"]["hasChanges"], true);
  EXPECT_EQ(first.result["plan"]["keyed"], false);
  EXPECT_EQ(first.result["binary"]["name"], "tofu");
  EXPECT_EQ(first.result["binary"]["version"], "1.12.6");
  std::vector<std::string> names;
  for (const auto& s : first.result["steps"]) names.push_back(s["name"]);
  // The plan file itself is read: no show -json, no second load of the provider's schema; and
  // it names the tofu that wrote it: no version -json either.
  EXPECT_EQ(names, (std::vector<std::string>{"init", "plan"}));
  EXPECT_NE(first.log.find("[plan] Plan: 1 to add"), std::string::npos) << first.log;
  EXPECT_NE(first.log.find("[inputs] not passed to TF: TF_WORKSPACE is berth's own"),
            std::string::npos)
      << first.log;

  auto second = h_->Run(With(FileModule(module, "b", "one"), {"--op=plan"}));
  ASSERT_EQ(second.exit_code, 0) << Describe(second);
  EXPECT_EQ(second.result["plan"]["hash"], first.result["plan"]["hash"]);

  auto other = h_->Run(With(FileModule(module, "c", "two"), {"--op=plan"}));
  EXPECT_NE(other.result["plan"]["hash"], first.result["plan"]["hash"]);

  std::string key = (h_->Root() / "plan.key").string();
  ASSERT_TRUE(sys::WriteFileAtomic(key, "a secret plan key"));
  auto keyed =
      h_->Run(With(FileModule(module, "d", "one"), {"--op=plan", "--plan-key-file=" + key}));
  ASSERT_EQ(keyed.exit_code, 0) << Describe(keyed);
  EXPECT_EQ(keyed.result["plan"]["keyed"], true);
  EXPECT_NE(keyed.result["plan"]["hash"], first.result["plan"]["hash"]);
}

TEST_F(RunnerE2E, AnApprovedPlanIsAppliedAndADifferentEffectIsRefused) {
  auto module = h_->Module("file", {{"backend.tf", kLocalBackend}});
  std::string plan_file = (h_->Root() / "saved.tfplan").string();
  auto plan =
      h_->Run(With(FileModule(module, "p", "approved"), {"--op=plan", "--plan-file=" + plan_file}));
  ASSERT_EQ(plan.exit_code, 0) << Describe(plan);
  std::string hash = plan.result["plan"]["hash"];

  // Planned afresh with other inputs: a different effect than the one approved.
  auto refused = h_->Run(
      With(FileModule(module, "q", "not approved"), {"--op=apply", "--approved-plan=" + hash}));
  EXPECT_EQ(refused.exit_code, 1) << Describe(refused);
  EXPECT_EQ(Kind(refused), "PlanNotApproved") << Describe(refused);
  EXPECT_FALSE(fs::exists(target_)) << "something was applied";

  // The approved file's digest, and a file that is not those bytes.
  const std::string digest = crypto::Sha256Hex(*sys::ReadFile(plan_file));
  std::string other_file = (h_->Root() / "other.tfplan").string();
  ASSERT_TRUE(sys::WriteFileAtomic(other_file, *sys::ReadFile(plan_file) + " "));
  auto tampered = h_->Run(With(FileModule(module, "p", "approved"),
                               {"--op=apply", "--plan-file=" + other_file,
                                "--approved-plan=" + hash, "--approved-plan-sha256=" + digest}));
  EXPECT_EQ(Kind(tampered), "PlanNotApproved") << Describe(tampered);
  EXPECT_FALSE(fs::exists(target_)) << "something was applied";

  // Those bytes: applied without a show -json (its provider schemas were loaded at plan time).
  std::string outputs = (h_->Root() / "outputs.json").string();
  auto applied = h_->Run(With(FileModule(module, "p", "approved"),
                              {"--op=apply", "--plan-file=" + plan_file, "--approved-plan=" + hash,
                               "--approved-plan-sha256=" + digest, "--outputs=" + outputs}));
  ASSERT_EQ(applied.exit_code, 0) << Describe(applied);
  std::vector<std::string> steps;
  for (const auto& step : applied.result["steps"]) steps.push_back(step["name"]);
  // Its one output is plain: read from the apply's own events, no output -json.
  EXPECT_EQ(steps, (std::vector<std::string>{"init", "apply"}));
  EXPECT_EQ(*sys::ReadFile(target_), "approved");
  EXPECT_EQ(applied.result["outputs"], json::parse(R"([{"name":"id","sensitive":false}])"));
  auto values = json::parse(*sys::ReadFile(outputs));
  EXPECT_EQ(values["id"]["value"], crypto::Sha256Hex(target_));

  // The same saved plan again: tofu calls it stale, and nothing is applied twice.
  auto stale = h_->Run(With(FileModule(module, "p", "approved"),
                            {"--op=apply", "--plan-file=" + plan_file, "--approved-plan=" + hash}));
  EXPECT_EQ(Kind(stale), "PlanStale") << Describe(stale);
}

// The flags of the apply of a saved plan, approved by its hash and its file's digest, in the
// work folder its plan run left (--prepared).
std::vector<std::string> PreparedApply(const RunnerRun& plan, const std::string& plan_file) {
  return {"--op=apply", "--prepared", "--plan-file=" + plan_file,
          "--approved-plan=" + plan.result["plan"]["hash"].get<std::string>(),
          "--approved-plan-sha256=" + crypto::Sha256Hex(*sys::ReadFile(plan_file))};
}

TEST_F(RunnerE2E, AnApprovedPlanContinuesInItsPlanRunsFolderWithoutInit) {
  auto module = h_->Module("file", {{"backend.tf", kLocalBackend}});
  std::string plan_file = (h_->Root() / "saved.tfplan").string();
  auto plan =
      h_->Run(With(FileModule(module, "p", "approved"), {"--op=plan", "--plan-file=" + plan_file}));
  ASSERT_EQ(plan.exit_code, 0) << Describe(plan);
  // What the plan run left beside its init does not stay: the module is laid out again.
  const fs::path work = h_->Root() / "work-p";
  ASSERT_TRUE(sys::WriteFileAtomic(work / "main.tf", "changed after the plan"));
  ASSERT_TRUE(sys::WriteFileAtomic(work / "left.txt", "left by the plan run"));

  auto applied = h_->Run(With(FileModule(module, "p", "approved"), PreparedApply(plan, plan_file)));
  ASSERT_EQ(applied.exit_code, 0) << Describe(applied);
  std::vector<std::string> steps;
  for (const auto& step : applied.result["steps"]) steps.push_back(step["name"]);
  EXPECT_EQ(steps, (std::vector<std::string>{"apply"}));
  EXPECT_NE(applied.log.find("[init] not run"), std::string::npos) << applied.log;
  EXPECT_EQ(*sys::ReadFile(target_), "approved");
  EXPECT_EQ(*sys::ReadFile(work / "main.tf"), *sys::ReadFile(module / "main.tf"));
  EXPECT_FALSE(fs::exists(work / "left.txt"));
}

TEST_F(RunnerE2E, AProviderSwappedInThePlanRunsFolderIsNeverStarted) {
  auto module = h_->Module("file", {{"backend.tf", kLocalBackend}});
  std::string plan_file = (h_->Root() / "saved.tfplan").string();
  auto plan =
      h_->Run(With(FileModule(module, "s", "approved"), {"--op=plan", "--plan-file=" + plan_file}));
  ASSERT_EQ(plan.exit_code, 0) << Describe(plan);
  // A hostile plan run puts a provider of its own where its init installed the real one.
  fs::path installed;
  for (const auto& entry :
       fs::recursive_directory_iterator(h_->Root() / "work-s/.terraform/providers",
                                        fs::directory_options::follow_directory_symlink)) {
    if (entry.path().filename().string().starts_with("terraform-provider-berthtest"))
      installed = entry.path();
  }
  ASSERT_FALSE(installed.empty());
  const fs::path platform = installed.parent_path();  // a link into the plugin cache, or a copy
  const fs::path started = h_->Root() / "swapped-provider-started";
  fs::remove_all(platform);
  fs::create_directories(platform);
  ASSERT_TRUE(sys::WriteFileAtomic(installed, "#!/bin/sh\ntouch " + started.string() + "\n"));
  fs::permissions(installed, fs::perms::owner_all);

  auto refused = h_->Run(With(FileModule(module, "s", "approved"), PreparedApply(plan, plan_file)));
  EXPECT_EQ(Kind(refused), "Apply") << Describe(refused);
  EXPECT_NE(refused.log.find("checksums"), std::string::npos) << refused.log;
  EXPECT_FALSE(fs::exists(started)) << "tofu started the swapped provider";
  EXPECT_FALSE(fs::exists(target_)) << "something was applied";
}

// The files of a remote module are checked by no lock file: its apply inits afresh.
TEST_F(RunnerE2E, APlanRunsFolderWithRemoteModulesIsInitialisedAgain) {
  const fs::path remote = h_->Root() / "remote-module";
  fs::create_directories(remote);
  ASSERT_TRUE(sys::WriteFileAtomic(remote / "main.tf", "output \"x\" {\n  value = 1\n}\n"));
  auto module = h_->Module(
      "file", {{"backend.tf", kLocalBackend},
               {"remote.tf", "module \"remote\" {\n  source = \"" + remote.string() + "\"\n}\n"}});
  std::string plan_file = (h_->Root() / "saved.tfplan").string();
  auto plan =
      h_->Run(With(FileModule(module, "r", "approved"), {"--op=plan", "--plan-file=" + plan_file}));
  ASSERT_EQ(plan.exit_code, 0) << Describe(plan);
  ASSERT_TRUE(fs::exists(h_->Root() / "work-r/.terraform/modules/remote/main.tf"));

  auto applied = h_->Run(With(FileModule(module, "r", "approved"), PreparedApply(plan, plan_file)));
  ASSERT_EQ(applied.exit_code, 0) << Describe(applied);
  std::vector<std::string> steps;
  for (const auto& step : applied.result["steps"]) steps.push_back(step["name"]);
  EXPECT_EQ(steps, (std::vector<std::string>{"init", "apply"}));
  EXPECT_EQ(*sys::ReadFile(target_), "approved");
}

TEST_F(RunnerE2E, DestructivePlansNeedAllowDestroy) {
  auto module = h_->Module("file", {{"backend.tf", kLocalBackend}});
  ASSERT_EQ(h_->Run(With(FileModule(module, "x", "v1"), {"--op=apply"})).exit_code, 0);
  ASSERT_TRUE(fs::exists(target_));

  auto destroy = h_->Run(With(FileModule(module, "x", "v1"), {"--op=destroy"}));
  EXPECT_EQ(Kind(destroy), "DestructivePlan") << Describe(destroy);
  EXPECT_TRUE(fs::exists(target_));

  // Moving the file replaces the resource: the guard stops the plan and names the address.
  std::string moved = (h_->Root() / "world/moved.txt").string();
  std::string config = (h_->Root() / "moved.tfvars.json").string();
  ASSERT_TRUE(sys::WriteFileAtomic(config, json{{"path", moved}, {"content", "v1"}}.dump()));
  auto replace = h_->Run({"--op=plan", "--module=" + module.string(), "--name=x",
                          "--workdir=" + (h_->Root() / "work-moved").string(), "--config=" + config,
                          "--backend-config=path=" + state_});
  EXPECT_EQ(Kind(replace), "DestructivePlan") << Describe(replace);
  EXPECT_EQ(replace.result["plan"]["replace"], 1);
  EXPECT_NE(replace.result["error"]["message"].get<std::string>().find("berthtest_file.this"),
            std::string::npos);

  auto allowed = h_->Run(With(FileModule(module, "x", "v1"), {"--op=destroy", "--allow-destroy"}));
  ASSERT_EQ(allowed.exit_code, 0) << Describe(allowed);
  EXPECT_EQ(allowed.result["plan"]["destroy"], 1);
  EXPECT_FALSE(fs::exists(target_));
}

TEST_F(RunnerE2E, DriftFindsTheResourceChangedBehindTofusBack) {
  auto module = h_->Module("file", {{"backend.tf", kLocalBackend}});
  ASSERT_EQ(h_->Run(With(FileModule(module, "d", "v1"), {"--op=apply"})).exit_code, 0);
  auto calm = h_->Run(With(FileModule(module, "d", "v1"), {"--op=drift"}));
  ASSERT_EQ(calm.exit_code, 0) << Describe(calm);
  EXPECT_EQ(calm.result["drift"]["drifted"], false);

  ASSERT_TRUE(sys::WriteFileAtomic(target_, "changed by hand"));
  auto drift = h_->Run(With(FileModule(module, "d", "v1"), {"--op=drift"}));
  ASSERT_EQ(drift.exit_code, 0) << Describe(drift);
  EXPECT_EQ(drift.result["drift"]["drifted"], true);
  EXPECT_EQ(drift.result["drift"]["resources"], json::parse(R"(["berthtest_file.this"])"));

  // refresh takes the real world into the state; drift is then gone.
  auto refresh = h_->Run(With(FileModule(module, "d", "v1"), {"--op=refresh"}));
  ASSERT_EQ(refresh.exit_code, 0) << Describe(refresh);
  auto after = h_->Run(With(FileModule(module, "d", "v1"), {"--op=drift"}));
  EXPECT_EQ(after.result["drift"]["drifted"], false) << Describe(after);
}

std::string GzipChunks(const std::string& data) {
  size_t half = data.size() / 2;
  return Gzip(data.substr(0, half)) + Gzip(data.substr(half));
}

TEST_F(RunnerE2E, RestorePushesASavedStateAndRefusesOneThatIsNot) {
  auto module = h_->Module("file", {{"backend.tf", kLocalBackend}});
  ASSERT_EQ(h_->Run(With(FileModule(module, "r", "v1"), {"--op=apply"})).exit_code, 0);
  std::string saved = (h_->Root() / "saved.tfstate.gz").string();
  ASSERT_TRUE(sys::WriteFileAtomic(saved, GzipChunks(*sys::ReadFile(state_))));
  ASSERT_EQ(
      h_->Run(With(FileModule(module, "r", "v1"), {"--op=destroy", "--allow-destroy"})).exit_code,
      0);
  EXPECT_EQ(sys::ReadFile(state_)->find("berthtest_file"), std::string::npos);

  auto restore =
      h_->Run(With(FileModule(module, "r", "v1"), {"--op=restore", "--restore-from=" + saved}));
  ASSERT_EQ(restore.exit_code, 0) << Describe(restore);
  EXPECT_NE(restore.log.find("[state-list] berthtest_file.this"), std::string::npos) << restore.log;
  EXPECT_NE(sys::ReadFile(state_)->find("berthtest_file"), std::string::npos);

  for (std::string bad : {"", "not json", "{\"no\": \"state\"}"}) {
    std::string path = (h_->Root() / "bad.tfstate").string();
    ASSERT_TRUE(sys::WriteFileAtomic(path, bad));
    auto refused =
        h_->Run(With(FileModule(module, "r", "v1"), {"--op=restore", "--restore-from=" + path}));
    EXPECT_EQ(Kind(refused), "Restore") << bad << "\n" << Describe(refused);
  }
}

TEST_F(RunnerE2E, TheInputsHashMustMatchTheConfig) {
  auto module = h_->Module("file", {{"backend.tf", kLocalBackend}});
  auto flags = FileModule(module, "h", "v1");
  std::string config = flags[4].substr(std::string("--config=").size());
  std::string good = "sha256:" + crypto::Sha256Hex(*sys::ReadFile(config));
  auto ok = h_->Run(With(flags, {"--op=plan", "--inputs-hash=" + good}));
  EXPECT_EQ(ok.exit_code, 0) << Describe(ok);
  EXPECT_EQ(ok.result["inputsHash"], good);
  auto bad = h_->Run(With(flags, {"--op=plan", "--inputs-hash=sha256:" + std::string(64, '0')}));
  EXPECT_EQ(Kind(bad), "InputsMismatch") << Describe(bad);
  EXPECT_EQ(bad.result["steps"].size(), 0u) << "tofu ran on inputs that were not approved";
}

TEST_F(RunnerE2E, SecretsNeverReachTheLogOrTheResult) {
  auto module = h_->Module("secret");
  std::string config = (h_->Root() / "secret.tfvars.json").string();
  ASSERT_TRUE(sys::WriteFileAtomic(config, R"({"token": "tok-4f9a8b7c6d"})"));
  std::string mask_file = (h_->Root() / "mask").string();
  ASSERT_TRUE(sys::WriteFileAtomic(mask_file, "berth-extra-secret\n"));
  auto run = h_->Run({"--op=plan", "--module=" + module.string(), "--name=s",
                      "--workdir=" + (h_->Root() / "work-s").string(), "--config=" + config},
                     {"BERTH_MASK_FILE=" + mask_file});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_EQ(run.log.find("tok-4f9a8b7c6d"), std::string::npos) << run.log;
  EXPECT_NE(run.log.find("token is ***"), std::string::npos) << run.log;
  EXPECT_EQ(run.result_text.find("tok-4f9a8b7c6d"), std::string::npos);
}

// The apply's events leave sensitive values out: a module with a sensitive output has its
// outputs read with output -json, the sensitive value whole (for --outputs) and marked.
TEST_F(RunnerE2E, ASensitiveOutputIsReadWithOutputJsonWhole) {
  auto module = h_->Module("secret");
  std::string config = (h_->Root() / "secret.tfvars.json").string();
  ASSERT_TRUE(sys::WriteFileAtomic(config, R"({"token": "tok-77e1"})"));
  std::string outputs = (h_->Root() / "outputs.json").string();
  auto run = h_->Run({"--op=apply", "--module=" + module.string(), "--name=s",
                      "--workdir=" + (h_->Root() / "work-s").string(), "--config=" + config,
                      "--outputs=" + outputs});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  std::vector<std::string> steps;
  for (const auto& step : run.result["steps"]) steps.push_back(step["name"]);
  EXPECT_EQ(steps, (std::vector<std::string>{"init", "plan", "apply", "output"}));
  auto values = json::parse(*sys::ReadFile(outputs));
  EXPECT_EQ(values["token"]["value"], "tok-77e1");
  EXPECT_EQ(values["token"]["sensitive"], true);
  EXPECT_EQ(values["token_length"]["value"], 8);
  EXPECT_EQ(run.result["outputs"], json::parse(R"([{"name":"token","sensitive":true},)"
                                               R"({"name":"token_length","sensitive":false}])"));
}

TEST_F(RunnerE2E, TenMegabytesOfErrorOutputStillGiveAValidBoundedResult) {
  auto module = h_->Module("noisy");
  auto run = h_->Run({"--op=apply", "--module=" + module.string(), "--name=n",
                      "--workdir=" + (h_->Root() / "work-n").string()});
  EXPECT_EQ(run.exit_code, 1);
  ASSERT_TRUE(run.result.is_object()) << run.result_text.substr(0, 500);
  EXPECT_LE(run.result_text.size(), 4096u);
  EXPECT_EQ(Kind(run), "Apply");
  std::string tail = run.result["error"]["tail"];
  EXPECT_NE(tail.find("berth-noisy-last-line"), std::string::npos) << tail;
  EXPECT_GT(run.log.size(), 10'000'000u) << "the log must stream everything";
}

TEST_F(RunnerE2E, ATimeoutInterruptsTofu) {
  auto module = h_->Module("slow", {{"backend.tf", kLocalBackend}});
  auto run = h_->Run({"--op=apply", "--module=" + module.string(), "--name=t",
                      "--workdir=" + (h_->Root() / "work-t").string(), "--timeout=2s",
                      "--backend-config=path=" + state_});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(Kind(run), "Timeout") << Describe(run);
  EXPECT_NE(run.log.find("timeout reached"), std::string::npos);
}

TEST_F(RunnerE2E, AHostileArchiveIsSourceUnavailableAndAGoodOneRuns) {
  std::string evil = (h_->Root() / "evil.tar.gz").string();
  ASSERT_TRUE(sys::WriteFileAtomic(evil, TarBuilder().File("../../escape.tf", "x").TarGz()));
  auto refused = h_->Run({"--op=plan", "--module=" + evil, "--name=e",
                          "--workdir=" + (h_->Root() / "work-e").string()});
  EXPECT_EQ(Kind(refused), "SourceUnavailable") << Describe(refused);
  EXPECT_FALSE(fs::exists(h_->Root() / "escape.tf"));

  std::string good = (h_->Root() / "hello.tar.gz").string();
  auto hello = sys::ReadFile(testenv::SourceDir() / "examples/hello/main.tf");
  ASSERT_TRUE(hello);
  ASSERT_TRUE(sys::WriteFileAtomic(
      good, TarBuilder().Dir("envs").File("envs/dev/main.tf", *hello).TarGz()));
  auto run = h_->Run({"--op=plan", "--module=" + good, "--path=envs/dev", "--name=g",
                      "--workdir=" + (h_->Root() / "work-g").string()});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_EQ(run.result["plan"]["add"], 1);
}

// Asked for, or after a plan that failed: an invalid configuration is Validate (the plan found
// it first; validate, run only then, says it is the configuration's).
TEST_F(RunnerE2E, AValidationErrorIsValidate) {
  auto module =
      h_->Module("hello", {{"broken.tf", "resource \"terraform_data\" \"x\" { nope = 1 }\n"}});
  for (const char* op : {"validate", "plan", "apply"}) {
    auto run = h_->Run({std::string("--op=") + op, "--module=" + module.string(), "--name=v",
                        "--workdir=" + (h_->Root() / ("work-v-" + std::string(op))).string()});
    EXPECT_EQ(Kind(run), "Validate") << op << ": " << Describe(run);
    EXPECT_NE(run.result["error"]["tail"].get<std::string>().find("nope"), std::string::npos);
    // No plan file named the tofu that ran: the run asked it, and the failure stays its own.
    EXPECT_EQ(run.result["binary"]["version"], "1.12.6") << op << ": " << Describe(run);
    EXPECT_EQ(run.result["error"]["step"], "validate") << op;
  }
}

// A plan that fails for another reason than its configuration stays Plan.
TEST_F(RunnerE2E, APlanThatFailsWithAValidConfigurationIsPlan) {
  // validate knows no variable's value; plan checks this one's rule and refuses it.
  auto module = h_->Module("hello", {{"positive.tf",
                                      "variable \"n\" {\n"
                                      "  type = number\n"
                                      "  validation {\n"
                                      "    condition     = var.n > 0\n"
                                      "    error_message = \"n must be positive.\"\n"
                                      "  }\n}\n"}});
  fs::path config = h_->Root() / "negative.json";
  ASSERT_TRUE(sys::WriteFileAtomic(config, R"({"n": -1})"));
  auto run =
      h_->Run({"--op=plan", "--module=" + module.string(), "--name=p",
               "--config=" + config.string(), "--workdir=" + (h_->Root() / "work-p").string()});
  EXPECT_EQ(Kind(run), "Plan") << Describe(run);
}

TEST_F(RunnerE2E, JsonLoggingWritesOneObjectPerLineAndVerbosityReportsMemory) {
  auto module = h_->Module("hello");
  auto run = h_->Run({"--op=plan", "--module=" + module.string(), "--name=j", "-v=1",
                      "--workdir=" + (h_->Root() / "work-j").string(), "--logging-format=json"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  size_t lines = 0;
  bool memory = false;
  std::istringstream log(run.log);
  for (std::string line; std::getline(log, line); ++lines) {
    auto doc = json::parse(line, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << "not JSON: " << line;
    EXPECT_TRUE(doc.contains("ts") && doc.contains("step") && doc.contains("msg")) << line;
    memory |= doc["step"] == "runner" && doc["msg"].get<std::string>().starts_with("peak memory");
  }
  EXPECT_GT(lines, 10u);
  EXPECT_TRUE(memory);
}

TEST_F(RunnerE2E, InvalidFlagsStillWriteAResultAndExitTwo) {
  auto run = h_->Run({"--op=plan", "--lock-timeout=forever"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(Kind(run), "InvalidFlags") << Describe(run);
  EXPECT_NE(run.result["error"]["message"].get<std::string>().find("--lock-timeout"),
            std::string::npos);
}

TEST_F(RunnerE2E, ASharedProviderCacheWithoutAPluginCacheToLinkIntoIsRefusedNamingBoth) {
  std::vector<std::string> env;
  for (const std::string& entry : h_->Environment({"BERTH_SHARED_PROVIDERS=/shared"})) {
    if (!entry.starts_with("TF_PLUGIN_CACHE_DIR=")) env.push_back(entry);
  }
  json doc = SpawnForResult({"run", "--op=plan", "--module=" + h_->Module("hello").string(),
                             "--workdir=" + (h_->Root() / "work-shared").string()},
                            env, (h_->Root() / "shared-providers-result.json").string())
                 .result;
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["error"]["kind"], "InvalidFlags") << doc;
  const std::string message = doc["error"]["message"].get<std::string>();
  EXPECT_NE(message.find("BERTH_SHARED_PROVIDERS"), std::string::npos) << message;
  EXPECT_NE(message.find("TF_PLUGIN_CACHE_DIR"), std::string::npos) << message;
}

// A relay to berthd that cannot start (its port is taken) is the run's failure to reach its
// source: a result says so, and nothing runs.
TEST_F(RunnerE2E, ARelayThatCannotStartIsSourceUnavailable) {
  int port = 0;
  auto taken = sys::ListenLoopback(port);
  ASSERT_TRUE(taken) << taken.error().ToString();
  json doc =
      SpawnForResult({"run", "--op=plan", "--gateway=http://127.0.0.1:" + std::to_string(port),
                      "--run-id=r1", "--berthd-relay=" + (h_->Root() / "nowhere.sock").string()},
                     h_->Environment({}), (h_->Root() / "relay-result.json").string())
          .result;
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["error"]["kind"], "SourceUnavailable") << doc;
  EXPECT_EQ(doc["error"]["step"], "gateway") << doc;
  EXPECT_EQ(doc["op"], "plan") << doc;
}

TEST_F(RunnerE2E, ABadGlobalFlagBeforeRunStillWritesItsResultWhereAsked) {
  Spawned run = SpawnForResult({"--vmodule=plan", "run", "--op=plan"}, h_->Environment({}),
                               (h_->Root() / "global-flag-result.json").string());
  EXPECT_EQ(run.exit_code, 2) << run.output;
  const json& doc = run.result;
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["error"]["kind"], "InvalidFlags") << doc;
  EXPECT_NE(doc["error"]["message"].get<std::string>().find("pattern=N"), std::string::npos);
}

TEST_F(RunnerE2E, VmoduleRaisesTheVerbosityOfTheStepsItNames) {
  auto module = h_->Module("hello");
  auto run = h_->Run({"--op=plan", "--module=" + module.string(), "--name=vm",
                      "--workdir=" + (h_->Root() / "work-vm").string(), "--vmodule=plan=2"});
  ASSERT_EQ(run.exit_code, 0) << Describe(run);
  EXPECT_NE(run.log.find("[plan] running: "), std::string::npos) << run.log;
  EXPECT_EQ(run.log.find("[init] running: "), std::string::npos) << "init was not named";
  EXPECT_EQ(run.log.find("peak memory"), std::string::npos) << "runner was not named";

  auto runner_only =
      h_->Run({"--op=plan", "--module=" + module.string(), "--name=vm2",
               "--workdir=" + (h_->Root() / "work-vm2").string(), "--vmodule=run*=1"});
  ASSERT_EQ(runner_only.exit_code, 0) << Describe(runner_only);
  EXPECT_NE(runner_only.log.find("[runner] peak memory"), std::string::npos) << runner_only.log;
  EXPECT_EQ(runner_only.log.find("running: "), std::string::npos);
}

TEST_F(RunnerE2E, AResultThatCannotBeWrittenExitsThree) {
  auto module = h_->Module("hello");
  sys::SpawnOptions options;
  options.argv = {RunnerBinary().string(),
                  "run",
                  "--op=validate",
                  "--module=" + module.string(),
                  "--workdir=" + (h_->Root() / "work-w").string(),
                  "--result=/nonexistent/dir/result"};
  options.env = h_->Environment({});
  auto done = sys::RunToCompletion(options);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->exit_code, 3) << done->output;
}

}  // namespace
}  // namespace berth::testing
