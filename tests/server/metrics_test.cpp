// The step histogram's labels are berthd's, whatever a runner's result names its steps: a name
// no runner uses is counted as "other", so a hostile result cannot grow the label set.
#include "server/metrics.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "core/deployment_spec.h"
#include "sys/files.h"

namespace berth::server {
namespace {

// Metrics, and a store to scrape them with.
class BerthdMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = sys::TempDir::Create("metrics");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    auto store = store::OpenStore("sqlite:" + (dir_->Path() / "db").string(), 1);
    ASSERT_TRUE(store);
    store_ = std::move(*store);
  }
  std::string Scrape() { return metrics_.Scrape(*store_); }

  BerthdMetrics metrics_;
  std::optional<sys::TempDir> dir_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(BerthdMetricsTest, AStepNameNoRunnerUsesIsCountedAsOther) {
  metrics_.DeploymentStep("init", 0.2);
  metrics_.DeploymentStep("init", 0.3);
  metrics_.DeploymentStep("x\"} 1\nberth_evil{a=\"", 1);
  metrics_.DeploymentStep(std::string(100000, 'p'), 1);
  std::string text = Scrape();
  EXPECT_NE(text.find("berth_deployment_step_seconds_count{step=\"init\"} 2"), std::string::npos)
      << text;
  EXPECT_NE(text.find("berth_deployment_step_seconds_count{step=\"other\"} 2"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("berth_evil"), std::string::npos) << text;
  EXPECT_EQ(text.find("ppppp"), std::string::npos);
}

TEST_F(BerthdMetricsTest, ProviderPackagesAreCountedByResult) {
  metrics_.ProviderPackages("taken", 2);
  metrics_.ProviderPackages("taken", 1);
  metrics_.ProviderPackages("refused", 0);
  std::string text = Scrape();
  EXPECT_NE(text.find("berth_provider_packages_total{result=\"taken\"} 3"), std::string::npos)
      << text;
  EXPECT_NE(text.find("berth_provider_packages_total{result=\"refused\"} 0"), std::string::npos)
      << text;
}

// Each environment's queue names its organization, project and environment: /metrics, served
// without a token, leaves those series out, and an organization's own scrape has its own only.
TEST_F(BerthdMetricsTest, EnvironmentSeriesAreAnOrganizationsOwnAndNotInTheOpenScrape) {
  for (const std::string& org : {std::string("acme"), std::string("rival")}) {
    ASSERT_TRUE(store_->CreateOrganization(org));
    ASSERT_TRUE(store_->Create({.kind = store::Kind::kProject, .org_id = org, .id = "web"}));
    ASSERT_TRUE(store_->Create({.kind = store::Kind::kEnvType, .org_id = org, .id = "dev"}));
    store::Record env{
        .kind = store::Kind::kEnvironment, .org_id = org, .parent_id = "web", .id = org + "-env"};
    env.columns = {{"env_type_id", "dev"}};
    ASSERT_TRUE(store_->Create(env));
    for (const char* id : {"d1", "d2"}) {
      store::Deployment d{.org_id = org, .project_id = "web", .env_id = org + "-env", .id = id};
      d.spec = DeploymentSpec::FromRequest({{"op", "plan"}, {"source", {{"path", "/srv/module"}}}})
                   .value();
      ASSERT_TRUE(store_->Deployments().Create(d));
    }
  }
  const std::string open = Scrape();
  EXPECT_EQ(open.find("org="), std::string::npos) << open;
  EXPECT_EQ(open.find("acme"), std::string::npos) << open;
  EXPECT_NE(open.find("berth_deployments{state=\"queued\"} 4"), std::string::npos) << open;
  const std::string acme = BerthdMetrics::ScrapeEnvironments(*store_, "acme");
  EXPECT_NE(acme.find("berth_environment_queued_deployments{env=\"acme-env\",org=\"acme\","
                      "project=\"web\"} 2"),
            std::string::npos)
      << acme;
  EXPECT_EQ(acme.find("rival"), std::string::npos) << acme;
}

}  // namespace
}  // namespace berth::server
