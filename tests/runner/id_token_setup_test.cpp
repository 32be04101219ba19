// What a run's ID token becomes for TF's providers: its file, and each named cloud's variables
// pointing at it (Google's as an external-account credentials file).
#include "runner/id_token_setup.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sys/files.h"

namespace berth::runner {
namespace {

using nlohmann::json;

TEST(IdTokenSetup, EachNamedCloudIsPointedAtTheTokensFileAndNoOtherIs) {
  auto dir = sys::TempDir::Create("id-token");
  ASSERT_TRUE(dir);
  const json answer = {
      {"token", "header.claims.signature"},
      {"aws", {{"role_arn", "arn:aws:iam::123456789012:role/deploy"}}},
      {"azure",
       {{"client_id", "11111111-2222-3333-4444-555555555555"},
        {"tenant_id", "66666666-7777-8888-9999-000000000000"}}},
      {"gcp",
       {{"workload_identity_provider",
         "projects/42/locations/global/workloadIdentityPools/berth/providers/prod"},
        {"service_account", "deploy@infra.iam.gserviceaccount.com"}}}};
  auto placed = PlaceIdToken(answer.dump(), dir->Path(), "dep_1/apply");
  ASSERT_TRUE(placed) << placed.error().ToString();
  EXPECT_EQ(placed->token, "header.claims.signature");
  EXPECT_EQ(sys::ReadFile(placed->file).value(), "header.claims.signature");
  const std::string file = placed->file.string();
  const std::string credentials = (dir->Path() / "gcp-credentials.json").string();
  EXPECT_EQ(placed->env,
            (std::vector<std::string>{
                "BERTH_ID_TOKEN_FILE=" + file, "AWS_ROLE_ARN=arn:aws:iam::123456789012:role/deploy",
                "AWS_WEB_IDENTITY_TOKEN_FILE=" + file, "AWS_ROLE_SESSION_NAME=berth-dep_1-apply",
                "ARM_USE_OIDC=true", "ARM_OIDC_TOKEN_FILE_PATH=" + file,
                "ARM_CLIENT_ID=11111111-2222-3333-4444-555555555555",
                "ARM_TENANT_ID=66666666-7777-8888-9999-000000000000",
                "GOOGLE_APPLICATION_CREDENTIALS=" + credentials}));
  const json google = json::parse(sys::ReadFile(credentials).value());
  EXPECT_EQ(google["type"], "external_account");
  EXPECT_EQ(google["audience"],
            "//iam.googleapis.com/projects/42/locations/global/workloadIdentityPools/berth/"
            "providers/prod");
  EXPECT_EQ(google["subject_token_type"], "urn:ietf:params:oauth:token-type:jwt");
  EXPECT_EQ(google["credential_source"]["file"], file);
  EXPECT_EQ(google["service_account_impersonation_url"],
            "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/"
            "deploy@infra.iam.gserviceaccount.com:generateAccessToken");
  EXPECT_EQ(google.dump().find("header.claims"), std::string::npos) << "the file names the token";

  auto bare = PlaceIdToken(json{{"token", "t.o.k"}}.dump(), dir->Path(), "r");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->env, std::vector<std::string>{"BERTH_ID_TOKEN_FILE=" + bare->file.string()});
  EXPECT_FALSE(PlaceIdToken("{}", dir->Path(), "r")) << "an answer without a token";
  EXPECT_FALSE(PlaceIdToken("not json", dir->Path(), "r"));
}

}  // namespace
}  // namespace berth::runner
