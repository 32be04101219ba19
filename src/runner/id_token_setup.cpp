#include "runner/id_token_setup.h"

#include <nlohmann/json.hpp>

#include "core/bounded_json.h"
#include "sys/files.h"

namespace berth::runner {
namespace {

using nlohmann::json;

// A string member of a settings object, "" when absent.
std::string Text(const json& object, const char* key) {
  auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : "";
}

// AWS names a session [\w+=,.@-]{2,64}: the run's id, cut to fit.
std::string SessionName(const std::string& run_id) {
  std::string name = "berth-" + run_id;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("+=,.@-_").find(c) == std::string_view::npos)
      c = '-';
  return name.substr(0, 64);
}

}  // namespace

Result<IdTokenSetup> PlaceIdToken(const std::string& answer, const std::filesystem::path& dir,
                                  const std::string& run_id) {
  const json document = ParseBoundedJsonOrNull(answer);
  IdTokenSetup setup{.token = document.is_object() ? Text(document, "token") : ""};
  if (setup.token.empty())
    return MakeError(ErrorKind::kFailedPrecondition, "berthd's ID token answer holds no token");
  setup.file = std::filesystem::absolute(dir / "id-token");
  if (auto written = sys::WriteFileAtomic(setup.file, setup.token); !written)
    return written.error();
  const std::string file = setup.file.string();
  setup.env.push_back("BERTH_ID_TOKEN_FILE=" + file);
  if (const json aws = document.value("aws", json()); aws.is_object()) {
    setup.env.push_back("AWS_ROLE_ARN=" + Text(aws, "role_arn"));
    setup.env.push_back("AWS_WEB_IDENTITY_TOKEN_FILE=" + file);
    setup.env.push_back("AWS_ROLE_SESSION_NAME=" + SessionName(run_id));
  }
  if (const json azure = document.value("azure", json()); azure.is_object()) {
    setup.env.push_back("ARM_USE_OIDC=true");
    setup.env.push_back("ARM_OIDC_TOKEN_FILE_PATH=" + file);
    setup.env.push_back("ARM_CLIENT_ID=" + Text(azure, "client_id"));
    setup.env.push_back("ARM_TENANT_ID=" + Text(azure, "tenant_id"));
  }
  if (const json gcp = document.value("gcp", json()); gcp.is_object()) {
    // Google's external-account credentials (AIP-4117), the token read from its file.
    json credentials = {
        {"type", "external_account"},
        {"audience", "//iam.googleapis.com/" + Text(gcp, "workload_identity_provider")},
        {"subject_token_type", "urn:ietf:params:oauth:token-type:jwt"},
        {"token_url", "https://sts.googleapis.com/v1/token"},
        {"credential_source", {{"file", file}}}};
    if (const std::string account = Text(gcp, "service_account"); !account.empty())
      credentials["service_account_impersonation_url"] =
          "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/" + account +
          ":generateAccessToken";
    const auto path = std::filesystem::absolute(dir / "gcp-credentials.json");
    if (auto written = sys::WriteFileAtomic(path, credentials.dump(2)); !written)
      return written.error();
    setup.env.push_back("GOOGLE_APPLICATION_CREDENTIALS=" + path.string());
  }
  return setup;
}

}  // namespace berth::runner
