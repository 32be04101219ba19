// `berth render pod` as a user runs it: a runner configuration file and labels in, the Pod as
// YAML out, every broken rule named, nothing needed but the KUBERNETES_* variables.
#include <gtest/gtest.h>

#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::cli {
namespace {

class RenderPod : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("render-pod");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
  }

  std::string File(const std::string& name, const std::string& content) {
    auto path = dir_->Path() / name;
    EXPECT_TRUE(sys::WriteFileAtomic(path, content));
    return path.string();
  }

  sys::Completed Render(std::vector<std::string> args,
                        std::vector<std::string> env = {"KUBERNETES_IMAGE=berth/runner:1",
                                                        "KUBERNETES_NAMESPACE=runners"}) {
    sys::SpawnOptions options;
    options.argv = {BERTH_CLI_BIN, "render", "pod"};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.env = std::move(env);
    auto done = sys::RunToCompletion(options);
    EXPECT_TRUE(done);
    return done ? *done : sys::Completed{-1, ""};
  }

  std::optional<sys::TempDir> dir_;
};

TEST_F(RenderPod, PrintsThePodOfAControllerRunnerWithTheRunsOverrides) {
  std::string config = File("runner.yaml",
                            "spec:\n  runner:\n    serviceAccountName: tf-runner\n"
                            "    podTemplate:\n      spec:\n        resources:\n"
                            "          limits: {memory: 2Gi}\n");
  auto done = Render({"--runner-config=" + config, "--label",
                      "berth.dev/runner-spec.kubernetes_request_memory=1536Mi", "--run-id=r42"});
  ASSERT_EQ(done.exit_code, 0) << done.output;
  for (const char* expected :
       {"kind: Pod", "name: berth-run-r42", "namespace: runners", "serviceAccountName: tf-runner",
        "memory: 1536Mi", "memory: 2Gi", "runAsUser: 65532", "- /berth/bin/runner"}) {
    EXPECT_NE(done.output.find(expected), std::string::npos) << expected << "\n" << done.output;
  }
}

TEST_F(RenderPod, PrintsAJobFromARunnersJobInJson) {
  std::string config =
      File("runner.json", R"({"job":{"namespace":"team-a","service_account":"deployer"}})");
  auto done = Render({"--runner-config=" + config, "--kind=job", "--op=apply"});
  ASSERT_EQ(done.exit_code, 0) << done.output;
  EXPECT_NE(done.output.find("kind: Job"), std::string::npos) << done.output;
  EXPECT_NE(done.output.find("namespace: team-a"), std::string::npos);
  EXPECT_NE(done.output.find("--op=apply"), std::string::npos);
}

TEST_F(RenderPod, PrintsTheRunnerPodOfATerraformObject) {
  std::string object = File("demo.yaml",
                            "apiVersion: berth.dev/v1alpha1\nkind: Terraform\n"
                            "metadata: {name: demo, namespace: infra}\n"
                            "spec:\n  git: {url: https://git.example.com/infra.git}\n"
                            "  runner: {serviceAccountName: tf-runner, alwaysCleanup: false}\n");
  auto done =
      Render({"--terraform=" + object, "--revision=abc123"}, {"KUBERNETES_IMAGE=berth/runner:1"});
  ASSERT_EQ(done.exit_code, 0) << done.output;
  for (const char* expected :
       {"kind: Pod", "name: demo-tf-runner", "namespace: infra", "- serve", "containerPort: 30000",
        "secretName: demo-tf-runner-tls", "app.kubernetes.io/instance: tf-runner-abc123",
        "value: /tmp/plugin-cache"}) {
    EXPECT_NE(done.output.find(expected), std::string::npos) << expected << "\n" << done.output;
  }
  // A run's own options have no place in a Pod that serves every run.
  auto refused = Render({"--terraform=" + object, "--op=apply"}, {"KUBERNETES_IMAGE=i"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.output.find("--terraform excludes --op"), std::string::npos) << refused.output;
  auto neither = Render({"--revision=1"}, {"KUBERNETES_IMAGE=i"});
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_NE(neither.output.find("--runner-config or --terraform"), std::string::npos)
      << neither.output;
}

TEST_F(RenderPod, NamesEveryBrokenRuleAndExitsTwo) {
  std::string config = File("bad.yaml", "runner:\n  binary: bash\n");
  auto bad_config = Render({"--runner-config=" + config});
  EXPECT_EQ(bad_config.exit_code, 2);
  EXPECT_NE(bad_config.output.find("$.runner.binary: must be one of"), std::string::npos)
      << bad_config.output;

  std::string good = File("good.yaml", "runner: {}\n");
  auto bad_label = Render(
      {"--runner-config=" + good, "--label", "berth.dev/runner-spec.kubernetes_limit_cpu=fast"});
  EXPECT_EQ(bad_label.exit_code, 2);
  EXPECT_NE(bad_label.output.find("berth.dev/runner-spec.kubernetes_limit_cpu: must be a "
                                  "Kubernetes quantity"),
            std::string::npos)
      << bad_label.output;

  auto no_settings = Render({"--runner-config=" + good}, {});
  EXPECT_EQ(no_settings.exit_code, 2);
  EXPECT_NE(no_settings.output.find("KUBERNETES_IMAGE: is required"), std::string::npos)
      << no_settings.output;
}

}  // namespace
}  // namespace berth::cli
