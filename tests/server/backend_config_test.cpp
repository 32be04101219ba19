// The backend settings of each state storage type (as saved, read by its schema): one state per
// environment under the path prefix, each backend's own locking on.
#include "server/dispatch/backend_config.h"

#include <gtest/gtest.h>

namespace berth::server {
namespace {

using nlohmann::json;

const EnvironmentRef kWhere{"acme", "web", "dev"};

BackendSettings Rendered(const json& saved, const EnvironmentRef& where = kWhere,
                         bool in_cluster = false) {
  auto storage = ParseStateStorage(saved);
  EXPECT_TRUE(storage) << storage.error().ToString();
  return storage ? RenderBackend(*storage, where, "https://berthd:8480", in_cluster)
                 : BackendSettings{};
}

std::vector<std::string> Render(const json& saved, bool in_cluster = false) {
  return Rendered(saved, kWhere, in_cluster).config;
}

TEST(BackendConfig, BerthIsTheHttpBackendOfTheEnvironmentWithRetries) {
  BackendSettings settings = Rendered({{"type", "berth"}});
  EXPECT_EQ(settings.type, "http");
  ASSERT_GE(settings.config.size(), 2u);
  EXPECT_EQ(settings.config[0], "address=https://berthd:8480/state/v1/acme/web/dev");
  EXPECT_EQ(settings.config[1], "lock_address=https://berthd:8480/state/v1/acme/web/dev");
  EXPECT_NE(std::find(settings.config.begin(), settings.config.end(), "retry_max=9"),
            settings.config.end());
}

TEST(BackendConfig, ObjectStoresKeyTheStateUnderThePrefixWithTheirLocking) {
  EXPECT_EQ(Render({{"type", "s3"},
                    {"bucket", "states"},
                    {"region", "eu-central-1"},
                    {"path_prefix", "teams/platform/"},
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
  auto a = Rendered({{"type", "kubernetes"}, {"namespace", "s"}}, {"acme", "web", long_env});
  auto b = Rendered({{"type", "kubernetes"}, {"namespace", "s"}}, {"acme", "api", long_env});
  ASSERT_EQ(a.config.size(), 2u);
  ASSERT_EQ(b.config.size(), 2u);
  std::string suffix_a = a.config[1].substr(14), suffix_b = b.config[1].substr(14);
  EXPECT_LE(suffix_a.size(), 63u);
  EXPECT_NE(suffix_a, suffix_b);
}

// A row its schema refuses (written by hand or by another version) is refused naming the
// field, never rendered with what could be read: a type without a backend, a field of
// another type, a missing bucket, a value of the wrong type, a document that is no object.
TEST(StateStorage, ARowItsSchemaRefusesIsRefusedNamingTheField) {
  const std::vector<std::pair<json, std::string>> refused = {
      {{{"type", "consul"}}, "$.state_storage_configuration.type"},
      {{{"type", "berth"}, {"path_prefix", "p"}}, "$.state_storage_configuration.path_prefix"},
      {{{"type", "gcs"}}, "$.state_storage_configuration.bucket"},
      {{{"type", "s3"}, {"bucket", "states"}, {"region", "eu-west-1"}, {"use_path_style", "yes"}},
       "$.state_storage_configuration.use_path_style"},
      {json::array(), "$.state_storage_configuration.type"},
      {json(), "$.state_storage_configuration.type"},
  };
  for (const auto& [saved, field] : refused) {
    auto storage = ParseStateStorage(saved);
    ASSERT_FALSE(storage) << saved.dump();
    EXPECT_NE(storage.error().ToString().find(field), std::string::npos)
        << saved.dump() << ": " << storage.error().ToString();
  }
  auto s3 = ParseStateStorage({{"type", "s3"},
                               {"bucket", "states"},
                               {"region", "eu-west-1"},
                               {"role_arn", "arn:aws:iam::123456789012:role/berth"}});
  ASSERT_TRUE(s3) << s3.error().ToString();
  EXPECT_EQ(TypeOf(*s3), StateStorageType::kS3);
  EXPECT_EQ(std::get<S3StateStorage>(*s3).role_arn, "arn:aws:iam::123456789012:role/berth");
  EXPECT_FALSE(std::get<S3StateStorage>(*s3).use_path_style);
}

}  // namespace
}  // namespace berth::server
