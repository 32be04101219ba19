// The local launcher with the real runner and tofu: runs in their own folders with a clean
// environment, at most max_parallel at once, cancel that lets the runner stop cleanly, a
// runner that dies, and a launcher restart that re-attaches a running apply (never a second
// one).
#include "launch/local/local_launcher.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "fork_scripts.h"
#include "outcome_recorder.h"
#include "own_network.h"
#include "sys/files.h"
#include "test_tools.h"
#include "tofu_test_env.h"

namespace berth::launch {
namespace {

namespace fs = std::filesystem;

// Writes its environment where the test can read it, then waits a little.
constexpr const char* kEnvModule = R"(resource "terraform_data" "env" {
  provisioner "local-exec" {
    command = "env > $HOME/env.txt; sleep 1"
  }
}
)";

// A module whose one local-exec runs what it is told (var.take): a greedy or hostile one.
constexpr const char* kGreedyModule = R"tf(variable "take" { type = string }
resource "terraform_data" "greedy" {
  provisioner "local-exec" {
    command = var.take
  }
}
)tf";

// Recovery where no other berthd tracks a run.
const RunIsHeld kNoneHeld = [](const std::string&) { return false; };

struct ReachProbe;

class LocalLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("local-launcher");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    auto tofu = testenv::TofuTestEnv::Shared();
    ASSERT_TRUE(tofu) << tofu.error().ToString();
    tofu_ = *tofu;
    fs::create_directories(dir_->Path() / "env-module");
    ASSERT_TRUE(sys::WriteFileAtomic(dir_->Path() / "env-module/main.tf", kEnvModule));
    ASSERT_TRUE(sys::WriteFileAtomic(dir_->Path() / "slow.json", R"({"seconds": 4})"));
    // The sandbox reads these as the run's own user, not the test's.
    for (const char* file : {"env-module/main.tf", "slow.json"})
      fs::permissions(dir_->Path() / file, fs::perms::others_read, fs::perm_options::add);
  }

  LocalLauncherOptions Options(int max_parallel = 4) {
    LocalLauncherOptions options;
    options.runner_binary = BERTH_RUNNER_BIN;
    options.runs_dir = dir_->Path() / "runs";
    options.max_parallel = max_parallel;
    auto sandbox = Sandbox::Probe({.first = 60100, .count = max_parallel});
    EXPECT_TRUE(sandbox) << sandbox.error().ToString();
    if (sandbox) options.sandbox = *sandbox;
    for (const std::string& entry : tofu_->Environment(dir_->Path())) {
      if (!entry.starts_with("HOME=")) options.environment.push_back(entry);
    }
    options.stop_timeout = std::chrono::seconds(30);
    return options;
  }

  void Start(LocalLauncherOptions options) {
    launcher_ = std::make_unique<LocalLauncher>(std::move(options), outcomes_);
  }

  LaunchRequest Request(const std::string& run_id, const std::string& op, const fs::path& module) {
    LaunchRequest request{.run_id = run_id, .token = "token-of-" + run_id};
    request.invocation = {.op = op, .module = module.string(), .bin = tofu_->Tofu().string()};
    if (module.filename() == "slow")
      request.invocation.config = (dir_->Path() / "slow.json").string();
    return request;
  }
  fs::path Example(const char* name) { return testenv::SourceDir() / "examples" / name; }

  // A local runner's settings, from its configuration as a user writes it (the type implied).
  static RunnerSettings LocalRunner(nlohmann::json configuration) {
    configuration["type"] = "local";
    auto settings = ParseRunnerSettings(RunnerType::kLocal, configuration);
    EXPECT_TRUE(settings) << settings.error().ToString();
    return settings ? *settings : RunnerSettings(LocalRunnerSettings{});
  }

  // An apply of kGreedyModule that runs take, for runner, configured so.
  LaunchRequest TakingRequest(const std::string& run_id, const std::string& take,
                              const std::string& runner,
                              const nlohmann::json& runner_configuration) {
    if (!fs::exists(dir_->Path() / "greedy/main.tf")) {
      fs::create_directories(dir_->Path() / "greedy");
      EXPECT_TRUE(sys::WriteFileAtomic(dir_->Path() / "greedy/main.tf", kGreedyModule));
      fs::permissions(dir_->Path() / "greedy/main.tf", fs::perms::others_read,
                      fs::perm_options::add);
    }
    fs::path vars = dir_->Path() / (run_id + ".json");
    EXPECT_TRUE(sys::WriteFileAtomic(vars, nlohmann::json{{"take", take}}.dump()));
    fs::permissions(vars, fs::perms::others_read, fs::perm_options::add);
    LaunchRequest request = Request(run_id, "apply", dir_->Path() / "greedy");
    request.invocation.config = vars.string();
    request.runner_id = runner;
    request.runner = LocalRunner(runner_configuration);
    return request;
  }
  void LaunchTaking(const std::string& run_id, const std::string& take, const std::string& runner,
                    const nlohmann::json& runner_configuration) {
    ASSERT_TRUE(launcher_->Launch(TakingRequest(run_id, take, runner, runner_configuration)));
  }

  std::map<std::string, bool> ReachedBy(const ReachProbe& probe, const std::string& run_id,
                                        const nlohmann::json& runner, std::string& log_seen);
  // A run of a runner with network: full reaches berthd's port alone of probe's listeners; one
  // whose network_allow names metadata and loopback reaches them all. What the first reached.
  std::map<std::string, bool> ExpectHeldUnlessAllowed(const ReachProbe& probe,
                                                      std::string& log_seen);

  bool WaitUntilLogSays(const std::string& run_id, const std::string& text) {
    for (int i = 0; i < 1200; ++i) {
      auto log = sys::ReadFile(dir_->Path() / "runs" / run_id / "runner.log");
      if (log && log->find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // An apply of examples/slow cancelled once it started: the runner stopped TF itself and said
  // so in the result it wrote on its way out, not the launcher.
  void ExpectACancelStopsTheRunner(const std::string& run_id) {
    ASSERT_TRUE(launcher_->Launch(Request(run_id, "apply", Example("slow"))));
    ASSERT_TRUE(WaitUntilLogSays(run_id, "berth-slow-started"));
    ASSERT_TRUE(launcher_->Cancel(run_id));
    auto outcome = outcomes_.WaitFor(run_id);
    ASSERT_TRUE(outcome);
    EXPECT_TRUE(outcome->Cancelled() && std::holds_alternative<RunErrorKind>(outcome->failure))
        << outcome->FailureName() << ": " << outcome->message;
    EXPECT_TRUE(outcome->result) << "the runner wrote no result on its way out";
  }

  std::optional<sys::TempDir> dir_;
  testenv::TofuTestEnv* tofu_ = nullptr;
  OutcomeRecorder outcomes_;
  std::unique_ptr<LocalLauncher> launcher_;
};

TEST_F(LocalLauncherTest, APlanRunsInItsOwnFolderAndSucceeds) {
  Start(Options());
  ASSERT_TRUE(launcher_->Launch(Request("p1", "plan", Example("hello"))));
  auto outcome = outcomes_.WaitFor("p1");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->succeeded) << outcome->FailureName() << ": " << outcome->message;
  EXPECT_EQ(outcome->exit_code, 0);
  EXPECT_EQ(outcome->result->op, "plan");
  EXPECT_TRUE(fs::exists(dir_->Path() / "runs/p1/out/result.json"));
  EXPECT_FALSE(fs::exists(dir_->Path() / "runs/p1/token"));  // gone with the run
  // Launched once: a second launch of the same run is refused, not run again.
  EXPECT_EQ(launcher_->Launch(Request("p1", "plan", Example("hello"))).error().kind,
            ErrorKind::kAlreadyExists);
}

TEST_F(LocalLauncherTest, ARunSeesOnlyTheEnvironmentItIsGiven) {
  ASSERT_EQ(setenv("BERTHD_OWN_SECRET", "do-not-leak", 1), 0);
  Start(Options());
  ASSERT_TRUE(launcher_->Launch(Request("env1", "apply", dir_->Path() / "env-module")));
  auto outcome = outcomes_.WaitFor("env1");
  ASSERT_TRUE(outcome);
  ASSERT_TRUE(outcome->succeeded) << outcome->FailureName() << ": " << outcome->message;
  auto env = sys::ReadFile(dir_->Path() / "runs/env1/home/env.txt");
  ASSERT_TRUE(env);
  EXPECT_EQ(env->find("BERTHD_OWN_SECRET"), std::string::npos) << *env;
  EXPECT_NE(env->find("BERTH_TOKEN_FILE="), std::string::npos);
  EXPECT_EQ(env->find("token-of-env1"), std::string::npos);  // a file, never a value
  unsetenv("BERTHD_OWN_SECRET");
}

TEST_F(LocalLauncherTest, AtMostMaxParallelRunAndTheRestWaitInOrder) {
  Start(Options(/*max_parallel=*/1));
  ASSERT_TRUE(launcher_->Launch(Request("first", "apply", Example("slow"))));
  ASSERT_TRUE(launcher_->Launch(Request("second", "apply", Example("slow"))));
  EXPECT_EQ(launcher_->Running(), 1);
  EXPECT_EQ(launcher_->Waiting(), 1);
  EXPECT_FALSE(fs::exists(dir_->Path() / "runs/second"));
  auto first = outcomes_.WaitFor("first");
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->succeeded);
  auto second = outcomes_.WaitFor("second");
  ASSERT_TRUE(second);
  EXPECT_TRUE(second->succeeded) << second->FailureName() << ": " << second->message;
}

TEST_F(LocalLauncherTest, ARunnersMaxParallelAndWorkDirAct) {
  Start(Options(/*max_parallel=*/4));
  fs::path pool = dir_->Path() / "pool-a";
  auto of_runner = [&](const std::string& run, const std::string& runner) {
    LaunchRequest request = Request(run, "apply", Example("slow"));
    request.runner_id = runner;
    if (runner == "pool-a")
      request.runner = LocalRunner({{"max_parallel", 1}, {"work_dir", pool.string()}});
    return request;
  };
  ASSERT_TRUE(launcher_->Launch(of_runner("a1", "pool-a")));
  ASSERT_TRUE(launcher_->Launch(of_runner("a2", "pool-a")));
  ASSERT_TRUE(launcher_->Launch(of_runner("b1", "pool-b")));
  // pool-a's second run waits for its first; pool-b's run is not held up behind it.
  EXPECT_EQ(launcher_->Running(), 2);
  EXPECT_EQ(launcher_->Waiting(), 1);
  EXPECT_TRUE(fs::exists(pool / "a1/pid"));
  EXPECT_FALSE(fs::exists(dir_->Path() / "runs/a1"));
  EXPECT_FALSE(fs::exists(pool / "a2"));
  EXPECT_TRUE(fs::exists(dir_->Path() / "runs/b1/pid"));
  for (const char* run : {"a1", "a2", "b1"}) {
    auto outcome = outcomes_.WaitFor(run);
    ASSERT_TRUE(outcome) << run;
    EXPECT_TRUE(outcome->succeeded) << run << ": " << outcome->FailureName() << outcome->message;
  }
  EXPECT_TRUE(fs::exists(pool / "a2/out/result.json"));
}

TEST_F(LocalLauncherTest, CancelLetsTheRunnerStopCleanly) {
  Start(Options());
  ExpectACancelStopsTheRunner("c1");
}

TEST_F(LocalLauncherTest, ARunnerThatDiesIsAFailureWithoutAResult) {
  Start(Options());
  ASSERT_TRUE(launcher_->Launch(Request("d1", "apply", Example("slow"))));
  ASSERT_TRUE(WaitUntilLogSays("d1", "berth-slow-started"));
  auto pid = sys::ReadFile(dir_->Path() / "runs/d1/pid");
  ASSERT_TRUE(pid);
  kill(-std::stoi(*pid), SIGKILL);
  auto outcome = outcomes_.WaitFor("d1");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->EndedAs(RunnerEnd::kFailed));
  EXPECT_EQ(outcome->exit_code, 128 + SIGKILL);
}

TEST_F(LocalLauncherTest, ARestartReattachesARunningApplyAndNeverStartsItAgain) {
  Start(Options());
  auto request = Request("r1", "apply", Example("slow"));
  ASSERT_TRUE(launcher_->Launch(request));
  ASSERT_TRUE(WaitUntilLogSays("r1", "berth-slow-started"));
  auto pid = sys::ReadFile(dir_->Path() / "runs/r1/pid");
  launcher_.reset();  // berthd stops; the apply goes on
  Start(Options());
  ASSERT_TRUE(launcher_->Recover({request}, kNoneHeld));
  EXPECT_EQ(launcher_->Running(), 1);
  auto outcome = outcomes_.WaitFor("r1");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->succeeded) << outcome->FailureName() << ": " << outcome->message;
  EXPECT_EQ(*sys::ReadFile(dir_->Path() / "runs/r1/pid"), *pid);  // the same runner
  auto log = sys::ReadFile(dir_->Path() / "runs/r1/runner.log");
  size_t starts = 0;
  for (size_t at = 0; (at = log->find("berth-slow-started", at)) != std::string::npos; ++at)
    ++starts;
  EXPECT_EQ(starts, 2u);  // tofu echoes the command's output once, after its own line
  EXPECT_EQ(outcomes_.Count("r1"), 1u);
}

TEST_F(LocalLauncherTest, ARestartEndsARunThatFinishedMeanwhileFromItsResult) {
  Start(Options());
  auto request = Request("f1", "plan", Example("hello"));
  ASSERT_TRUE(launcher_->Launch(request));
  ASSERT_TRUE(outcomes_.WaitFor("f1"));
  launcher_.reset();
  Start(Options());
  ASSERT_TRUE(launcher_->Recover({request}, kNoneHeld));
  // Once per launcher: the second reads it from the result file.
  for (int i = 0; i < 200 && outcomes_.Count("f1") < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(outcomes_.Count("f1"), 2u);
  EXPECT_TRUE(outcomes_.WaitFor("f1")->succeeded);
}

// berthd stopped after it recorded the start (the pid file, empty) and before it wrote the pid:
// the run is never started again; its runner is found by its command line, or the run is lost.
TEST_F(LocalLauncherTest, ARunRecordedAsStartingIsFoundByItsCommandLineOrLostNeverStartedTwice) {
  Start(Options());
  const fs::path found = dir_->Path() / "runs/found", gone = dir_->Path() / "runs/gone";
  for (const fs::path& dir : {found, gone}) {
    fs::create_directories(dir);
    ASSERT_TRUE(sys::WriteFileAtomic(dir / "pid", ""));
  }
  // What a runner of run folder `found` looks like from outside: a group of its own, the folder
  // in its command line.
  auto runner =
      sys::Subprocess::Spawn({.argv = {"/bin/sh", "-c", "sleep 60", (found / "work").string()},
                              .new_process_group = true});
  ASSERT_TRUE(runner) << runner.error().ToString();
  ASSERT_TRUE(launcher_->Recover(
      {Request("found", "apply", Example("hello")), Request("gone", "apply", Example("hello"))},
      kNoneHeld));
  auto lost = outcomes_.WaitFor("gone");
  ASSERT_TRUE(lost);
  EXPECT_TRUE(lost->EndedAs(RunnerEnd::kLost)) << lost->FailureName() << ": " << lost->message;
  EXPECT_EQ(launcher_->Running(), 1);  // `found`, adopted
  EXPECT_EQ(*sys::ReadFile(found / "pid"), std::to_string(runner->Pid()));
  runner->Signal(SIGKILL);
  ASSERT_TRUE(outcomes_.WaitFor("found"));
  EXPECT_EQ(outcomes_.Count("found"), 1u);
  for (const fs::path& dir : {found, gone})
    EXPECT_FALSE(fs::exists(dir / "runner.log")) << dir << ": a runner was started";
}

// A runner in the runs folder that this launcher does not adopt is stopped, unless another
// berthd still tracks its run.
TEST_F(LocalLauncherTest, ARecoveryStopsUntrackedRunnersButNotHeldOnes) {
  Start(Options());
  ASSERT_TRUE(launcher_->Launch(Request("held", "apply", Example("slow"))));
  ASSERT_TRUE(launcher_->Launch(Request("orphan", "apply", Example("slow"))));
  ASSERT_TRUE(WaitUntilLogSays("held", "berth-slow-started"));
  ASSERT_TRUE(WaitUntilLogSays("orphan", "berth-slow-started"));
  launcher_.reset();
  Start(Options());
  ASSERT_TRUE(launcher_->Recover({}, [](const std::string& run) { return run == "held"; }));
  auto pid_of = [&](const char* run) {
    return static_cast<pid_t>(std::stoi(*sys::ReadFile(dir_->Path() / "runs" / run / "pid")));
  };
  // The first launcher started them from this process: their ends are reaped here.
  auto alive = [](pid_t pid) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) return false;
    auto stat = sys::ReadFile("/proc/" + std::to_string(pid) + "/stat");
    return stat && stat->find(") Z") == std::string::npos;
  };
  bool orphan_stopped = false;
  for (int i = 0; i < 600 && !orphan_stopped; ++i) {
    orphan_stopped = !alive(pid_of("orphan"));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(orphan_stopped);
  EXPECT_TRUE(alive(pid_of("held"))) << "the held run's runner was stopped";
  kill(-pid_of("held"), SIGKILL);
}

// Ended runs' folders beyond the newest ones kept are removed, but never a running run's, nor
// one that some berthd still holds.
TEST_F(LocalLauncherTest, EndedRunFoldersBeyondTheNewestKeptArePruned) {
  Start(Options());
  for (const char* id : {"old", "older-held", "new"}) {
    ASSERT_TRUE(launcher_->Launch(Request(id, "plan", Example("hello"))));
    ASSERT_TRUE(outcomes_.WaitFor(id));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // distinct start times
  }
  ASSERT_TRUE(launcher_->Launch(Request("running", "apply", Example("slow"))));
  ASSERT_TRUE(WaitUntilLogSays("running", "berth-slow-started"));
  launcher_->PruneEnded([](const std::string& run) { return run == "older-held"; }, 1);
  const fs::path runs = dir_->Path() / "runs";
  EXPECT_FALSE(fs::exists(runs / "old"));
  EXPECT_TRUE(fs::exists(runs / "older-held")) << "a held run's folder went";
  EXPECT_TRUE(fs::exists(runs / "new")) << "the newest ended run's folder went";
  EXPECT_TRUE(fs::exists(runs / "running" / "work")) << "a running run's folder went";
  ASSERT_TRUE(outcomes_.WaitFor("running"));
}

TEST_F(LocalLauncherTest, WithoutASandboxRunsAreRefusedWithWhyUnlessInsecureIsChosen) {
  LocalLauncherOptions options = Options();
  options.sandbox.reset();
  options.refusal = "local runs are refused: no user namespaces here";
  Start(options);
  ASSERT_TRUE(launcher_->Launch(Request("refused", "plan", Example("hello"))));
  auto refused = outcomes_.WaitFor("refused");
  ASSERT_TRUE(refused);
  EXPECT_FALSE(refused->succeeded);
  EXPECT_NE(refused->message.find("no user namespaces here"), std::string::npos)
      << refused->message;
  EXPECT_FALSE(fs::exists(dir_->Path() / "runs/refused/pid")) << "nothing was started";

  options.insecure = true;  // --insecure-local-runners: as berthd's own user, unsandboxed
  Start(options);
  ASSERT_TRUE(launcher_->Launch(Request("insecure", "plan", Example("hello"))));
  auto ran = outcomes_.WaitFor("insecure");
  ASSERT_TRUE(ran);
  EXPECT_TRUE(ran->succeeded) << ran->FailureName() << ": " << ran->message;
}

// Forks until refused; each child leaves the module's output and sleeps on.
constexpr const char* kForkBombModule = R"tf(resource "terraform_data" "bomb" {
  provisioner "local-exec" {
    command = <<-EOT
      python3 -c '
import os, time
n = 0
try:
    while n < 2000:
        if os.fork() == 0:
            os.close(1); os.close(2); time.sleep(600); os._exit(0)
        n += 1
    print("forked", n)
except OSError:
    print("fork refused after", n)
'
    EOT
  }
}
)tf";

TEST_F(LocalLauncherTest, AForkBombStopsAtTheProcessLimitAndDiesWithItsRun) {
  fs::create_directories(dir_->Path() / "bomb");
  ASSERT_TRUE(sys::WriteFileAtomic(dir_->Path() / "bomb/main.tf", kForkBombModule));
  fs::permissions(dir_->Path() / "bomb/main.tf", fs::perms::others_read, fs::perm_options::add);
  LocalLauncherOptions options = Options();
  options.max_processes = 256;
  Start(options);
  ASSERT_TRUE(launcher_->Launch(Request("bomb", "apply", dir_->Path() / "bomb")));
  auto outcome = outcomes_.WaitFor("bomb");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->succeeded) << outcome->FailureName() << ": " << outcome->message;
  auto log = sys::ReadFile(dir_->Path() / "runs/bomb/runner.log");
  ASSERT_TRUE(log);
  size_t refused = log->find("(local-exec): fork refused after ");
  ASSERT_NE(refused, std::string::npos) << *log;
  EXPECT_LT(std::stoi(log->substr(refused + 33)), 256) << *log;
  // Its sleeping children ended with the run's sandbox: none is left anywhere.
  int left = 0;
  for (int i = 0; i < 100; ++i) {
    left = 0;
    for (const auto& entry : fs::directory_iterator("/proc")) {
      auto cmdline = sys::ReadFile(entry.path() / "cmdline");
      if (cmdline && cmdline->find("while n < 2000") != std::string::npos) ++left;
    }
    if (left == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(left, 0) << "processes of the fork bomb outlived its run";
}

// A module whose one local-exec runs a Python program (fork_scripts.h).
std::string PythonModule(const std::string& script) {
  return "resource \"terraform_data\" \"python\" {\n  provisioner \"local-exec\" {\n"
         "    command = <<-EOT\n      python3 -c '\n" +
         script + "'\n    EOT\n  }\n}\n";
}

// The kernel counts processes per user: a root berthd gives each run at once a user of its
// own, so a fork bomb that holds nearly all its run may have leaves another run all of its own
// (64 processes at once here), as a user of its own named in its passwd file.
TEST_F(LocalLauncherTest, AForkBombInOneRunLeavesAnotherRunRoomToRun) {
  if (geteuid() != 0)
    GTEST_SKIP() << "a berthd that is not root gives each run a user namespace of its own";
  fs::create_directories(dir_->Path() / "bomb");
  // The bomb lets 24 children go: its own tofu needs threads to go on.
  ASSERT_TRUE(sys::WriteFileAtomic(dir_->Path() / "bomb/main.tf", PythonModule(HeldForkBomb(24))));
  fs::permissions(dir_->Path() / "bomb/main.tf", fs::perms::others_read, fs::perm_options::add);
  fs::create_directories(dir_->Path() / "forks");
  ASSERT_TRUE(sys::WriteFileAtomic(dir_->Path() / "forks/main.tf", PythonModule(ForksAtOnce(64))));
  fs::permissions(dir_->Path() / "forks/main.tf", fs::perms::others_read, fs::perm_options::add);
  LocalLauncherOptions options = Options(2);
  options.max_processes = 128;
  // Users no other test's runs have: the kernel counts a user's processes machine-wide.
  auto sandbox = Sandbox::Probe({.first = 60300, .count = 2, .exact = true});
  ASSERT_TRUE(sandbox) << sandbox.error().ToString();
  options.sandbox = *sandbox;
  Start(options);
  ASSERT_TRUE(launcher_->Launch(Request("bomb", "apply", dir_->Path() / "bomb")));
  // Runs outlive their launcher (a berthd restart): the bomb is stopped however the test ends.
  struct StopsTheBomb {
    LocalLauncher& launcher;
    OutcomeRecorder& outcomes;
    ~StopsTheBomb() {
      if (launcher.Cancel("bomb")) (void)outcomes.WaitFor("bomb");
    }
  } stops_the_bomb{*launcher_, outcomes_};
  std::string log;
  for (int i = 0; i < 600 && log.find("(local-exec): holding ") == std::string::npos; ++i) {
    auto read = sys::ReadFile(dir_->Path() / "runs/bomb/runner.log");
    log = read ? *read : "";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_NE(log.find("(local-exec): holding "), std::string::npos) << log;

  ASSERT_TRUE(launcher_->Launch(Request("other", "apply", dir_->Path() / "forks")));
  auto other = outcomes_.WaitFor("other");
  ASSERT_TRUE(other);
  EXPECT_TRUE(other->succeeded) << other->FailureName() << ": " << other->message;
  EXPECT_EQ(launcher_->Running(), 1) << "the bomb's run ended before the other one did";
  struct stat bomb_home {
  }, other_home{};
  ASSERT_EQ(stat((dir_->Path() / "runs/bomb/home").c_str(), &bomb_home), 0);
  ASSERT_EQ(stat((dir_->Path() / "runs/other/home").c_str(), &other_home), 0);
  EXPECT_EQ(bomb_home.st_uid, 60300u);
  EXPECT_EQ(other_home.st_uid, 60301u);
  auto other_log = sys::ReadFile(dir_->Path() / "runs/other/runner.log");
  ASSERT_TRUE(other_log);
  EXPECT_NE(other_log->find("(local-exec): forked 64"), std::string::npos) << *other_log;
  auto passwd = sys::ReadFile(dir_->Path() / "runs/other/passwd");
  ASSERT_TRUE(passwd);
  EXPECT_NE(passwd->find("berth-run:x:60301:60301:"), std::string::npos) << *passwd;
}

// A listening TCP socket on address (IPv4 or IPv6) at a port the kernel picks; the handshake
// completes without an accept, which is all a probe needs.
struct Listener {
  sys::Fd socket;
  int port = 0;
};
Listener ListenOn(const std::string& address) {
  const bool v6 = address.find(':') != std::string::npos;
  Listener listener{.socket = sys::Fd(::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0))};
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (v6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
    in6->sin6_family = AF_INET6;
    EXPECT_EQ(inet_pton(AF_INET6, address.c_str(), &in6->sin6_addr), 1);
    length = sizeof(sockaddr_in6);
  } else {
    auto* in4 = reinterpret_cast<sockaddr_in*>(&storage);
    in4->sin_family = AF_INET;
    EXPECT_EQ(inet_pton(AF_INET, address.c_str(), &in4->sin_addr), 1);
    length = sizeof(sockaddr_in);
  }
  EXPECT_EQ(bind(listener.socket.Get(), reinterpret_cast<sockaddr*>(&storage), length), 0)
      << address << ": " << strerror(errno);
  EXPECT_EQ(listen(listener.socket.Get(), 16), 0);
  EXPECT_EQ(getsockname(listener.socket.Get(), reinterpret_cast<sockaddr*>(&storage), &length), 0);
  listener.port = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port
                           : reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
  return listener;
}

// Listeners at the addresses a run with network: full may try (the metadata services, the
// machine's loopback as berthd's port and another daemon's), and a probe for a module's
// local-exec that says which it reaches.
struct ReachProbe {
  std::map<std::string, std::pair<std::string, Listener>> listening;  // name: address, listener

  void Listen(const std::string& name, const std::string& address) {
    listening.emplace(name, std::make_pair(address, ListenOn(address)));
  }
  uint16_t Port(const std::string& name) const {
    return static_cast<uint16_t>(listening.at(name).second.port);
  }
  std::string Command() const {
    std::string probe = "python3 -c 'import socket\n";
    for (const auto& [name, where] : listening) {
      probe += "try:\n  socket.create_connection((\"" + where.first + "\", " +
               std::to_string(where.second.port) + "), timeout=5).close(); print(\"reach " + name +
               ": yes\")\nexcept OSError as e: print(\"reach " + name + ": no\", e)\n";
    }
    return probe + "'";
  }
  // What the run's log says it reached, by name.
  std::map<std::string, bool> Reached(const std::string& log) const {
    std::map<std::string, bool> reach;
    for (const auto& [name, _] : listening) {
      // What the probe printed, not its command line that the log quotes too.
      const std::string said = "(local-exec): reach " + name + ": ";
      if (log.find(said + "yes") != std::string::npos) reach[name] = true;
      if (log.find(said + "no") != std::string::npos) reach[name] = false;
    }
    return reach;
  }
  std::map<std::string, bool> All(bool reached) const {
    std::map<std::string, bool> all;
    for (const auto& [name, _] : listening) all[name] = reached;
    return all;
  }
};

// What a probe run of runner reached, with its log for the failures' messages.
std::map<std::string, bool> LocalLauncherTest::ReachedBy(const ReachProbe& probe,
                                                         const std::string& run_id,
                                                         const nlohmann::json& runner,
                                                         std::string& log_seen) {
  LaunchTaking(run_id, probe.Command(), run_id, runner);
  auto outcome = outcomes_.WaitFor(run_id);
  EXPECT_TRUE(outcome && outcome->succeeded);
  auto log = sys::ReadFile(dir_->Path() / "runs" / run_id / "runner.log");
  log_seen = log ? *log : "no log";
  return probe.Reached(log_seen);
}

std::map<std::string, bool> LocalLauncherTest::ExpectHeldUnlessAllowed(const ReachProbe& probe,
                                                                       std::string& log_seen) {
  std::map<std::string, bool> held = probe.All(false);
  held["berthd"] = true;
  EXPECT_EQ(ReachedBy(probe, "held", {{"type", "local"}}, log_seen), held) << log_seen;
  EXPECT_EQ(ReachedBy(probe, "allowed",
                      {{"type", "local"}, {"network_allow", {"metadata", "loopback"}}}, log_seen),
            probe.All(true))
      << log_seen;
  return held;
}

// A root berthd's runs with network: full reach of this machine berthd's ports alone (and
// DNS), and no cloud metadata service, over IPv4 or IPv6; a runner's network_allow opens them
// for its runs, and only while they run: the same user's next run is held again.
TEST_F(LocalLauncherTest, ARunReachesNoMetadataServiceNorTheMachinesOtherPortsUnlessAllowed) {
  if (!testenv::InOwnNetwork())
    GTEST_SKIP() << "runs are held by a root berthd's firewall, tested in a network of its own";
  ReachProbe probe;
  probe.Listen("metadata", "169.254.169.254");
  probe.Listen("metadata6", "fd00:ec2::254");
  probe.Listen("ecs", "169.254.170.2");
  probe.Listen("database", "127.0.0.1");
  probe.Listen("berthd", "127.0.0.1");

  LocalLauncherOptions options = Options(1);  // one user for all three runs
  ASSERT_TRUE(options.sandbox && !options.sandbox->RunUids().empty());
  const uint16_t berthd_port = probe.Port("berthd");
  ASSERT_TRUE(RunFirewall::Install(options.sandbox->RunUids(), {berthd_port}));
  auto firewall = RunFirewall::Install(options.sandbox->RunUids(), {berthd_port});
  ASSERT_TRUE(firewall) << firewall.error().ToString();
  auto jumps = sys::RunToCompletion({.argv = {"/usr/sbin/iptables", "-w", "-S", "OUTPUT"}});
  ASSERT_TRUE(jumps);
  EXPECT_EQ(jumps->output.find("-j BERTH-RUNS-"), jumps->output.rfind("-j BERTH-RUNS-"))
      << "a start after another writes the chain anew, not a second jump: " << jumps->output;
  options.firewall = *firewall;
  Start(options);

  std::string log_seen;  // the last run's, for the failures' messages
  const std::map<std::string, bool> held = ExpectHeldUnlessAllowed(probe, log_seen);
  EXPECT_EQ(ReachedBy(probe, "held-again", {{"type", "local"}}, log_seen), held)
      << "the allowance outlived its run: " << log_seen;
  // A berthd that stops with no run left takes its rules with it.
  ASSERT_TRUE((*firewall)->Remove());
  for (const char* tool : {"/usr/sbin/iptables", "/usr/sbin/ip6tables"}) {
    auto rules = sys::RunToCompletion({.argv = {tool, "-w", "-S"}});
    ASSERT_TRUE(rules);
    EXPECT_EQ(rules->output.find("BERTH-RUNS-"), std::string::npos) << rules->output;
  }
}

// The network the unprivileged test below runs in, made by root and entered before it drops to
// a user that is not root: loopback with the metadata addresses and a second address of "the
// machine" on it; a way out for pasta to copy (a veth whose gateway answers nothing, enough for
// connections to this namespace's own addresses); a /dev/net/tun that user may open (as
// Debian's udev makes it; this machine's is root's alone); the test tools' cache it can reach.
constexpr const char* kUnprivilegedNetworkSetup = R"(set -e
ip link set lo up
for a in 169.254.169.254 169.254.170.2 100.100.100.200 198.51.100.7; do ip addr add $a/32 dev lo; done
ip -6 addr add fd00:ec2::254/128 dev lo
ip link add berth-out type veth peer name berth-out-peer
ip link set berth-out up
ip link set berth-out-peer up
ip addr add 192.0.2.2/24 dev berth-out
ip route add default via 192.0.2.1 dev berth-out
ip -6 addr add fd00:b::2/64 dev berth-out nodad
ip -6 route add default via fd00:b::1 dev berth-out
mknod -m 0666 "$SCRATCH/tun" c 10 200
mount --bind "$SCRATCH/tun" /dev/net/tun
# The test tools are in root's cache, in a home only root may enter: the cache alone is shown.
mkdir "$SCRATCH/cache"
mount --bind "$HOME/.cache" "$SCRATCH/cache"
mount -t tmpfs -o mode=0755 berth-home "$HOME"
mkdir "$HOME/.cache"
mount --bind "$SCRATCH/cache" "$HOME/.cache"
exec setpriv --reuid=60400 --regid=60400 --clear-groups "$@"
)";

// A berthd that is not root has no user per run to hold with a firewall: each run with
// network: full gets a network of its own (pasta), where the metadata services and the
// machine's other addresses are routed nowhere and of its loopback only berthd's port is
// forwarded; the run cannot change its routes. network_allow opens them for its run alone.
TEST_F(LocalLauncherTest, AnUnprivilegedBerthdsRunsReachNoMetadataServiceNorTheMachinesPorts) {
  if (geteuid() == 0) {
    auto self = sys::SelfExecutable();
    ASSERT_TRUE(self);
    sys::SpawnOptions again{
        .argv = {"/usr/bin/unshare", "--mount", "--net", "--", "/bin/sh", "-c",
                 kUnprivilegedNetworkSetup, "setup", self->string(),
                 "--gtest_filter=LocalLauncherTest."
                 "AnUnprivilegedBerthdsRunsReachNoMetadataServiceNorTheMachinesPorts"}};
    again.env = std::vector<std::string>{"SCRATCH=" + dir_->Path().string(),
                                         "BERTH_TEST_UNPRIVILEGED_NETWORK=1"};
    for (char** entry = environ; *entry != nullptr; ++entry) again.env->emplace_back(*entry);
    auto done = sys::RunToCompletion(std::move(again));
    ASSERT_TRUE(done) << done.error().ToString();
    EXPECT_EQ(done->exit_code, 0) << done->output;
    EXPECT_NE(done->output.find("[  PASSED  ] 1 test"), std::string::npos) << done->output;
    return;
  }
  if (std::getenv("BERTH_TEST_UNPRIVILEGED_NETWORK") == nullptr)
    GTEST_SKIP() << "root makes this test's network, then runs it as a user that is not root";
  ReachProbe probe;
  probe.Listen("metadata", "169.254.169.254");
  probe.Listen("metadata6", "fd00:ec2::254");
  probe.Listen("ecs", "169.254.170.2");
  probe.Listen("machine", "198.51.100.7");
  probe.Listen("database", "127.0.0.1");
  probe.Listen("berthd", "127.0.0.1");

  LocalLauncherOptions options = Options(1);
  ASSERT_TRUE(options.sandbox && options.sandbox->RunUids().empty());
  auto network = UserModeNetwork::Probe({probe.Port("berthd")});
  ASSERT_TRUE(network) << network.error().ToString();
  options.user_mode_network = std::make_shared<const UserModeNetwork>(std::move(*network));
  Start(options);

  std::string log_seen;
  const std::map<std::string, bool> held = ExpectHeldUnlessAllowed(probe, log_seen);
  std::map<std::string, bool> metadata_only = held;
  for (const char* name : {"metadata", "metadata6", "ecs"}) metadata_only[name] = true;
  EXPECT_EQ(
      ReachedBy(probe, "metadata", {{"type", "local"}, {"network_allow", {"metadata"}}}, log_seen),
      metadata_only)
      << log_seen;
  // The run is root of nothing: its routes stay as they were written.
  LaunchTaking("unroute", "ip route del prohibit 169.254.169.254/32", "unroute",
               {{"type", "local"}});
  auto unrouted = outcomes_.WaitFor("unroute");
  ASSERT_TRUE(unrouted);
  EXPECT_FALSE(unrouted->succeeded);
  auto unroute_log = sys::ReadFile(dir_->Path() / "runs/unroute/runner.log");
  ASSERT_TRUE(unroute_log);
  EXPECT_NE(unroute_log->find("Operation not permitted"), std::string::npos) << *unroute_log;
  // pasta ends at SIGTERM: a cancel reaches the runner, which stops TF, and not its network.
  ExpectACancelStopsTheRunner("stopped");
}

// Empty files fill no disk limit, but counting millions of them held up the launcher at each
// check: past max_folder_entries a run with a disk limit is stopped as one past it.
TEST_F(LocalLauncherTest, ARunOfMoreFilesThanTheLauncherCountsIsStoppedSayingSo) {
  LocalLauncherOptions options = Options();
  options.max_folder_entries = 2000;
  Start(options);
  LaunchTaking("files", "i=0; while [ $i -lt 200000 ]; do : > f-$i; i=$((i+1)); done", "files",
               {{"type", "local"}, {"limits", {{"disk", "1Gi"}}}});
  auto outcome = outcomes_.WaitFor("files");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->EndedAs(RunnerEnd::kLimitExceeded)) << outcome->FailureName();
  EXPECT_NE(outcome->message.find("more than 2000 files and folders"), std::string::npos)
      << outcome->message;
  std::error_code ec;
  EXPECT_FALSE(fs::exists(dir_->Path() / "runs/files/work/f-150000", ec)) << "it went on";
}

// berthd's secrets must not be where every run is shown: a folder on the runs' PATH, the
// runner binary, a system folder. KeepsOutOfRuns names the file and the folder.
TEST_F(LocalLauncherTest, ASecretInsideWhatEveryRunSeesIsNamedWithItsFolder) {
  LocalLauncherOptions options = Options();
  const fs::path tools = dir_->Path() / "tools";
  options.environment.push_back("PATH=" + tools.string() + ":/usr/bin");
  Start(options);
  auto refused = launcher_->KeepsOutOfRuns({dir_->Path() / "data", tools / "keys"});
  ASSERT_FALSE(refused);
  EXPECT_NE(
      refused.error().message.find((tools / "keys").string() + " is inside " + tools.string()),
      std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(launcher_->KeepsOutOfRuns({"/usr/local/etc/berth.key"}));
  EXPECT_TRUE(launcher_->KeepsOutOfRuns({dir_->Path() / "data", "/etc/berth/tls.key", ""}));
}

// What a run leaves as its result is the module's to replace: with a link to an endless device,
// a FIFO no one will write, or a link to another run's result. berthd follows, waits on and
// takes none of them (it used to read /dev/zero until the kernel killed it, hang its launcher
// on the FIFO, and take the other run's result as this one's), neither when the run ends nor
// when a restarted berthd finds the ended run again.
TEST_F(LocalLauncherTest, AResultFileTheModuleReplacedIsRefusedNeverFollowedOrWaitedOn) {
  Start(Options());
  ASSERT_TRUE(launcher_->Launch(Request("honest", "plan", Example("hello"))));
  ASSERT_TRUE(outcomes_.WaitFor("honest"));
  const std::string result = "$(dirname $BERTH_TOKEN_FILE)/out/result.json";
  const std::map<std::string, std::string> attacks = {
      {"to-zero", "ln -sf /dev/zero " + result},
      // Someone reads it while the runner writes, so that the runner itself goes on.
      {"fifo", "mkfifo " + result + " && (cat " + result + " >/dev/null 2>&1 &)"},
      {"to-other",
       "ln -sf " + (dir_->Path() / "runs/honest/out/result.json").string() + " " + result}};
  for (const auto& [run, attack] : attacks) LaunchTaking(run, attack, "hostile", {});
  auto refused = [&](const std::string& run, const std::optional<RunOutcome>& outcome) {
    ASSERT_TRUE(outcome) << run;
    EXPECT_FALSE(outcome->succeeded) << run;
    EXPECT_FALSE(outcome->result) << run << " was given a result that is not its own";
    EXPECT_NE(outcome->message.find("its result file was refused"), std::string::npos)
        << run << ": " << outcome->message;
  };
  for (const auto& [run, attack] : attacks) refused(run, outcomes_.WaitFor(run));
  EXPECT_NE(outcomes_.Last("to-zero")->message.find("a symbolic link"), std::string::npos);
  EXPECT_NE(outcomes_.Last("fifo")->message.find("a FIFO"), std::string::npos);

  // A berthd that stopped before it recorded their ends finds them again, as safely.
  launcher_.reset();
  Start(Options());
  std::vector<LaunchRequest> ended;
  ended.reserve(attacks.size());
  for (const auto& [run, attack] : attacks)
    ended.push_back(Request(run, "apply", dir_->Path() / "greedy"));
  ASSERT_TRUE(launcher_->Recover(ended, kNoneHeld));
  for (const auto& [run, attack] : attacks) {
    for (int i = 0; i < 200 && outcomes_.Count(run) < 2; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_EQ(outcomes_.Count(run), 2u) << run;
    refused(run, outcomes_.Last(run));
  }
}

class LocalRunLimitsTest : public LocalLauncherTest {
 protected:
  // Runs the greedy module with take as its command, under limits; its outcome.
  std::optional<RunOutcome> Take(const std::string& run_id, const std::string& take,
                                 const nlohmann::json& limits, bool with_cgroups = true) {
    LocalLauncherOptions options = Options();
    if (with_cgroups) {
      auto cgroups = CgroupHost::Probe();
      EXPECT_TRUE(cgroups) << cgroups.error().ToString();
      if (cgroups) options.cgroups = *cgroups;
    } else {
      options.cgroups_refusal = "no control groups in this test";
    }
    Start(options);
    LaunchTaking(run_id, take, "greedy", {{"type", "local"}, {"limits", limits}});
    return outcomes_.WaitFor(run_id);
  }
  void SkipUnlessRoot() {
    if (geteuid() != 0) GTEST_SKIP() << "control groups are a root berthd's";
  }
  // Where the memory controller keeps the control group of run name (under this process's).
  static fs::path MemoryGroupOf(const std::string& name) {
    auto own = sys::ReadFile("/proc/self/cgroup");
    EXPECT_TRUE(own);
    const size_t at = own ? own->find(":memory:") : std::string::npos;
    EXPECT_NE(at, std::string::npos);
    if (at == std::string::npos) return {};
    const std::string group = own->substr(at + 8, own->find('\n', at) - at - 8);
    return fs::path("/sys/fs/cgroup/memory") / fs::path(group).relative_path() / "berth-runs" /
           name;
  }
};

TEST_F(LocalRunLimitsTest, ARunThatExhaustsItsMemoryIsKilledByTheKernelAndSaysSo) {
  SkipUnlessRoot();
  auto outcome =
      Take("memory", "python3 -c 'b = bytearray(2 << 30); print(len(b))'", {{"memory", "384Mi"}});
  ASSERT_TRUE(outcome);
  EXPECT_FALSE(outcome->succeeded);
  EXPECT_TRUE(outcome->EndedAs(RunnerEnd::kOomKilled)) << outcome->FailureName();
  EXPECT_NE(outcome->message.find("limits.memory"), std::string::npos) << outcome->message;
  EXPECT_EQ(sys::ReadFile(dir_->Path() / "runs/memory/runner.log")->find("2147483648"),
            std::string::npos)
      << "the allocation went through";
  // Its group goes with it, even when berthd stops while its processes are still leaving.
  launcher_.reset();
  EXPECT_FALSE(fs::exists(MemoryGroupOf("memory"))) << "the run's control group outlived it";
}

// A run with limits that ends while berthd is away leaves its control group behind; the next
// berthd's recovery removes it with the run's end (or, while its processes are still dying,
// as soon as they are gone).
TEST_F(LocalRunLimitsTest, ARunThatEndedWhileBerthdWasAwayLeavesNoControlGroup) {
  SkipUnlessRoot();
  const fs::path left = MemoryGroupOf("away");
  ASSERT_FALSE(left.empty());
  LocalLauncherOptions options = Options();
  auto cgroups = CgroupHost::Probe();
  ASSERT_TRUE(cgroups) << cgroups.error().ToString();
  options.cgroups = *cgroups;
  Start(options);
  const LaunchRequest request =
      TakingRequest("away", "echo berth-away-started; sleep 1", "greedy",
                    {{"type", "local"}, {"limits", {{"memory", "256Mi"}}}});
  ASSERT_TRUE(launcher_->Launch(request));
  ASSERT_TRUE(WaitUntilLogSays("away", "berth-away-started"));
  launcher_.reset();  // berthd stops; the run goes on, and ends
  EXPECT_TRUE(fs::exists(left)) << left;
  auto pid = sys::ReadFile(dir_->Path() / "runs/away/pid");
  ASSERT_TRUE(pid);
  // Ended: its sandbox's outer process is gone, or a zombie nobody reaps (the launcher that
  // would have is gone).
  auto running = [&] {
    auto stat = sys::ReadFile("/proc/" + *pid + "/stat");
    return stat && stat->find(") Z ") == std::string::npos;
  };
  for (int i = 0; i < 600 && running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_FALSE(running());
  Start(options);
  ASSERT_TRUE(launcher_->Recover({request}, kNoneHeld));
  auto outcome = outcomes_.WaitFor("away");
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->succeeded) << outcome->FailureName() << ": " << outcome->message;
  // Removed once the last of the run's processes has left it (they may still be dying).
  for (int i = 0; i < 300 && fs::exists(left); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(fs::exists(left)) << left << " outlived its run";
}

TEST_F(LocalRunLimitsTest, ARunPastItsCpuTimeIsStoppedAndSaysWhichLimit) {
  SkipUnlessRoot();
  auto outcome = Take("cpu", "python3 -c 'while True: pass'", {{"cpu_seconds", 2}});
  ASSERT_TRUE(outcome);
  EXPECT_FALSE(outcome->succeeded);
  EXPECT_TRUE(outcome->EndedAs(RunnerEnd::kLimitExceeded)) << outcome->FailureName();
  EXPECT_NE(outcome->message.find("limits.cpu_seconds"), std::string::npos) << outcome->message;
  auto warnings = outcomes_.Warnings("cpu");
  ASSERT_FALSE(warnings.empty());
  EXPECT_TRUE(warnings.back().starts_with(std::string(kLimitExceeded) + ": ")) << warnings.back();
}

TEST_F(LocalRunLimitsTest, ARunThatFillsItsDiskIsStoppedAndNoFileOutgrowsTheLimit) {
  auto outcome = Take("disk",
                      "i=0; while [ $i -lt 200 ]; do head -c 4194304 /dev/zero > fill-$i; "
                      "i=$((i+1)); sleep 0.2; done; head -c 200000000 /dev/zero > one-big-file",
                      {{"disk", "32Mi"}});
  ASSERT_TRUE(outcome);
  EXPECT_FALSE(outcome->succeeded);
  EXPECT_TRUE(outcome->EndedAs(RunnerEnd::kLimitExceeded)) << outcome->FailureName();
  EXPECT_NE(outcome->message.find("limits.disk"), std::string::npos) << outcome->message;
  std::error_code ec;
  EXPECT_FALSE(fs::exists(dir_->Path() / "runs/disk/work/fill-150", ec)) << "it wrote on";
}

// What cannot be held is refused, not ignored: without control groups a memory limit stops
// the run before it starts, naming the limit and why.
TEST_F(LocalRunLimitsTest, ALimitThisBerthdCannotHoldIsRefusedNamingIt) {
  auto outcome = Take("refused", "echo ran", {{"memory", "1Gi"}}, false);
  ASSERT_TRUE(outcome);
  EXPECT_FALSE(outcome->succeeded);
  EXPECT_NE(outcome->message.find("sets limits.memory, which this berthd cannot enforce: no "
                                  "control groups in this test"),
            std::string::npos)
      << outcome->message;
  std::error_code ec;
  EXPECT_FALSE(fs::exists(dir_->Path() / "runs/refused/runner.log", ec)) << "the runner ran";
}

TEST_F(LocalLauncherTest, ARootBerthdsRunsAreTheUserItNames) {
  if (geteuid() != 0) GTEST_SKIP() << "only a root berthd drops runs to another user";
  LocalLauncherOptions options = Options();
  auto sandbox =
      Sandbox::Probe({.first = 54321, .count = 4, .exact = true});  // --local-runner-uid=54321
  ASSERT_TRUE(sandbox) << sandbox.error().ToString();
  options.sandbox = *sandbox;
  Start(options);
  ASSERT_TRUE(launcher_->Launch(Request("uid", "apply", dir_->Path() / "env-module")));
  auto outcome = outcomes_.WaitFor("uid");
  ASSERT_TRUE(outcome);
  ASSERT_TRUE(outcome->succeeded) << outcome->FailureName() << ": " << outcome->message;
  struct stat written {};
  ASSERT_EQ(stat((dir_->Path() / "runs/uid/home/env.txt").c_str(), &written), 0);
  EXPECT_EQ(written.st_uid, 54321u) << "the module wrote as this user";
}

// A module that pins berth's test provider in its lock file, and whose apply tries to change
// the provider package its run's plugin cache holds.
constexpr const char* kLockedModule = R"(terraform {
  required_providers {
    berthtest = { source = "berth/berthtest", version = "0.1.0" }
  }
}
resource "terraform_data" "poke" {
  provisioner "local-exec" {
    command = <<-EOT
      f=$(ls /tmp/plugin-cache/registry.opentofu.org/berth/berthtest/0.1.0/linux_amd64/terraform-provider-berthtest*)
      if echo changed >> "$f" 2>/dev/null; then echo written; else echo refused; fi > $HOME/poke.txt
    EOT
  }
}
)";

// A module with no provider whose apply plants, in its run's plugin cache, a package of its
// own where berthtest's goes: an executable, a link to a file of berthd's, a FIFO.
constexpr const char* kPlantingModule = R"(resource "terraform_data" "plant" {
  provisioner "local-exec" {
    command = <<-EOT
      p=/tmp/plugin-cache/registry.opentofu.org/berth/berthtest/0.1.0/linux_amd64
      mkdir -p $p && printf '#!/bin/sh\necho planted\n' > $p/terraform-provider-berthtest_v0.1.0
      chmod +x $p/terraform-provider-berthtest_v0.1.0
      ln -s ${var.secret} $p/stolen && mkfifo $p/pipe
    EOT
  }
}
variable "secret" { type = string }
)";

// Runs whose providers come from a packed mirror (zip files, as a registry serves them), so
// that each init without a cache unpacks them, of runners that have a shared provider cache.
class SharedProvidersTest : public LocalLauncherTest {
 protected:
  void SetUp() override {
    LocalLauncherTest::SetUp();
    fs::create_directories(Locked());
    ASSERT_TRUE(sys::WriteFileAtomic(Locked() / "main.tf", kLockedModule));
    // The test provider of the tools' unpacked mirror, zipped as a registry serves it.
    auto tools_config = sys::ReadFile(tofu_->CliConfig());
    ASSERT_TRUE(tools_config);
    const std::vector<fs::path> mirrors = PathsInCliConfig(*tools_config);
    ASSERT_EQ(mirrors.size(), 1u);
    const fs::path zip = Packed() / "registry.opentofu.org/berth/berthtest" /
                         "terraform-provider-berthtest_0.1.0_linux_amd64.zip";
    fs::create_directories(zip.parent_path());
    Run({"/usr/bin/zip", "-q", "-j", zip.string(),
         (mirrors[0] / "registry.opentofu.org/berth/berthtest/0.1.0/linux_amd64" /
          "terraform-provider-berthtest_v0.1.0")
             .string()},
        dir_->Path(), {});
    ASSERT_TRUE(sys::WriteFileAtomic(PackedConfig(),
                                     "provider_installation {\n"
                                     "  filesystem_mirror {\n"
                                     "    path = \"" +
                                         Packed().string() +
                                         "\"\n"
                                         "  }\n"
                                         "}\n"));
    // The lock file a user commits, from an init of their own.
    fs::path scratch = dir_->Path() / "scratch";
    fs::create_directories(scratch);
    fs::copy_file(Locked() / "main.tf", scratch / "main.tf");
    Tofu({"init", "-input=false", "-no-color"}, scratch, PackedConfig());
    fs::copy_file(scratch / ".terraform.lock.hcl", Locked() / ".terraform.lock.hcl");
    fs::create_directories(Planting());
    ASSERT_TRUE(sys::WriteFileAtomic(Planting() / "main.tf", kPlantingModule));
    ASSERT_TRUE(sys::WriteFileAtomic(Secret(), "the-secret-berthd-keeps"));
    ASSERT_TRUE(sys::WriteFileAtomic(dir_->Path() / "plant.json",
                                     nlohmann::json{{"secret", Secret().string()}}.dump()));
    for (const fs::path& file :
         {Locked() / "main.tf", Locked() / ".terraform.lock.hcl", Planting() / "main.tf",
          dir_->Path() / "plant.json", PackedConfig()})
      fs::permissions(file, fs::perms::others_read, fs::perm_options::add);
  }

  fs::path Locked() const { return dir_->Path() / "locked"; }
  fs::path Planting() const { return dir_->Path() / "planting"; }
  fs::path Packed() const { return dir_->Path() / "packed"; }
  fs::path PackedConfig() const { return dir_->Path() / "packed.tfrc"; }
  fs::path Secret() const { return dir_->Path() / "secret"; }
  fs::path Shared(const std::string& runner) const {
    return dir_->Path() / "providers" / "_" / runner;
  }
  // The berthtest packages runner's shared cache holds.
  std::vector<fs::path> SharedPackages(const std::string& runner) const {
    std::vector<fs::path> packages;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(
             Shared(runner) / "registry.opentofu.org/berth/berthtest/0.1.0/linux_amd64", ec))
      packages.push_back(entry.path());
    return packages;
  }
  // Harvests follow a run's reported end: a bounded wait for the shared cache to hold count.
  bool WaitForSharedPackages(const std::string& runner, size_t count) const {
    for (int i = 0; i < 600 && SharedPackages(runner).size() < count; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return SharedPackages(runner).size() == count;
  }

  void Tofu(std::vector<std::string> args, const fs::path& cwd, const fs::path& cli_config) {
    args.insert(args.begin(), tofu_->Tofu().string());
    std::vector<std::string> env;
    for (const std::string& entry : tofu_->Environment(dir_->Path())) {
      if (entry.starts_with("TF_CLI_CONFIG_FILE=") || entry.starts_with("TF_PLUGIN_CACHE_DIR="))
        continue;
      env.push_back(entry);
    }
    env.push_back("TF_CLI_CONFIG_FILE=" + cli_config.string());
    Run(args, cwd, env);
  }

  void Run(const std::vector<std::string>& args, const fs::path& cwd,
           const std::vector<std::string>& env) {
    auto child = sys::Subprocess::Spawn({.argv = args,
                                         .env = env,
                                         .working_dir = cwd.string(),
                                         .output_path = (dir_->Path() / "tofu.log").string()});
    ASSERT_TRUE(child) << child.error().ToString();
    ASSERT_EQ(child->Wait(), 0) << *sys::ReadFile(dir_->Path() / "tofu.log");
  }

  LocalLauncherOptions SharedOptions() {
    LocalLauncherOptions options = Options();
    options.shared_providers = dir_->Path() / "providers";
    return options;
  }

  LaunchRequest RunOf(const std::string& runner, const std::string& run_id, const std::string& op,
                      const fs::path& module) {
    LaunchRequest request = Request(run_id, op, module);
    request.runner_id = runner;
    request.invocation.providers = Packed().string();
    if (module == Planting()) request.invocation.config = (dir_->Path() / "plant.json").string();
    return request;
  }

  static std::string Text(const fs::path& file) {
    auto text = sys::ReadFile(file);
    return text ? *text : "";
  }
  std::string RunLog(const std::string& run_id) const {
    return Text(dir_->Path() / "runs" / run_id / "runner.log");
  }

  void ExpectSucceeds(const std::string& run_id) {
    auto outcome = outcomes_.WaitFor(run_id);
    ASSERT_TRUE(outcome) << run_id;
    EXPECT_TRUE(outcome->succeeded)
        << run_id << ": " << outcome->FailureName() << ": " << outcome->message << "\n"
        << RunLog(run_id);
  }
};

constexpr std::string_view kLent =
    "from the runner's shared provider cache: registry.opentofu.org/berth/berthtest 0.1.0";

TEST_F(SharedProvidersTest, APackageARunFetchedServesItsRunnersNextRunsReadOnlyAndNoOtherRunner) {
  Start(SharedOptions());
  ASSERT_TRUE(launcher_->Launch(RunOf("r1", "first", "plan", Locked())));
  ExpectSucceeds("first");
  EXPECT_EQ(RunLog("first").find(kLent), std::string::npos) << "the shared cache was empty";
  ASSERT_TRUE(WaitForSharedPackages("r1", 1));
  const fs::path kept = SharedPackages("r1")[0];
  const fs::path binary = kept / "terraform-provider-berthtest_v0.1.0";
  EXPECT_EQ(fs::status(binary).permissions(), fs::perms(0555));
  auto before = sys::ReadFile(binary);
  ASSERT_TRUE(before);

  // The next run of r1 unpacks nothing: tofu uses the package its lock file pins, linked.
  ASSERT_TRUE(launcher_->Launch(RunOf("r1", "second", "apply", Locked())));
  ExpectSucceeds("second");
  EXPECT_NE(RunLog("second").find(kLent), std::string::npos) << RunLog("second");
  EXPECT_NE(RunLog("second").find("from the shared cache directory"), std::string::npos)
      << RunLog("second");
  // ...and cannot change it: the shared cache is read-only in its sandbox.
  EXPECT_EQ(Text(dir_->Path() / "runs/second/home/poke.txt"), "refused\n");
  EXPECT_EQ(Text(binary), *before);
  EXPECT_EQ(SharedPackages("r1").size(), 1u);

  // Another runner's runs have a cache of their own.
  ASSERT_TRUE(launcher_->Launch(RunOf("r2", "elsewhere", "plan", Locked())));
  ExpectSucceeds("elsewhere");
  EXPECT_EQ(RunLog("elsewhere").find(kLent), std::string::npos);
}

TEST_F(SharedProvidersTest, APackageARunPlantsIsNeverLentToAModuleWhoseLockFileNamesAnother) {
  Start(SharedOptions());
  ASSERT_TRUE(launcher_->Launch(RunOf("r1", "planter", "apply", Planting())));
  ExpectSucceeds("planter");
  ASSERT_TRUE(WaitForSharedPackages("r1", 1));
  const fs::path planted = SharedPackages("r1")[0];
  EXPECT_NE(Text(planted / "terraform-provider-berthtest_v0.1.0").find("echo planted"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(fs::symlink_status(planted / "stolen")));
  EXPECT_FALSE(fs::exists(fs::symlink_status(planted / "pipe")));

  // The module with the real provider's lock file is lent nothing, fetches its own and works;
  // the real package is kept beside the planted one.
  ASSERT_TRUE(launcher_->Launch(RunOf("r1", "honest", "plan", Locked())));
  ExpectSucceeds("honest");
  EXPECT_EQ(RunLog("honest").find(kLent), std::string::npos) << RunLog("honest");
  EXPECT_EQ(RunLog("honest").find("planted"), std::string::npos);
  ASSERT_TRUE(WaitForSharedPackages("r1", 2));
}

}  // namespace
}  // namespace berth::launch
