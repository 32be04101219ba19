// The runner's command line, row by row: what parses, into what, and what is refused.
#include "runner/cli.h"

#include <gtest/gtest.h>

#include "core/runner_invocation.h"

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
                     "--prepared",
                     "--binary=tofu",
                     "--bin=/usr/bin/tofu",
                     "--providers=/mirror",
                     "--config=/in.tfvars.json",
                     "--inputs-hash=sha256:" + std::string(64, 'a'),
                     "--backend-config=a=b",
                     "--backend-config",
                     "/b.hcl",
                     "--cli-config=/cli.tfrc",
                     "--file-mapping=home:.config/gcloud/key.json=/f1",
                     "--file-mapping=workspace:extra.tf=/f2",
                     "--lock-timeout=30s",
                     "--stop-timeout=10s",
                     "--timeout=1h",
                     "--force-unlock=abc",
                     "--plan-file=/p",
                     "--approved-plan",
                     std::string(64, 'c'),
                     "--approved-plan-sha256=" + std::string(64, 'd'),
                     "--plan-key-file=/k",
                     "--state-key-file=/sk",
                     "--allow-destroy",
                     "--restore-from=/s",
                     "--event-object=Terraform/team/net",
                     "--job-name=j",
                     "--state-backend=http",
                     "--outputs=/o",
                     "--image=img:1",
                     "--result=/r",
                     "--result-max-bytes=2048",
                     "--logging-format=text",
                     "--vmodule=plan=4,init=2",
                     "--feature-gates=LoggingAlphaOptions=true",
                     "--log-text-split-stream",
                     "--log-text-info-buffer-size=64Ki",
                     "--log-flush-frequency=2s"});
  ASSERT_FALSE(line.error) << line.error->message;
  EXPECT_EQ(line.logging.verbosity, 3);
  EXPECT_EQ(line.logging.format, "text");
  auto sink = SinkOptions(line.logging);
  EXPECT_TRUE(sink.split_stream);
  EXPECT_EQ(sink.info_buffer_bytes, 65536u);
  EXPECT_EQ(sink.flush_frequency, std::chrono::seconds(2));
  EXPECT_TRUE(sink.verbosity.Enabled("plan", 4));
  EXPECT_FALSE(sink.verbosity.Enabled("init", 3));
  const auto& o = std::get<RunCommand>(line.command).options;
  EXPECT_EQ(o.op, "apply");
  EXPECT_EQ(o.module, "/m.tar.gz");
  EXPECT_EQ(o.path, "envs/dev");
  EXPECT_EQ(o.backend_config, (Args{"a=b", "/b.hcl"}));
  EXPECT_EQ(o.lock_timeout, std::chrono::seconds(30));
  EXPECT_TRUE(o.lock) << "the default";
  EXPECT_EQ(o.timeout, std::chrono::hours(1));
  EXPECT_TRUE(o.allow_destroy);
  EXPECT_EQ(o.result_max_bytes, 2048u);
  EXPECT_EQ(o.event_object, "Terraform/team/net");
  EXPECT_EQ(o.state_backend, "http");
  EXPECT_EQ(o.approved_plan_sha256, std::string(64, 'd'));
  EXPECT_TRUE(o.prepared);
  EXPECT_EQ(o.state_key_file, "/sk");
  EXPECT_EQ(o.cli_config, "/cli.tfrc");
  ASSERT_EQ(o.file_mappings.size(), 2u);
  EXPECT_EQ(o.file_mappings[0].location, "home");
  EXPECT_EQ(o.file_mappings[0].path, ".config/gcloud/key.json");
  EXPECT_EQ(o.file_mappings[0].file, "/f1");
  EXPECT_EQ(o.file_mappings[1].location, "workspace");
}

TEST(RunnerCli, PreparedGoesWithTheApprovedPlanInAGivenFolder) {
  const std::string digest = "--approved-plan-sha256=" + std::string(64, 'd');
  EXPECT_FALSE(
      Parse({"run", "--op=apply", "--prepared", "--workdir=/w", digest, "--plan-file=/p"}).error);
  EXPECT_FALSE(Parse({"run", "--op=destroy", "--prepared", "--workdir=/w", digest,
                      "--gateway=https://berthd", "--run-id=r"})
                   .error);
}

TEST(RunnerCli, AChangeListIsWrittenOnlyByARunThatPlans) {
  for (const char* op : {"plan", "apply", "destroy"}) {
    auto line = Parse({"run", std::string("--op=") + op, "--changes-file=/c.json"});
    ASSERT_FALSE(line.error) << op << ": " << line.error->message;
    EXPECT_EQ(std::get<RunCommand>(line.command).options.changes_file, "/c.json");
  }
  auto terraform = Parse({"run", "--op=plan", "--binary=terraform", "--changes-file=/c.json"});
  ASSERT_TRUE(terraform.error);
  EXPECT_NE(terraform.error->message.find("--binary=terraform"), std::string::npos);
  for (const char* op : {"refresh", "output", "validate", "restore", "drift"}) {
    auto line = Parse({"run", std::string("--op=") + op, "--changes-file=/c.json"});
    ASSERT_TRUE(line.error) << op;
    EXPECT_NE(line.error->message.find("--changes-file"), std::string::npos) << line.error->message;
  }
}

TEST(RunnerCli, AFileMappingStaysInItsFolder) {
  for (const char* bad : {"--file-mapping=home:key", "--file-mapping=etc:key=/f",
                          "--file-mapping=home:/etc/passwd=/f", "--file-mapping=home:../x=/f",
                          "--file-mapping=workspace:a/../../x=/f", "--file-mapping=home:=/f",
                          "--file-mapping=home:dir/=/f", "--file-mapping=home:k="}) {
    auto line = Parse({"run", "--op=plan", bad});
    ASSERT_TRUE(line.error) << bad;
    EXPECT_NE(line.error->message.find("file-mapping"), std::string::npos) << line.error->message;
  }
}

TEST(RunnerCli, StateEncryptionFromTheGatewayNeedsTheGateway) {
  auto alone = Parse({"run", "--op=plan", "--state-encryption"});
  ASSERT_TRUE(alone.error);
  EXPECT_NE(alone.error->message.find("--state-encryption"), std::string::npos);
  auto with = Parse(
      {"run", "--op=plan", "--state-encryption", "--gateway=http://127.0.0.1:1", "--run-id=r1"});
  ASSERT_FALSE(with.error) << with.error->message;
  EXPECT_TRUE(std::get<RunCommand>(with.command).options.state_encryption);
}

TEST(RunnerCli, KeyProviderNeedsItsKeyFileAndNothingElse) {
  auto line = Parse({"key-provider", "--key-file=/run/k"});
  ASSERT_FALSE(line.error) << line.error->message;
  EXPECT_EQ(std::get<KeyProviderCommand>(line.command).key_file, "/run/k");
  EXPECT_TRUE(Parse({"key-provider"}).error);
  EXPECT_TRUE(Parse({"key-provider", "--key-file=/k", "extra"}).error);
}

TEST(RunnerCli, ServeTakesItsTlsFilesAndLimits) {
  auto line = Parse({"serve", "--tls-cert=/tls/tls.crt", "--tls-key=/tls/tls.key",
                     "--client-ca=/tls/ca.crt", "--listen=:30001", "--client-name=ctl",
                     "--max-file-size=64Mi", "--spool=/var/spool"});
  ASSERT_FALSE(line.error) << line.error->message;
  const ServeOptions& o = std::get<ServeCommand>(line.command).options;
  EXPECT_EQ(o.tls_cert, "/tls/tls.crt");
  EXPECT_EQ(o.tls_key, "/tls/tls.key");
  EXPECT_EQ(o.client_ca, "/tls/ca.crt");
  EXPECT_EQ(o.listen, "0.0.0.0:30001");
  EXPECT_EQ(o.client_name, "ctl");
  EXPECT_EQ(o.max_file_bytes, size_t{64} << 20);
  EXPECT_EQ(o.spool, "/var/spool");

  auto defaults = Parse({"serve", "--tls-cert=c", "--tls-key=k", "--client-ca=a"});
  ASSERT_FALSE(defaults.error) << defaults.error->message;
  const ServeOptions& d = std::get<ServeCommand>(defaults.command).options;
  EXPECT_EQ(d.listen, "0.0.0.0:30000");
  EXPECT_EQ(d.client_name, "berth-controller");
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

TEST(RunnerCli, ABadGlobalFlagStillSaysWhereTheRunsResultGoes) {
  for (const Args& args : {Args{"--v=x", "run", "--op=plan", "--result=/r"},
                           Args{"--nope", "run", "--result", "/r", "--op=plan"}}) {
    auto line = Parse(args);
    ASSERT_TRUE(line.error) << args.front();
    ASSERT_TRUE(std::holds_alternative<RunCommand>(line.command));
    EXPECT_EQ(std::get<RunCommand>(line.command).options.result, "/r");
  }
}

// What berthd's launchers render is what the runner reads: every field of an invocation comes
// back from the runner's own parser as it was set.
TEST(RunnerCli, AnInvocationRoundTripsThroughTheRunnersParser) {
  RunnerInvocation in{.op = "apply",
                      .gateway = "https://berthd:8480",
                      .run_id = "d-1-apply",
                      .inputs_hash = "sha256:" + std::string(64, 'e'),
                      .state_backend = "http",
                      .backend_config = {"address=https://berthd:8480/state/v1/a", "lock=x"},
                      .providers = "/mirror",
                      .module = "/srv/modules/m",
                      .config = "/in.json",
                      .bin = "/usr/bin/tofu",
                      .approved_plan = "sha256:" + std::string(64, 'a'),
                      .approved_plan_sha256 = std::string(64, 'b'),
                      .plan_destroy = true,
                      .allow_destroy = true,
                      .ns = "team",
                      .name = "d-1-apply",
                      .workdir = "/tmp/team-d-1",
                      .prepared = true,
                      .result = "/dev/termination-log",
                      .result_max_bytes = 2048,
                      .binary = "terraform",
                      .image = "berth/runner:1",
                      .event_object = "Pod/team/berth-run-d-1-apply",
                      .berthd_relay = "/runs/d-1/relay/berthd.sock"};
  auto line = Parse(in.Args());
  ASSERT_FALSE(line.error) << line.error->message;
  const RunOptions& o = std::get<RunCommand>(line.command).options;
  EXPECT_EQ(o.op, in.op);
  EXPECT_EQ(o.gateway, in.gateway);
  EXPECT_EQ(o.run_id, in.run_id);
  EXPECT_EQ(o.inputs_hash, in.inputs_hash);
  EXPECT_EQ(o.state_backend, in.state_backend);
  EXPECT_EQ(o.backend_config, in.backend_config);
  EXPECT_EQ(o.providers, in.providers);
  EXPECT_EQ(o.module, in.module);
  EXPECT_EQ(o.config, in.config);
  EXPECT_EQ(o.bin, in.bin);
  EXPECT_EQ(o.approved_plan, in.approved_plan);
  EXPECT_EQ(o.approved_plan_sha256, in.approved_plan_sha256);
  EXPECT_TRUE(o.plan_destroy);
  EXPECT_TRUE(o.allow_destroy);
  EXPECT_EQ(o.ns, in.ns);
  EXPECT_EQ(o.name, in.name);
  EXPECT_EQ(o.workdir, in.workdir);
  EXPECT_TRUE(o.prepared);
  EXPECT_EQ(o.result, in.result);
  EXPECT_EQ(o.result_max_bytes, *in.result_max_bytes);
  EXPECT_EQ(o.binary, in.binary);
  EXPECT_EQ(o.image, in.image);
  EXPECT_EQ(o.event_object, in.event_object);
  EXPECT_EQ(o.berthd_relay, in.berthd_relay);

  // Unset fields are left out, and the runner's defaults stand.
  auto bare = Parse(RunnerInvocation{.op = "plan"}.Args());
  ASSERT_FALSE(bare.error) << bare.error->message;
  EXPECT_EQ(std::get<RunCommand>(bare.command).options.result, "/dev/termination-log");
  EXPECT_EQ(std::get<RunCommand>(bare.command).options.await_apply.count(), 0);

  // A plan run kept for its apply: how long it waits comes back as it was set.
  auto kept = Parse(RunnerInvocation{
      .op = "plan", .gateway = "https://berthd:8480", .run_id = "d-1", .await_apply_seconds = 900}
                        .Args());
  ASSERT_FALSE(kept.error) << kept.error->message;
  EXPECT_EQ(std::get<RunCommand>(kept.command).options.await_apply, std::chrono::minutes(15));
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
        Refused{{"serve", "--tls-cert=c", "--tls-key=k"}, "--client-ca are required", false},
        Refused{{"serve", "--tls-cert=c", "--tls-key=k", "--client-ca=a", "--listen=30000"},
                "--listen",
                false},
        Refused{{"serve", "--tls-cert=c", "--tls-key=k", "--client-ca=a", "--max-file-size=0"},
                "--max-file-size",
                false},
        Refused{{"serve", "--tls-cert=c", "--tls-key=k", "--client-ca=a", "extra"},
                "takes no arguments",
                false},
        Refused{{"run"}, "--op is required", true}, Refused{{"run", "--op=deploy"}, "--op", true},
        Refused{{"run", "--op=plan", "extra"}, "takes no arguments", true},
        Refused{{"run", "--op=plan", "--nope"}, "unknown flag: --nope", true},
        Refused{{"run", "--op=plan", "--lock-timeout=5"}, "--lock-timeout", true},
        Refused{{"run", "--op=plan", "--lock=false", "--lock-timeout=5s"},
                "--lock-timeout waits for a lock that --lock=false does not take",
                true},
        Refused{{"run", "--op=plan", "--lock=maybe"}, "--lock", true},
        Refused{{"run", "--op=plan", "--result-max-bytes=100"}, "--result-max-bytes", true},
        Refused{{"run", "--op=plan", "--inputs-hash=md5:x"}, "--inputs-hash", true},
        Refused{{"run", "--op=apply", "--approved-plan-sha256=sha256:ab"},
                "--approved-plan-sha256",
                true},
        Refused{{"run", "--op=plan", "--prepared", "--workdir=/w",
                 "--approved-plan-sha256=" + std::string(64, 'd')},
                "--prepared continues an approved plan: it needs --op=apply",
                true},
        Refused{
            {"run", "--op=apply", "--prepared", "--approved-plan-sha256=" + std::string(64, 'd')},
            "--prepared names no folder: it needs --workdir",
            true},
        Refused{{"run", "--op=apply", "--prepared", "--workdir=/w"},
                "--prepared skips init only for the approved plan's bytes",
                true},
        Refused{{"run", "--op=apply", "--prepared", "--workdir=/w",
                 "--approved-plan-sha256=" + std::string(64, 'd')},
                "--prepared applies a saved plan: it needs --plan-file",
                true},
        Refused{{"run", "--op=apply", "--gateway=http://b", "--run-id=r", "--await-apply=5m"},
                "--await-apply waits for the apply of a plan berthd keeps: it needs --op=plan",
                true},
        Refused{{"run", "--op=plan", "--await-apply=5m"}, "--await-apply", true},
        Refused{{"run", "--op=plan", "--await-apply=soon"}, "--await-apply", true},
        Refused{{"run", "--op=plan", "--binary=opentofu"}, "--binary", true},
        Refused{{"run", "--op=plan", "--event-object=Pod"}, "--event-object", true},
        Refused{{"run", "--op=plan", "--state-backend=consul"}, "--state-backend", true},
        Refused{{"run", "--op=plan", "--berthd-relay=/s"}, "--berthd-relay", true},
        Refused{{"run", "--op=plan", "--log-recipient=age1notarecipient"}, "--log-recipient", true},
        Refused{{"run", "--op=plan",
                 "--log-recipient=age1st6jlmq7wdpq6uthjknv83myxxm4u5jr3ts09zzm89mdyapjmyysl77cn9"},
                "--log-recipient encrypts the log it ships: it needs --gateway",
                true},
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
        // The option rules of Kubernetes' component-base, and gates that would gate nothing.
        Refused{{"run", "--op=plan", "--logging-format=json", "--vmodule=plan=2"},
                "--vmodule: only supported for --logging-format=text",
                true},
        Refused{{"run", "--op=plan", "--log-text-split-stream"}, "LoggingAlphaOptions=true", true},
        Refused{{"--feature-gates=LoggingAlphaOptions=true", "run", "--op=plan",
                 "--log-json-split-stream"},
                "--log-json-split-stream: only applies to --logging-format=json",
                true},
        Refused{{"run", "--op=plan", "--feature-gates=LoggingAlphaOptions=true",
                 "--log-text-info-buffer-size=1Mi"},
                "--log-text-info-buffer-size: needs --log-text-split-stream",
                true},
        Refused{{"run", "--op=plan", "--log-text-info-buffer-size=2Gi"}, "from 0 to 1Gi", true},
        Refused{{"run", "--op=plan", "--log-text-info-buffer-size=1.5"}, "whole number", true},
        Refused{{"run", "--op=plan", "--log-flush-frequency=0s"}, "--log-flush-frequency", true},
        Refused{{"run", "--op=plan", "--feature-gates=ContextualLogging=true"},
                "ContextualLogging gates nothing",
                true},
        Refused{{"run", "--op=plan", "--feature-gates=LoggingBetaOptions=false"},
                "LoggingBetaOptions gates nothing",
                true},
        Refused{{"copy", "/x", "--log-text-split-stream"}, "LoggingAlphaOptions", false},
        Refused{{"run", "--op=plan", "--gateway=berthd:8480", "--run-id=r"}, "--gateway", true},
        Refused{{"run", "--op=plan", "--gateway=http://b"}, "--gateway and --run-id", true},
        Refused{{"run", "--op=plan", "--run-id=r"}, "--gateway and --run-id", true},
        Refused{{"run", "--op=plan", "--gateway=http://b", "--run-id=R_1"}, "--run-id", true},
        Refused{{"deploy"}, "unknown command \"deploy\"", false},
        Refused{{"-x"}, "unknown shorthand flag", false}));

}  // namespace
}  // namespace berth::runner
