// The backend settings of each state storage type: one state per environment under the path
// prefix, each backend's own locking on, and nothing rendered for a type without a backend.
#include "server/dispatch/backend_config.h"

#include <gtest/gtest.h>

namespace berth::server {
namespace {

using nlohmann::json;

const EnvironmentRef kWhere{"acme", "web", "dev"};

std::vector<std::string> Render(const json& storage, bool in_cluster = false) {
  auto settings = RenderBackend(storage, kWhere, "https://berthd:8480", in_cluster);
  EXPECT_TRUE(settings) << settings.error().message;
  return settings ? settings->config : std::vector<std::string>{};
}

TEST(BackendConfig, BerthIsTheHttpBackendOfTheEnvironmentWithRetries) {
  auto settings = RenderBackend({{"type", "berth"}}, kWhere, "https://berthd:8480", false);
  ASSERT_TRUE(settings);
  EXPECT_EQ(settings->type, "http");
  EXPECT_EQ(settings->config[0], "address=https://berthd:8480/state/v1/acme/web/dev");
  EXPECT_EQ(settings->config[1], "lock_address=https://berthd:8480/state/v1/acme/web/dev");
  EXPECT_NE(std::find(settings->config.begin(), settings->config.end(), "retry_max=9"),
            settings->config.end());
}

TEST(BackendConfig, ObjectStoresKeyTheStateUnderThePrefixWithTheirLocking) {
  EXPECT_EQ(Render({{"type", "s3"},
                    {"bucket", "states"},
                    {"region", "eu-central-1"},
                    {"path_prefix", "/teams/platform/"},
                    {"endpoint", "https://minio:9000"},
                    {"use_path_style", true},
                    {"role_arn", "arn:aws:iam::123456789012:role/berth"}}),
            (std::vector<std::string>{
                "bucket=states", "region=eu-central-1",
                "key=teams/platform/acme/web/dev/terraform.tfstate", "use_lockfile=true",
                "endpoints={s3=\"https://minio:9000\"}", "use_path_style=true",
                "assume_role={role_arn=\"arn:aws:iam::123456789012:role/berth\"}"}));
  EXPECT_EQ(
      Render({{"type", "s3"},
              {"bucket", "states"},
              {"region", "eu-central-1"},
              {"sts_endpoint", "https://sts.eu-central-1.amazonaws.com"}}),
      (std::vector<std::string>{"bucket=states", "region=eu-central-1",
                                "key=acme/web/dev/terraform.tfstate", "use_lockfile=true",
                                "endpoints={sts=\"https://sts.eu-central-1.amazonaws.com\"}"}));
  EXPECT_EQ(Render({{"type", "gcs"}, {"bucket", "states"}}),
            (std::vector<std::string>{"bucket=states", "prefix=acme/web/dev"}));
  EXPECT_EQ(Render({{"type", "azurerm"},
                    {"storage_account_name", "berth"},
                    {"container_name", "tfstate"},
                    {"path_prefix", "p"}}),
            (std::vector<std::string>{"storage_account_name=berth", "container_name=tfstate",
                                      "key=p/acme/web/dev.tfstate"}));
}

TEST(BackendConfig, AKubernetesSecretSuffixIsALabelValueThatKeepsEnvironmentsApart) {
  auto local = Render({{"type", "kubernetes"}, {"namespace", "states"}});
  ASSERT_EQ(local.size(), 2u);
  EXPECT_EQ(local[0], "namespace=states");
  EXPECT_TRUE(local[1].starts_with("secret_suffix=dev-")) << local[1];
  auto pod = Render({{"type", "kubernetes"}, {"namespace", "states"}}, true);
  EXPECT_EQ(pod.back(), "in_cluster_config=true");

  std::string long_env(63, 'e');
  auto a = RenderBackend({{"type", "kubernetes"}, {"namespace", "s"}}, {"acme", "web", long_env},
                         "", false);
  auto b = RenderBackend({{"type", "kubernetes"}, {"namespace", "s"}}, {"acme", "api", long_env},
                         "", false);
  std::string suffix_a = a->config[1].substr(14), suffix_b = b->config[1].substr(14);
  EXPECT_LE(suffix_a.size(), 63u);
  EXPECT_NE(suffix_a, suffix_b);
}

TEST(BackendConfig, AStorageTypeWithoutABackendIsRefusedByName) {
  auto none = RenderBackend({{"type", "consul"}}, kWhere, "", false);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("consul"), std::string::npos);
}

}  // namespace
}  // namespace berth::server
