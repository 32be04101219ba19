// The runner's command line, row by row: what parses, into what, and what is refused.
#include "runner/cli.h"

#include <gtest/gtest.h>

namespace berth::runner {
namespace {

using Args = std::vector<std::string>;

CommandLine Parse(const Args& args) { return ParseCommandLine(args); }

TEST(RunnerCli, BareRunnerIsUsage) {
  auto line = Parse({});
  EXPECT_FALSE(line.error);
  EXPECT_TRUE(std::holds_alternative<UsageCommand>(line.command));
}

TEST(RunnerCli, VersionForms) {
  auto plain = Parse({"--version"});
  ASSERT_FALSE(plain.error);
  EXPECT_FALSE(std::get<VersionCommand>(plain.command).raw);
  auto raw = Parse({"--version=raw"});
  ASSERT_FALSE(raw.error);
  EXPECT_TRUE(std::get<VersionCommand>(raw.command).raw);
  auto sub = Parse({"version"});
  ASSERT_FALSE(sub.error);
  EXPECT_TRUE(std::get<VersionCommand>(sub.command).verbose);
  EXPECT_TRUE(Parse({"--version=full"}).error);
  EXPECT_TRUE(Parse({"version", "extra"}).error);
}

TEST(RunnerCli, CopyNeedsExactlyOneArgument) {
  auto ok = Parse({"copy", "/berth/bin/runner"});
  ASSERT_FALSE(ok.error);
  EXPECT_EQ(std::get<CopyCommand>(ok.command).arguments, Args{"/berth/bin/runner"});
  EXPECT_TRUE(Parse({"copy"}).error);
  EXPECT_TRUE(Parse({"copy", "a", "b"}).error);
  EXPECT_TRUE(Parse({"copy", "--force", "a"}).error);
}

TEST(RunnerCli, RunTakesEveryFlagOfTheContract) {
  auto line = Parse({"-v=3",
                     "run",
                     "--op=apply",
                     "--module",
                     "/m.tar.gz",
                     "--path=envs/dev",
                     "--namespace=team",
                     "--name=net",
                     "--workdir=/tmp/w",
                     "--binary=tofu",
                     "--bin=/usr/bin/tofu",
                     "--providers=/mirror",
                     "--config=/in.tfvars.json",
                     "--inputs-hash=sha256:" + std::string(64, 'a'),
                     "--backend-config=a=b",
                     "--backend-config",
                     "/b.hcl",
                     "--lock-timeout=30s",
                     "--stop-timeout=10s",
                     "--timeout=1h",
                     "--force-unlock=abc",
                     "--plan-file=/p",
                     "--approved-plan",
                     std::string(64, 'c'),
                     "--plan-key-file=/k",
                     "--allow-destroy",
                     "--restore-from=/s",
                     "--event-object=Terraform/team/net",
                     "--job-name=j",
                     "--state-backend=http",
                     "--outputs=/o",
                     "--image=img:1",
                     "--result=/r",
                     "--result-max-bytes=2048",
                     "--logging-format=json",
                     "--vmodule=run=4,cli=2"});
  ASSERT_FALSE(line.error) << line.error->message;
  EXPECT_EQ(line.logging.verbosity, 3);
  EXPECT_EQ(line.logging.format, "json");
  const auto& o = std::get<RunCommand>(line.command).options;
  EXPECT_EQ(o.op, "apply");
  EXPECT_EQ(o.module, "/m.tar.gz");
  EXPECT_EQ(o.path, "envs/dev");
  EXPECT_EQ(o.backend_config, (Args{"a=b", "/b.hcl"}));
  EXPECT_EQ(o.lock_timeout, std::chrono::seconds(30));
  EXPECT_EQ(o.timeout, std::chrono::hours(1));
  EXPECT_TRUE(o.allow_destroy);
  EXPECT_EQ(o.result_max_bytes, 2048u);
  EXPECT_EQ(o.event_object, "Terraform/team/net");
  EXPECT_EQ(o.state_backend, "http");
}

TEST(RunnerCli, RunDefaultsMatchTheContract) {
  auto line = Parse({"run", "--op=plan"});
  ASSERT_FALSE(line.error);
  const auto& o = std::get<RunCommand>(line.command).options;
  EXPECT_EQ(o.module, "/berth/module");
  EXPECT_EQ(o.binary, "auto");
  EXPECT_EQ(o.lock_timeout, std::chrono::minutes(5));
  EXPECT_EQ(o.stop_timeout, std::chrono::minutes(1));
  EXPECT_FALSE(o.timeout);
  EXPECT_EQ(o.result, "/dev/termination-log");
  EXPECT_EQ(o.result_max_bytes, 4096u);
  EXPECT_EQ(line.logging.flush_frequency, std::chrono::seconds(5));
}

TEST(RunnerCli, GatewayModeTakesTheRunAndLeavesTheModuleToTheBundle) {
  auto line = Parse({"run", "--op=apply", "--gateway=https://berthd:8480/", "--run-id=d-1",
                     "--token-file=/berth/token/token"});
  ASSERT_FALSE(line.error) << line.error->message;
  const auto& o = std::get<RunCommand>(line.command).options;
  EXPECT_EQ(o.gateway, "https://berthd:8480");
  EXPECT_EQ(o.run_id, "d-1");
  EXPECT_EQ(o.token_file, "/berth/token/token");
  EXPECT_EQ(o.module, "");  // fetched from the gateway
  auto local = Parse({"run", "--op=apply", "--gateway=http://b", "--run-id=r", "--module=/m"});
  EXPECT_EQ(std::get<RunCommand>(local.command).options.module, "/m");
}

struct Refused {
  Args args;
  std::string names;  // the flag or rule the error must mention
  bool is_run;        // whether a result is still owed
};

class RunnerCliRefuses : public ::testing::TestWithParam<Refused> {};

TEST_P(RunnerCliRefuses, NamingTheFlag) {
  auto line = Parse(GetParam().args);
  ASSERT_TRUE(line.error);
  EXPECT_NE(line.error->message.find(GetParam().names), std::string::npos) << line.error->message;
  EXPECT_EQ(std::holds_alternative<RunCommand>(line.command), GetParam().is_run);
}

INSTANTIATE_TEST_SUITE_P(
    Rows, RunnerCliRefuses,
    ::testing::Values(
        Refused{{"run"}, "--op is required", true}, Refused{{"run", "--op=deploy"}, "--op", true},
        Refused{{"run", "--op=plan", "extra"}, "takes no arguments", true},
        Refused{{"run", "--op=plan", "--nope"}, "unknown flag: --nope", true},
        Refused{{"run", "--op=plan", "--lock-timeout=5"}, "--lock-timeout", true},
        Refused{{"run", "--op=plan", "--result-max-bytes=100"}, "--result-max-bytes", true},
        Refused{{"run", "--op=plan", "--inputs-hash=md5:x"}, "--inputs-hash", true},
        Refused{{"run", "--op=plan", "--binary=opentofu"}, "--binary", true},
        Refused{{"run", "--op=plan", "--event-object=Pod"}, "--event-object", true},
        Refused{{"run", "--op=plan", "--state-backend=consul"}, "--state-backend", true},
        Refused{{"run", "--op=plan", "--allow-destroy=maybe"}, "--allow-destroy", true},
        Refused{{"run", "--op=plan", "--module"}, "needs an argument: --module", true},
        Refused{{"--v=-1", "run", "--op=plan"}, "--v", true},
        Refused{{"run", "--op=plan", "--logging-format=xml"}, "--logging-format", true},
        Refused{{"run", "--op=plan", "--vmodule=x"}, "--vmodule", true},
        Refused{{"run", "--op=plan", "--feature-gates=Nope=true"}, "Nope", true},
        Refused{{"run", "--op=plan", "--log-flush-frequency=soon"}, "--log-flush-frequency", true},
        Refused{{"run", "--op=plan", "--log-json-info-buffer-size=lots"},
                "--log-json-info-buffer-size",
                true},
        Refused{{"run", "--op=plan", "--gateway=berthd:8480", "--run-id=r"}, "--gateway", true},
        Refused{{"run", "--op=plan", "--gateway=http://b"}, "--gateway and --run-id", true},
        Refused{{"run", "--op=plan", "--run-id=r"}, "--gateway and --run-id", true},
        Refused{{"run", "--op=plan", "--gateway=http://b", "--run-id=R_1"}, "--run-id", true},
        Refused{{"deploy"}, "unknown command \"deploy\"", false},
        Refused{{"-x"}, "unknown shorthand flag", false}));

}  // namespace
}  // namespace berth::runner
