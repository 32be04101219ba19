// AWS Signature Version 4 (docs.aws.amazon.com, "Create a signed AWS API request"): what berthd
// signs its own S3 requests with, from short-lived credentials it got for itself. OpenSSL only;
// no AWS SDK.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::crypto {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // of temporary credentials; empty for none
};

struct AwsRequest {
  std::string method;  // GET, PUT, DELETE, ...
  std::string host;    // as the Host header sends it (with a port that is not the default)
  std::string path;    // already URI-encoded as it goes on the wire ("/bucket/a/b.tflock")
  std::string query;   // already encoded, without "?" ("list-type=2&prefix=a")
  std::vector<std::pair<std::string, std::string>> headers;  // more to sign (If-Match, ...)
  std::string body;
};

// The headers that make request signed for service ("s3", "sts") in region at now: x-amz-date,
// x-amz-content-sha256 (S3's), x-amz-security-token when the credentials have one, and
// Authorization.
std::vector<std::pair<std::string, std::string>> SignAwsRequest(
    const AwsRequest& request, const AwsCredentials& credentials, std::string_view region,
    std::string_view service, std::chrono::system_clock::time_point now);

}  // namespace berth::crypto
