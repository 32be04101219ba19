// The controller's CA and its runner certificates on the real test apiserver: made once and
// shared by racing replicas, written beside each object and owned by it, kept while fresh,
// renewed when a third of their life is left, and rewritten when anything else is put there.
#include "controller/runner_pki.h"

#include <gtest/gtest.h>

#include <future>

#include "core/base64.h"
#include "kube_test_cluster.h"

namespace berth::controller {
namespace {

using nlohmann::json;

constexpr char kControllerNamespace[] = "berth-system";
constexpr char kTeamNamespace[] = "team-pki";

class RunnerPkiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto admin = testenv::KubeTestCluster::SharedAdminWith({kControllerNamespace, kTeamNamespace});
    ASSERT_TRUE(admin) << admin.error().ToString();
    shared_api = admin->release();
  }

  static launch::TerraformObject Object(const std::string& name) {
    launch::TerraformObject object;
    object.name = name;
    object.ns = kTeamNamespace;
    object.uid = "0b5e5d6c-1111-4c6e-9e8e-00000000000" + std::to_string(name.size() % 10);
    return object;
  }

  static std::string SecretValue(const std::string& name, const char* key) {
    auto secret = shared_api->Get(kube::kSecrets, kTeamNamespace, name);
    EXPECT_TRUE(secret) << secret.error().ToString();
    return Base64Decode(secret->at("data").at(key).get<std::string>()).value();
  }

  static inline kube::KubeClient* shared_api = nullptr;
};

TEST_F(RunnerPkiTest, RacingReplicasEndUpWithOneCa) {
  PkiOptions options{.ns = kControllerNamespace, .ca_secret = "race-ca"};
  auto start = [&options] {
    return RunnerPki::LoadOrCreate(*shared_api, SystemClock::Instance(), options);
  };
  auto first = std::async(std::launch::async, start);
  auto second = std::async(std::launch::async, start);
  auto a = first.get();
  auto b = second.get();
  ASSERT_TRUE(a) << a.error().ToString();
  ASSERT_TRUE(b) << b.error().ToString();
  EXPECT_EQ((*a)->CaPem(), (*b)->CaPem());
  auto again = start();
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)->CaPem(), (*a)->CaPem()) << "a restart keeps the CA";
}

TEST_F(RunnerPkiTest, ACaSecretWithoutACaIsRefusedNotReplaced) {
  json broken = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "broken-ca"}}},
                 {"data", {{"tls.crt", Base64Encode("junk")}}}};
  ASSERT_TRUE(shared_api->Create(kube::kSecrets, kControllerNamespace, broken));
  auto pki = RunnerPki::LoadOrCreate(*shared_api, SystemClock::Instance(),
                                     {.ns = kControllerNamespace, .ca_secret = "broken-ca"});
  ASSERT_FALSE(pki);
  EXPECT_NE(pki.error().message.find("broken-ca"), std::string::npos) << pki.error().message;
}

TEST_F(RunnerPkiTest, ARunnersCertificateIsKeptWhileFreshAndRenewedWhenAThirdIsLeft) {
  ManualClock clock;
  auto pki = RunnerPki::LoadOrCreate(*shared_api, clock,
                                     {.ns = kControllerNamespace,
                                      .ca_secret = "renew-ca",
                                      .certificate_validity = std::chrono::hours(3)});
  ASSERT_TRUE(pki) << pki.error().ToString();
  launch::TerraformObject object = Object("renewed");
  auto first = (*pki)->EnsureRunnerSecret(object);
  ASSERT_TRUE(first) << first.error().ToString();
  const std::string name = launch::TlsSecretName("renewed");
  EXPECT_EQ(SecretValue(name, "ca.crt"), (*pki)->CaPem());
  EXPECT_EQ(crypto::CertificateFingerprint(SecretValue(name, "tls.crt")).value(), *first);
  auto secret = shared_api->Get(kube::kSecrets, kTeamNamespace, name);
  ASSERT_TRUE(secret);
  const json& owner = (*secret)["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["kind"], "Terraform");
  EXPECT_EQ(owner["name"], "renewed");
  EXPECT_EQ(owner["uid"], object.uid);

  clock.Advance(std::chrono::hours(1));  // two thirds left: kept
  EXPECT_EQ((*pki)->EnsureRunnerSecret(object).value(), *first);
  clock.Advance(std::chrono::hours(1) + std::chrono::minutes(1));  // under a third: renewed
  auto renewed = (*pki)->EnsureRunnerSecret(object);
  ASSERT_TRUE(renewed) << renewed.error().ToString();
  EXPECT_NE(*renewed, *first);
  EXPECT_EQ(crypto::CertificateFingerprint(SecretValue(name, "tls.crt")).value(), *renewed);
}

TEST_F(RunnerPkiTest, ACertificateOfAnotherCaPutInTheSecretIsReplaced) {
  auto pki = RunnerPki::LoadOrCreate(*shared_api, SystemClock::Instance(),
                                     {.ns = kControllerNamespace, .ca_secret = "owner-ca"});
  ASSERT_TRUE(pki);
  launch::TerraformObject object = Object("tampered");
  auto ours = (*pki)->EnsureRunnerSecret(object);
  ASSERT_TRUE(ours);
  // Someone with write access to the namespace's Secrets swaps in their own CA.
  auto rogue = crypto::CreateCertificateAuthority("rogue", std::chrono::hours(1));
  ASSERT_TRUE(rogue);
  ASSERT_TRUE(shared_api->Patch(
      kube::kSecrets, kTeamNamespace, launch::TlsSecretName("tampered"), kube::PatchType::kMerge,
      {{"data", {{"ca.crt", Base64Encode(rogue->certificate_pem)}}}}, "test"));
  auto replaced = (*pki)->EnsureRunnerSecret(object);
  ASSERT_TRUE(replaced);
  EXPECT_NE(*replaced, *ours);
  EXPECT_EQ(SecretValue(launch::TlsSecretName("tampered"), "ca.crt"), (*pki)->CaPem());
}

TEST_F(RunnerPkiTest, TheControllersClientCertificateIsRenewedAsItAges) {
  ManualClock clock;
  auto pki = RunnerPki::LoadOrCreate(*shared_api, clock,
                                     {.ns = kControllerNamespace,
                                      .ca_secret = "client-ca",
                                      .certificate_validity = std::chrono::hours(3)});
  ASSERT_TRUE(pki);
  auto first = (*pki)->ClientCertificate();
  ASSERT_TRUE(first);
  EXPECT_EQ((*pki)->ClientCertificate()->certificate_pem, first->certificate_pem);
  clock.Advance(std::chrono::hours(2) + std::chrono::minutes(1));
  EXPECT_NE((*pki)->ClientCertificate()->certificate_pem, first->certificate_pem);
}

}  // namespace
}  // namespace berth::controller
