// The step histogram's labels are berthd's, whatever a runner's result names its steps: a name
// no runner uses is counted as "other", so a hostile result cannot grow the label set.
#include "server/metrics.h"

#include <gtest/gtest.h>

#include "sys/files.h"

namespace berth::server {
namespace {

TEST(BerthdMetrics, AStepNameNoRunnerUsesIsCountedAsOther) {
  auto dir = sys::TempDir::Create("metrics");
  ASSERT_TRUE(dir);
  auto store = store::OpenStore("sqlite:" + (dir->Path() / "db").string(), 1);
  ASSERT_TRUE(store);
  BerthdMetrics metrics;
  metrics.DeploymentStep("init", 0.2);
  metrics.DeploymentStep("init", 0.3);
  metrics.DeploymentStep("x\"} 1\nberth_evil{a=\"", 1);
  metrics.DeploymentStep(std::string(100000, 'p'), 1);
  std::string text = metrics.Scrape(**store);
  EXPECT_NE(text.find("berth_deployment_step_seconds_count{step=\"init\"} 2"), std::string::npos)
      << text;
  EXPECT_NE(text.find("berth_deployment_step_seconds_count{step=\"other\"} 2"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("berth_evil"), std::string::npos) << text;
  EXPECT_EQ(text.find("ppppp"), std::string::npos);
}

TEST(BerthdMetrics, ProviderPackagesAreCountedByResult) {
  auto dir = sys::TempDir::Create("metrics");
  ASSERT_TRUE(dir);
  auto store = store::OpenStore("sqlite:" + (dir->Path() / "db").string(), 1);
  ASSERT_TRUE(store);
  BerthdMetrics metrics;
  metrics.ProviderPackages("taken", 2);
  metrics.ProviderPackages("taken", 1);
  metrics.ProviderPackages("refused", 0);
  std::string text = metrics.Scrape(**store);
  EXPECT_NE(text.find("berth_provider_packages_total{result=\"taken\"} 3"), std::string::npos)
      << text;
  EXPECT_NE(text.find("berth_provider_packages_total{result=\"refused\"} 0"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace berth::server
