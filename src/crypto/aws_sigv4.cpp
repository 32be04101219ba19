#include "crypto/aws_sigv4.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>

#include "crypto/digest.h"

namespace berth::crypto {
namespace {

// "20150830T123600Z" and its date, "20150830".
std::string AmzDate(std::chrono::system_clock::time_point now) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[17];
  std::strftime(text, sizeof(text), "%Y%m%dT%H%M%SZ", &utc);
  return text;
}

std::string Lower(std::string text) {
  std::ranges::transform(text, text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// The query's parameters sorted by name (then value), as SigV4's canonical query string.
std::string CanonicalQuery(std::string_view query) {
  std::vector<std::string> parameters;
  for (size_t start = 0; start <= query.size() && !query.empty();) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    std::string parameter(query.substr(start, end - start));
    if (parameter.find('=') == std::string::npos) parameter += '=';
    parameters.push_back(std::move(parameter));
    start = end + 1;
  }
  std::ranges::sort(parameters);
  std::string out;
  for (const std::string& parameter : parameters) out += (out.empty() ? "" : "&") + parameter;
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> SignAwsRequest(
    const AwsRequest& request, const AwsCredentials& credentials, std::string_view region,
    std::string_view service, std::chrono::system_clock::time_point now) {
  const std::string amz_date = AmzDate(now);
  const std::string date = amz_date.substr(0, 8);
  const std::string payload_hash = Sha256Hex(request.body);
  std::vector<std::pair<std::string, std::string>> added = {{"x-amz-date", amz_date}};
  // S3 wants the payload's hash as a header of its own (and signed); other services do not.
  if (service == "s3") added.emplace_back("x-amz-content-sha256", payload_hash);
  if (!credentials.session_token.empty())
    added.emplace_back("x-amz-security-token", credentials.session_token);

  // Every header that is signed, by its lower-case name: sorted, values trimmed.
  std::map<std::string, std::string> signed_headers = {{"host", request.host}};
  for (const auto& [name, value] : request.headers) signed_headers[Lower(name)] = value;
  for (const auto& [name, value] : added) signed_headers[name] = value;
  std::string canonical_headers, header_names;
  for (const auto& [name, value] : signed_headers) {
    canonical_headers += name + ":" + value + "\n";
    header_names += (header_names.empty() ? "" : ";") + name;
  }
  const std::string canonical_request = request.method + "\n" +
                                        (request.path.empty() ? "/" : request.path) + "\n" +
                                        CanonicalQuery(request.query) + "\n" + canonical_headers +
                                        "\n" + header_names + "\n" + payload_hash;
  const std::string scope =
      date + "/" + std::string(region) + "/" + std::string(service) + "/aws4_request";
  const std::string string_to_sign =
      "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + Sha256Hex(canonical_request);
  std::string key = HmacSha256("AWS4" + credentials.secret_access_key, date);
  for (std::string_view part : {region, service, std::string_view("aws4_request")})
    key = HmacSha256(key, part);
  added.emplace_back("Authorization", "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id +
                                          "/" + scope + ", SignedHeaders=" + header_names +
                                          ", Signature=" + HmacSha256Hex(key, string_to_sign));
  return added;
}

}  // namespace berth::crypto
