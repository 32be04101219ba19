// berth's SigV4 signer against botocore's, AWS's own: the same request, credentials and time
// give the same Authorization header, for S3 (a conditional delete with session credentials, a
// listing with a query) and STS (a form body).
#include "crypto/aws_sigv4.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sys/subprocess.h"

namespace berth::crypto {
namespace {

using nlohmann::json;

// 2026-01-02T03:04:05Z, the time botocore_sign.py signs at.
const auto kAt = std::chrono::system_clock::time_point(std::chrono::seconds(1767323045));

std::string BotocoreAuthorization(const AwsRequest& request, const AwsCredentials& credentials,
                                  const std::string& region, const std::string& service) {
  json headers = json::object();
  for (const auto& [name, value] : request.headers) headers[name] = value;
  const json spec = {{"key", credentials.access_key_id},
                     {"secret", credentials.secret_access_key},
                     {"token", credentials.session_token},
                     {"method", request.method},
                     {"url", "http://" + request.host + request.path +
                                 (request.query.empty() ? "" : "?" + request.query)},
                     {"body", request.body},
                     {"headers", headers},
                     {"service", service},
                     {"region", region}};
  auto signed_by_botocore =
      sys::RunToCompletion({.argv = {"/usr/bin/env", "python3", BOTOCORE_SIGN, spec.dump()}});
  EXPECT_TRUE(signed_by_botocore) << signed_by_botocore.error().ToString();
  if (!signed_by_botocore) return "";
  EXPECT_EQ(signed_by_botocore->exit_code, 0) << signed_by_botocore->output;
  std::string out = signed_by_botocore->output;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string OursAuthorization(const AwsRequest& request, const AwsCredentials& credentials,
                              const std::string& region, const std::string& service) {
  for (const auto& [name, value] : SignAwsRequest(request, credentials, region, service, kAt))
    if (name == "Authorization") return value;
  return "";
}

TEST(AwsSigV4, SignsAsBotocoreDoes) {
  const AwsCredentials temporary{"ASIATEMPORARY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                 "session/token+with=chars"};
  const AwsCredentials plain{"AKIDEXAMPLE", "secret", ""};
  const std::vector<std::tuple<AwsRequest, AwsCredentials, std::string, std::string>> cases = {
      {{.method = "DELETE",
        .host = "127.0.0.1:9000",
        .path = "/berth-states/teams/web/default/web/dev/terraform.tfstate.tflock",
        .headers = {{"If-Match", "\"9b2cf535f27731c974343645a3985328\""}}},
       temporary,
       "eu-west-1",
       "s3"},
      {{.method = "GET",
        .host = "states.s3.eu-central-1.amazonaws.com",
        .path = "/",
        .query = "prefix=teams%2Fweb&list-type=2"},
       plain,
       "eu-central-1",
       "s3"},
      {{.method = "POST",
        .host = "sts.eu-west-1.amazonaws.com",
        .path = "/",
        .headers = {{"Content-Type", "application/x-www-form-urlencoded"}},
        .body = "Action=AssumeRoleWithWebIdentity&Version=2011-06-15"},
       plain,
       "eu-west-1",
       "sts"}};
  for (const auto& [request, credentials, region, service] : cases) {
    const std::string botocore = BotocoreAuthorization(request, credentials, region, service);
    ASSERT_TRUE(botocore.starts_with("AWS4-HMAC-SHA256 ")) << botocore;
    EXPECT_EQ(OursAuthorization(request, credentials, region, service), botocore)
        << request.method << " " << request.host << request.path;
  }
}

}  // namespace
}  // namespace berth::crypto
