// `runner serve` as berth-controller meets it: the real runner process, the real tofu, gRPC
// over mutual TLS on loopback, driven by berth's own client (rpc/runner_client.h).
#include <gtest/gtest.h>
#include <signal.h>

#include <future>
#include <random>
#include <thread>

#include "core/base64.h"
#include "crypto/x509.h"
#include "rpc/runner_client.h"
#include "runner_harness.h"
#include "sys/files.h"
#include "tar_builder.h"
#include "test_tools.h"

namespace berth::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kLocalBackend[] = "terraform {\n  backend \"local\" {}\n}\n";
constexpr char kRunnerName[] = "demo-tf-runner";

struct Pki {
  crypto::IssuedCertificate ca;
  crypto::IssuedCertificate runner;      // the Pod's server certificate
  crypto::IssuedCertificate controller;  // the one client runs are taken from
};

crypto::IssuedCertificate Issue(const crypto::IssuedCertificate& ca, const std::string& name,
                                crypto::CertificateUse use) {
  auto issued =
      crypto::IssueCertificate({.common_name = name, .dns_names = {name}, .use = use}, ca);
  EXPECT_TRUE(issued) << issued.error().ToString();
  return *issued;
}

// One runner serve for the whole binary: it is what a kept runner Pod is, run after run.
class RunnerServe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto h = RunnerHarness::Create();
    ASSERT_TRUE(h);
    harness = new RunnerHarness(std::move(*h));
    auto ca = crypto::CreateCertificateAuthority("berth-controller-ca", std::chrono::hours(1));
    ASSERT_TRUE(ca);
    pki = new Pki{*ca, Issue(*ca, kRunnerName, crypto::CertificateUse::kServer),
                  Issue(*ca, "berth-controller", crypto::CertificateUse::kClient)};
    const fs::path tls = Root() / "tls";
    fs::create_directories(tls);
    ASSERT_TRUE(sys::WriteFileAtomic(tls / "tls.crt", pki->runner.certificate_pem));
    ASSERT_TRUE(sys::WriteFileAtomic(tls / "tls.key", pki->runner.key.pem));
    ASSERT_TRUE(sys::WriteFileAtomic(tls / "ca.crt", pki->ca.certificate_pem));
    auto serve = StartServe("shared");
    ASSERT_TRUE(serve.child);
    shared_serve = new sys::Subprocess(std::move(*serve.child));
    shared_address = new std::string(serve.address);
  }

  struct Serving {
    std::optional<sys::Subprocess> child;
    std::string address;
  };
  // Starts `runner serve` on a free loopback port with the PKI's runner certificate.
  static Serving StartServe(const std::string& name) {
    const fs::path tls = Root() / "tls";
    sys::SpawnOptions options;
    options.argv = {RunnerBinary().string(),
                    "serve",
                    "--listen=127.0.0.1:0",
                    "--tls-cert=" + (tls / "tls.crt").string(),
                    "--tls-key=" + (tls / "tls.key").string(),
                    "--client-ca=" + (tls / "ca.crt").string(),
                    "--max-file-size=32Mi",
                    "--spool=" + (Root() / ("spool-" + name)).string()};
    options.env = harness->Environment({});
    options.pipe_output = true;
    auto child = sys::Subprocess::Spawn(options);
    EXPECT_TRUE(child) << child.error().ToString();
    if (!child) return {};
    std::string seen;
    const std::string marker = "listening on 127.0.0.1:";
    EXPECT_TRUE(RunnerHarness::WaitForOutput(*child, marker, &seen)) << seen;
    EXPECT_TRUE(RunnerHarness::WaitForOutput(*child, "\n", &seen)) << seen;
    const int port = std::stoi(seen.substr(seen.find(marker) + marker.size()));
    return {std::move(*child), "127.0.0.1:" + std::to_string(port)};
  }
  static void TearDownTestSuite() {
    delete shared_serve;  // killed and reaped
    delete shared_address;
    delete pki;
    delete harness;
  }

  static const fs::path& Root() { return harness->Root(); }

  static std::unique_ptr<rpc::RunnerClient> Client(const crypto::IssuedCertificate& who,
                                                   const std::string* address = shared_address) {
    auto client = rpc::RunnerClient::Create(*address, {.ca_pem = pki->ca.certificate_pem,
                                                       .cert_pem = who.certificate_pem,
                                                       .key_pem = who.key.pem,
                                                       .server_name = kRunnerName});
    EXPECT_TRUE(client) << client.error().ToString();
    return std::move(*client);
  }

  // examples/<name> with a local backend, as the archive the controller would send.
  static fs::path Source(const std::string& example) {
    TarBuilder tar;
    for (const auto& entry : fs::directory_iterator(testenv::SourceDir() / "examples" / example)) {
      auto text = sys::ReadFile(entry.path());
      EXPECT_TRUE(text);
      tar.File(entry.path().filename().string(), *text);
    }
    tar.File("backend.tf", kLocalBackend);
    fs::path archive = Root() / (example + ".tar.gz");
    EXPECT_TRUE(sys::WriteFileAtomic(archive, tar.TarGz()));
    return archive;
  }

  static std::vector<std::string> Args(const std::string& op, const std::string& name) {
    return {"--op=" + op,
            "--providers=" + testenv::TestTool("BERTH_TEST_PROVIDER_MIRROR").value().string(),
            "--namespace=test",
            "--name=" + name,
            "--workdir=" + (Root() / ("work-" + name)).string(),
            "--backend-config=path=" + (Root() / (name + ".tfstate")).string()};
  }

  static fs::path Config(const std::string& name, const json& variables) {
    fs::path path = Root() / (name + ".tfvars.json");
    EXPECT_TRUE(sys::WriteFileAtomic(path, variables.dump()));
    return path;
  }

  // Starts an apply of examples/slow (60 s of sleep) and returns once its sleep has begun.
  static std::future<Result<rpc::RunnerReply>> SlowApply(rpc::RunnerClient& client,
                                                         const std::string& name, json variables) {
    variables["seconds"] = 60;
    const fs::path config = Config(name, variables);
    auto started = std::make_shared<std::promise<void>>();
    std::future<void> begun = started->get_future();
    auto reply = std::async(std::launch::async, [&client, name, config, started] {
      std::string log;
      bool said = false;
      std::vector<std::string> args = Args("apply", name);
      args.emplace_back("--stop-timeout=5s");
      return client.Run(args, {.source = Source("slow"), .config = config},
                        [&](std::string_view chunk) {
                          log += chunk;
                          if (!said && log.find("berth-slow-started") != std::string::npos) {
                            said = true;
                            started->set_value();
                          }
                        });
    });
    // A run that ends without starting its sleep ends the wait too (its reply says why).
    while (begun.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready &&
           reply.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
    }
    return reply;
  }

  static inline RunnerHarness* harness = nullptr;
  static inline Pki* pki = nullptr;
  static inline sys::Subprocess* shared_serve = nullptr;
  static inline std::string* shared_address = nullptr;
};

TEST_F(RunnerServe, PlansTheSourceItIsSentThenAppliesTheApprovedPlan) {
  const fs::path target = Root() / "world/planned.txt";
  const fs::path config = Config("planned", {{"path", target}, {"content", "served"}});
  auto client = Client(pki->controller);
  std::string log;
  auto planned = client->Run(Args("plan", "planned"), {.source = Source("file"), .config = config},
                             [&log](std::string_view chunk) { log += chunk; });
  ASSERT_TRUE(planned) << planned.error().ToString();
  json result = json::parse(planned->result_json);
  ASSERT_TRUE(result["error"].is_null()) << planned->result_json << log;
  EXPECT_EQ(result["op"], "plan");
  EXPECT_EQ(result["plan"]["add"], 1) << planned->result_json;
  EXPECT_TRUE(planned->plan.starts_with("PK")) << "a plan file is a zip";
  EXPECT_NE(log.find("[plan]"), std::string::npos) << log;
  EXPECT_FALSE(planned->outputs) << "a plan has no outputs";
  EXPECT_FALSE(fs::exists(target)) << "a plan changes nothing";

  const fs::path plan = Root() / "planned.tfplan";
  ASSERT_TRUE(sys::WriteFileAtomic(plan, planned->plan));
  std::vector<std::string> apply = Args("apply", "planned");
  apply.push_back("--approved-plan=" + result["plan"]["hash"].get<std::string>());
  auto applied =
      client->Run(apply, {.source = Source("file"), .config = config, .approved_plan = plan}, {});
  ASSERT_TRUE(applied) << applied.error().ToString();
  json outcome = json::parse(applied->result_json);
  ASSERT_TRUE(outcome["error"].is_null()) << applied->result_json;
  EXPECT_EQ(sys::ReadFile(target).value(), "served");
  ASSERT_TRUE(applied->outputs);
  json outputs = json::parse(*applied->outputs);
  EXPECT_TRUE(outputs["id"]["value"].is_string()) << *applied->outputs;
  EXPECT_EQ(outputs["id"]["sensitive"], false) << *applied->outputs;
}

// gRPC's default message cap is 4 MiB: a source, a plan and outputs above it stream whole.
TEST_F(RunnerServe, ASourceAPlanAndOutputsOverFourMebibytesStreamWhole) {
  std::mt19937_64 random(6);  // NOLINT(bugprone-random-generator-seed): a failure repeats
  std::string blob(size_t{6} << 20, '\0');
  for (char& c : blob) c = static_cast<char>(random());
  TarBuilder tar;
  tar.File("main.tf", "output \"blob\" {\n  value = filebase64(\"${path.module}/blob.bin\")\n}\n");
  tar.File("blob.bin", blob);
  tar.File("backend.tf", kLocalBackend);
  const fs::path source = Root() / "blob.tar.gz";
  ASSERT_TRUE(sys::WriteFileAtomic(source, tar.TarGz()));
  ASSERT_GT(fs::file_size(source), size_t{4} << 20);

  auto client = Client(pki->controller);
  auto planned = client->Run(Args("plan", "blob"), {.source = source}, {});
  ASSERT_TRUE(planned) << planned.error().ToString();
  json result = json::parse(planned->result_json);
  ASSERT_TRUE(result["error"].is_null()) << planned->result_json;
  EXPECT_GT(planned->plan.size(), size_t{4} << 20);

  const fs::path plan = Root() / "blob.tfplan";
  ASSERT_TRUE(sys::WriteFileAtomic(plan, planned->plan));
  std::vector<std::string> apply = Args("apply", "blob");
  apply.push_back("--approved-plan=" + result["plan"]["hash"].get<std::string>());
  auto applied = client->Run(apply, {.source = source, .approved_plan = plan}, {});
  ASSERT_TRUE(applied) << applied.error().ToString();
  ASSERT_TRUE(json::parse(applied->result_json)["error"].is_null()) << applied->result_json;
  ASSERT_TRUE(applied->outputs);
  EXPECT_TRUE(json::parse(*applied->outputs)["blob"]["value"] == Base64Encode(blob))
      << "the outputs came back changed (" << applied->outputs->size() << " bytes)";
}

TEST_F(RunnerServe, AnApplyOfAPlanThatWasNotApprovedIsRefusedByTheRunner) {
  const fs::path config = Config("unapproved", {{"path", Root() / "world/unapproved.txt"}});
  auto client = Client(pki->controller);
  auto planned =
      client->Run(Args("plan", "unapproved"), {.source = Source("file"), .config = config}, {});
  ASSERT_TRUE(planned) << planned.error().ToString();
  const fs::path plan = Root() / "unapproved.tfplan";
  ASSERT_TRUE(sys::WriteFileAtomic(plan, planned->plan));
  std::vector<std::string> apply = Args("apply", "unapproved");
  apply.push_back("--approved-plan=sha256:" + std::string(64, '0'));
  auto applied =
      client->Run(apply, {.source = Source("file"), .config = config, .approved_plan = plan}, {});
  ASSERT_TRUE(applied) << applied.error().ToString();
  EXPECT_EQ(json::parse(applied->result_json)["error"]["kind"], "PlanNotApproved")
      << applied->result_json;
  EXPECT_FALSE(fs::exists(Root() / "world/unapproved.txt"));
}

TEST_F(RunnerServe, FlagsThatServeSetsOrThatNeedTheGatewayAreRefusedByName) {
  auto client = Client(pki->controller);
  for (const std::string flag : {"--gateway=https://berthd:8443", "--module=/etc", "--result=/x",
                                 "--outputs", "--state-encryption", "--plan-file=/tmp/p",
                                 "--file-mapping=home:k=/etc/shadow", "--cli-config=/etc/passwd"}) {
    std::vector<std::string> args = Args("plan", "refused");
    args.push_back(flag);
    auto refused = client->Run(args, {}, {});
    ASSERT_FALSE(refused) << flag;
    EXPECT_EQ(refused.error().kind, ErrorKind::kInvalidArgument) << flag;
    const std::string name = flag.substr(0, flag.find('='));
    EXPECT_NE(refused.error().message.find(name + " is set by runner serve"), std::string::npos)
        << refused.error().message;
  }
  auto bad_op = client->Run({"--op=explode"}, {}, {});
  ASSERT_FALSE(bad_op);
  EXPECT_EQ(bad_op.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(bad_op.error().message.find("--op"), std::string::npos) << bad_op.error().message;
}

TEST_F(RunnerServe, AFileOverTheLimitIsRefusedAndNothingRuns) {
  const fs::path big = Root() / "big.tar.gz";
  ASSERT_TRUE(sys::WriteFileAtomic(big, std::string(size_t{33} << 20, 'x')));
  auto refused = Client(pki->controller)->Run(Args("plan", "big"), {.source = big}, {});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kResourceExhausted);
  EXPECT_NE(refused.error().message.find("--max-file-size"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(fs::exists(Root() / "work-big"));
}

TEST_F(RunnerServe, AMappedFileThatWouldLeaveItsFolderIsRefusedAndNothingRuns) {
  const fs::path creds = Root() / "creds";
  ASSERT_TRUE(sys::WriteFileAtomic(creds, "secret"));
  for (const std::string mapping : {"workspace:../../etc/cron.d/x", "home:/root/.ssh/keys"}) {
    auto refused = Client(pki->controller)
                       ->Run(Args("plan", "escaping"),
                             {.source = Source("file"), .mapped = {{mapping, creds}}}, {});
    ASSERT_FALSE(refused) << mapping;
    EXPECT_EQ(refused.error().kind, ErrorKind::kInvalidArgument);
    EXPECT_NE(refused.error().message.find("file.mapping " + mapping), std::string::npos)
        << refused.error().message;
  }
  EXPECT_FALSE(fs::exists(Root() / "work-escaping"));
}

TEST_F(RunnerServe, OnlyTheControllersCertificateStartsRuns) {
  // A module in a runner Pod can read that Pod's certificate: same CA, another name.
  auto pod = Issue(pki->ca, kRunnerName, crypto::CertificateUse::kClient);
  auto as_pod = Client(pod)->Run(Args("plan", "pod"), {}, {});
  ASSERT_FALSE(as_pod);
  EXPECT_EQ(as_pod.error().kind, ErrorKind::kPermissionDenied) << as_pod.error().message;

  auto other_ca = crypto::CreateCertificateAuthority("elsewhere", std::chrono::hours(1));
  ASSERT_TRUE(other_ca);
  auto stranger = Issue(*other_ca, "berth-controller", crypto::CertificateUse::kClient);
  auto as_stranger = Client(stranger)->Run(Args("plan", "stranger"), {}, {});
  ASSERT_FALSE(as_stranger);
  EXPECT_EQ(as_stranger.error().kind, ErrorKind::kUnavailable) << as_stranger.error().message;
  EXPECT_FALSE(fs::exists(Root() / "work-pod"));
  EXPECT_FALSE(fs::exists(Root() / "work-stranger"));
}

TEST_F(RunnerServe, OneRunAtATimeAndACancelledRunStopsTofu) {
  const fs::path marker = Root() / "slow.marker";
  auto client = Client(pki->controller);
  auto slow = SlowApply(*client, "slow", {{"marker", marker}});

  auto second = Client(pki->controller)->Run(Args("plan", "second"), {}, {});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().kind, ErrorKind::kConflict) << second.error().message;

  client->Cancel();
  auto cancelled = slow.get();
  ASSERT_FALSE(cancelled);
  EXPECT_EQ(cancelled.error().kind, ErrorKind::kCancelled) << cancelled.error().message;

  // The runner is free again once the interrupted run has ended.
  const fs::path config_after = Config("after", {{"path", Root() / "world/after.txt"}});
  Result<rpc::RunnerReply> after = MakeError(ErrorKind::kInternal, "not run");
  for (int attempt = 0; attempt < 300; ++attempt) {
    after =
        Client(pki->controller)
            ->Run(Args("plan", "after"), {.source = Source("file"), .config = config_after}, {});
    if (after || after.error().kind != ErrorKind::kConflict) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(after) << after.error().ToString();
  EXPECT_EQ(sys::ReadFile(marker).value(), "applied\n") << "the slow apply ran once";
}

TEST_F(RunnerServe, ASignalStopsServeAfterTheRunInProgressHasSentItsResult) {
  auto serve = StartServe("stopping");
  ASSERT_TRUE(serve.child);
  auto client = Client(pki->controller, &serve.address);
  auto slow = SlowApply(*client, "stopped", json::object());
  serve.child->Signal(SIGTERM);  // what the kubelet sends when the Pod is deleted
  auto stopped = slow.get();
  ASSERT_TRUE(stopped) << stopped.error().ToString();
  json result = json::parse(stopped->result_json);
  EXPECT_EQ(result["error"]["kind"], "Cancelled") << stopped->result_json;
  EXPECT_EQ(serve.child->Wait(), 0);
}

}  // namespace
}  // namespace berth::testing
