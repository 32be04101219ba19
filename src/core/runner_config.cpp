// Runner and state storage types, their schemas, and the compatibility matrix.
#include "core/runner_config.h"

#include <algorithm>
#include <array>
#include <map>
#include <utility>

#include "core/duration.h"
#include "core/ed25519_key.h"
#include "core/enum_names.h"
#include "core/pattern.h"
#include "core/quantity.h"

namespace berth {
namespace {

using nlohmann::json;

constexpr EnumNames<RunnerType, 8> kRunnerTypes{{
    {RunnerType::kKubernetes, "kubernetes"},
    {RunnerType::kKubernetesAgent, "kubernetes-agent"},
    {RunnerType::kKubernetesGke, "kubernetes-gke"},
    {RunnerType::kKubernetesEks, "kubernetes-eks"},
    {RunnerType::kKubernetesAks, "kubernetes-aks"},
    {RunnerType::kServerlessEcs, "serverless-ecs"},
    {RunnerType::kVm, "vm"},
    {RunnerType::kLocal, "local"},
}};

constexpr EnumNames<StateStorageType, 5> kStorageTypes{{
    {StateStorageType::kKubernetes, "kubernetes"},
    {StateStorageType::kS3, "s3"},
    {StateStorageType::kGcs, "gcs"},
    {StateStorageType::kAzurerm, "azurerm"},
    {StateStorageType::kBerth, "berth"},
}};

constexpr const char* kDnsLabel = "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?";
constexpr const char* kDnsSubdomain =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr const char* kUuid =
    "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

Schema TypeField(std::string_view name) {
  return std::move(Schema::String().OneOf({std::string(name)}).Doc("the type"));
}

// A duration ("30m", "2h") from min to max, described as range (for errors). The document's
// pattern is a part of what is accepted (whole minutes or hours within the range): a client
// that follows it is never refused.
Schema DurationText(Duration min, Duration max, const std::string& range,
                    const std::string& pattern, std::string doc) {
  return std::move(Schema::String()
                       .Require([min, max, range](const json& v) -> std::optional<std::string> {
                         auto d = ParseDuration(v.get<std::string>());
                         if (!d || *d < min || *d > max) return "must be a duration " + range;
                         return std::nullopt;
                       })
                       .JsonSchema({{"pattern", pattern}})
                       .Doc(std::move(doc)));
}

// A runner's Pods; with kept_pods, the field that keeps a plan's Pod for its apply (berthd's
// own Kubernetes launcher does; an agent's does not).
Schema Job(bool kept_pods) {
  std::vector<Field> fields = {
      Required("namespace", std::move(Schema::String()
                                          .Pattern(kDnsLabel, "a Kubernetes namespace name")
                                          .Doc("namespace of the runner Pods or Jobs"))),
      Optional(
          "service_account",
          std::move(Schema::String()
                        .Pattern(kDnsSubdomain, "a Kubernetes service account name")
                        .Doc("identity of the runner Pods (empty: the namespace default); saved "
                             "by an admin token only"))),
      Optional("pod_template",
               std::move(Schema::ObjectOrJsonString().Doc(
                   "Pod template (metadata, spec) merged into every runner Pod; an object or a "
                   "JSON string"))),
      Optional("image", std::move(Schema::String().MaxLength(512).Doc("runner image override"))),
      Optional("binary", std::move(Schema::String()
                                       .OneOf({"auto", "tofu", "terraform"})
                                       .Doc("which TF the runner runs (default auto: tofu, else "
                                            "terraform); each run records which ran"))),
      Optional("always_cleanup",
               std::move(Schema::Bool().Doc(
                   "false: a finished runner Pod is kept for inspection (default true)"))),
      Optional("termination_grace_period_seconds",
               std::move(Schema::Integer().Range(0, 86400).Doc(
                   "how long a cancelled run gets to stop TF cleanly before it is killed"))),
  };
  if (kept_pods)
    fields.push_back(Optional(
        "keep_for_approval",
        DurationText(std::chrono::minutes(1), std::chrono::hours(6), "from 1m to 6h (15m, 2h)",
                     "^(?:[1-5]?[1-9]m|[1-5]0m|[1-6]h)$",
                     "a plan that waits for approval keeps its runner Pod this long: an apply "
                     "approved meanwhile runs there, without a second init (default: not kept)")));
  return Schema::Object(std::move(fields));
}

Schema Ed25519Key() {
  return std::move(Schema::String()
                       .Require([](const json& v) -> std::optional<std::string> {
                         auto key = ParseEd25519PublicKeyPem(v.get<std::string>());
                         if (!key) return key.error().message;
                         return std::nullopt;
                       })
                       // Any 32 bytes are an Ed25519 public key: its SubjectPublicKeyInfo is a
                       // fixed prefix, then 43 base64 characters and one '='.
                       .JsonSchema({{"pattern",
                                     "^-----BEGIN PUBLIC KEY-----\\n?MCowBQYDK2VwAyEA[A-Za-z0-9+/]"
                                     "{42}[AEIMQUYcgkosw048]=\\n?-----END PUBLIC KEY-----\\n?$"}})
                       .Doc("Ed25519 public key (PEM) the agent signs its requests with"));
}

// A string matching regex (whole), described for errors and docs.
Schema Text(const std::string& regex, const std::string& description) {
  return std::move(Schema::String().Pattern(regex, description));
}
Schema Uuid() { return Text(kUuid, "a UUID"); }
Schema AwsRegion() { return Text("[a-z]{2}(-gov)?-[a-z]+-[0-9]", "an AWS region"); }
Schema RoleArn() { return Text("arn:aws[a-z-]*:iam::[0-9]{12}:role/.+", "an IAM role ARN"); }
Schema AzureResourceGroup() { return Text("[-A-Za-z0-9_.()]{1,90}", "an Azure resource group"); }

Schema AbsolutePath(std::string doc) {
  return std::move(Text("/.*", "an absolute path").Doc(std::move(doc)));
}

// The Kubernetes types differ only in how the cluster is found and reached.
Schema KubernetesType(std::string_view name, Field cluster) {
  return Schema::Object({Required("type", TypeField(name)), std::move(cluster),
                         Required("job", Job(/*kept_pods=*/true))});
}

// How berthd proves who it is to a cluster named by its server: a token file of the
// organization's, or an ID token berthd signs itself for a cluster that trusts it as an issuer.
Schema ClusterAuth() {
  return std::move(
      Schema::Object(
          {Optional("token_file",
                    std::move(Text("[A-Za-z0-9][A-Za-z0-9._-]{0,252}", "a file name")
                                  .Doc("a file in the organization's folder of berthd's "
                                       "--clusters-dir (DIR/ORG/FILE) holding a bearer token for "
                                       "the server, re-read as it rotates"))),
           Optional(
               "oidc_audience",
               std::move(
                   Text("\\S+", "text without spaces")
                       .MaxLength(256)
                       .Doc("berthd signs its own ID token for the server (docs/oidc.md): this "
                            "audience, sub org:ORG:runner:RUNNER; for a cluster whose "
                            "AuthenticationConfiguration trusts berthd's issuer")))})
          .Require([](const nlohmann::json& auth) -> std::optional<std::string> {
            const bool file = auth.contains("token_file") && !auth["token_file"].is_null();
            const bool oidc = auth.contains("oidc_audience") && !auth["oidc_audience"].is_null();
            if (file == oidc) return "give token_file or oidc_audience: one of them";
            return std::nullopt;
          })
          .JsonSchema({{"oneOf",
                        {{{"required", {"token_file"}},
                          {"properties", {{"oidc_audience", {{"type", "null"}}}}}},
                         {{"required", {"oidc_audience"}},
                          {"properties", {{"token_file", {{"type", "null"}}}}}}}}})
          .Doc("how berthd proves who it is there"));
}

// A kubernetes runner's cluster: a context of the organization's kubeconfig, or an API server
// named by URL and CA with the credential berthd proves itself with there. Without it, runs go
// to berthd's own cluster (in-cluster or KUBECONFIG's current context).
Schema KubernetesCluster() {
  const std::vector<std::string> by_server = {"server", "certificate_authority", "auth"};
  return std::move(
      Schema::Object(
          {Optional("kubeconfig_context",
                    std::move(Text("\\S.*", "a context name: not empty")
                                  .MaxLength(253)
                                  .Doc("a context of the organization's kubeconfig "
                                       "(DIR/ORG/kubeconfig of berthd's "
                                       "--clusters-dir): its server, CA and user"))),
           Optional("server", std::move(Text("https://[^\\s/?#@]+(/[^\\s?#]*)?", "an https URL")
                                            .MaxLength(2048)
                                            .Doc("the cluster's API server"))),
           Optional(
               "certificate_authority",
               std::move(Schema::String()
                             .MaxLength(65536)
                             .Require([](const nlohmann::json& v) -> std::optional<std::string> {
                               if (v.get_ref<const std::string&>().find(
                                       "-----BEGIN CERTIFICATE-----") == std::string::npos)
                                 return "must be a PEM certificate";
                               return std::nullopt;
                             })
                             .JsonSchema({{"pattern", "-----BEGIN CERTIFICATE-----"}})
                             .Doc("PEM of the CA that signed the API server's certificate"))),
           Optional("auth", ClusterAuth())})
          .Require([by_server](const nlohmann::json& cluster) -> std::optional<std::string> {
            auto set = [&cluster](const std::string& field) {
              auto it = cluster.find(field);
              return it != cluster.end() && !it->is_null();
            };
            const bool context = set("kubeconfig_context");
            const bool any_server = std::ranges::any_of(by_server, set);
            if (context && any_server)
              return "kubeconfig_context or server, certificate_authority and auth: not both";
            if (!context && !std::ranges::all_of(by_server, set))
              return "names no cluster: give kubeconfig_context, or server, certificate_authority "
                     "and auth";
            return std::nullopt;
          })
          .JsonSchema({{"oneOf",
                        {{{"required", {"kubeconfig_context"}},
                          {"properties",
                           {{"kubeconfig_context", {{"type", "string"}}},
                            {"server", {{"type", "null"}}},
                            {"certificate_authority", {{"type", "null"}}},
                            {"auth", {{"type", "null"}}}}}},
                         {{"required", by_server},
                          {"properties",
                           {{"kubeconfig_context", {{"type", "null"}}},
                            {"server", {{"type", "string"}}},
                            {"certificate_authority", {{"type", "string"}}},
                            {"auth", {{"type", "object"}}}}}}}}})
          .Doc("the cluster its runs go to, reached with berthd's own credentials there; "
               "without it, berthd's own cluster (in-cluster or KUBECONFIG)"));
}

// Bytes as a Kubernetes quantity ("512Mi", "10Gi"): whole, at least min.
Schema ByteQuantity(int64_t min, std::string doc) {
  return std::move(Schema::String()
                       .MaxLength(32)
                       .Require([min](const nlohmann::json& v) -> std::optional<std::string> {
                         auto q = Quantity::Parse(v.get<std::string>());
                         std::optional<int64_t> bytes = q ? q->AsInt64() : std::nullopt;
                         if (!bytes || *bytes < min)
                           return "must be a whole number of bytes of at least " +
                                  std::to_string(min) + ", as a quantity such as 512Mi or 10Gi";
                         return std::nullopt;
                       })
                       // A part of what is accepted that is above every minimum used here.
                       .JsonSchema({{"pattern", "^(?:[1-9][0-9]{2,5}Mi|[1-9][0-9]{0,3}Gi)$"}})
                       .Doc(std::move(doc)));
}

// What one local run may use (launch/local/run_limits.h enforces them).
Schema LocalRunLimits() {
  return Schema::Object({
      Optional("memory", ByteQuantity(64 << 20,
                                      "memory of all the run's processes together, beyond which "
                                      "the kernel kills one (needs control groups: a root berthd "
                                      "on cgroup v1, or a cgroup v2 group delegated to berthd)")),
      Optional("cpu_seconds",
               std::move(
                   Schema::Integer()
                       .Range(1, int64_t{7} * 24 * 3600)
                       .Doc("CPU time of all the run's processes together, beyond which the run is "
                            "stopped (needs control groups: a root berthd on cgroup v1, or a "
                            "cgroup v2 group delegated to berthd)"))),
      Optional("disk", ByteQuantity(16 << 20,
                                    "what the run's folder (work, home, tmp) may hold, beyond "
                                    "which the run is stopped; no single file may be larger")),
      Optional("processes",
               std::move(Schema::Integer().Range(8, 65536).Doc(
                   "processes and threads of the run at once (needs control groups: a root berthd "
                   "on cgroup v1, or a cgroup v2 group delegated to berthd)"))),
  });
}

Schema Build(RunnerType type) {
  std::string_view name = RunnerTypeName(type);
  switch (type) {
    case RunnerType::kKubernetes:
      return KubernetesType(name, Optional("cluster", KubernetesCluster()));
    case RunnerType::kKubernetesAgent:
      return Schema::Object({
          Required("type", TypeField(name)),
          Required("key", Ed25519Key()),
          Optional("next_key",
                   std::move(Ed25519Key().Doc(
                       "a second key the agents may sign with while they roll over to it"))),
          Optional("command_expiry",
                   DurationText(std::chrono::seconds(10), std::chrono::hours(168),
                                "from 10s to 168h (30m, 2h)",
                                "^(?:[1-5]?[1-9]m|[1-5]0m|[1-9][0-9]?h|1[0-5][0-9]h|16[0-8]h)$",
                                "how long a launch waits in the queue for an agent before its "
                                "deployment fails with AgentUnavailable (default 1h)")),
          Required("job", Job(/*kept_pods=*/false)),
      });
    case RunnerType::kKubernetesGke:
      return KubernetesType(
          name,
          Required(
              "cluster",
              Schema::Object({
                  Required("name", Text(kDnsLabel, "a GKE cluster name")),
                  Required("project_id", Text("[a-z][-a-z0-9]{4,28}[a-z0-9]", "a GCP project id")),
                  Required("location", Text("[a-z]+-[a-z]+[0-9](-[a-z])?", "a GCP region or zone")),
                  Optional("internal_ip", std::move(Schema::Bool().Doc(
                                              "reach the control plane on its internal IP"))),
                  Required("auth",
                           Schema::Object({
                               Required("gcp_audience",
                                        Text("//iam\\.googleapis\\.com/projects/[0-9]+/locations/"
                                             "global/workloadIdentityPools/[^/]+/providers/[^/]+",
                                             "a workload identity provider audience")),
                               Required("gcp_service_account",
                                        Text("[^@]+@[^@]+\\.iam\\.gserviceaccount\\.com",
                                             "a GCP service account email")),
                           })),
              })));
    case RunnerType::kKubernetesEks:
      return KubernetesType(
          name,
          Required(
              "cluster",
              Schema::Object({
                  Required("name", Text("[0-9A-Za-z][A-Za-z0-9\\-_]{0,99}", "an EKS cluster name")),
                  Required("region", AwsRegion()),
                  Required("auth", Schema::Object({
                                       Required("role_arn", RoleArn()),
                                       Optional("session_name", Text("[A-Za-z0-9_+=,.@-]{2,64}",
                                                                     "an STS session name")),
                                   })),
              })));
    case RunnerType::kKubernetesAks:
      return KubernetesType(
          name,
          Required(
              "cluster",
              Schema::Object({
                  Required("name", Text("[A-Za-z0-9][-_A-Za-z0-9]{0,62}", "an AKS cluster name")),
                  Required("resource_group", AzureResourceGroup()),
                  Required("subscription_id", Uuid()),
                  Required("auth", Schema::Object({Required("client_id", Uuid()),
                                                   Required("tenant_id", Uuid())})),
              })));
    case RunnerType::kServerlessEcs:
      return Schema::Object({
          Required("type", TypeField(name)),
          Required("auth", Schema::Object({Required("role_arn", RoleArn())})),
          Required("job",
                   Schema::Object({
                       Required("region", AwsRegion()),
                       Required("cluster", std::move(Schema::String().MaxLength(255))),
                       Required("subnets",
                                Schema::ArrayOf(Text("subnet-[0-9a-f]{8,17}", "a subnet id"))),
                       Optional("security_groups",
                                Schema::ArrayOf(Text("sg-[0-9a-f]{8,17}", "a security group id"))),
                       Optional("task_role_arn", RoleArn()),
                       Optional("execution_role_arn", RoleArn()),
                       Optional("image", std::move(Schema::String().MaxLength(512).Doc(
                                             "runner image override"))),
                   })),
      });
    case RunnerType::kVm:
      return Schema::Object({Required("type", TypeField(name)), Required("key", Ed25519Key()),
                             Optional("work_dir", AbsolutePath("where the agent lays out runs"))});
    case RunnerType::kLocal:
      return std::move(
          Schema::Object(
              {
                  Required("type", TypeField(name)),
                  Optional(
                      "max_parallel",
                      std::move(Schema::Integer().Range(1, 64).Doc(
                          "this runner's runs at once; the others wait in order without holding up "
                          "other runners (default and ceiling: berthd's --max-parallel-runs, 4)"))),
                  Optional(
                      "work_dir",
                      AbsolutePath("where this runner's run folders are made (default: runs/ in "
                                   "berthd's data folder); saved by an admin token only")),
                  Optional("limits", LocalRunLimits()),
                  Optional("network",
                           std::move(
                               Schema::String()
                                   .OneOf({"full", "berthd_only"})
                                   .Doc("full (default): the run reaches what the machine "
                                        "reaches, but for what network_allow opens; berthd_only: a "
                                        "network of its own in which only berthd (its gateway and "
                                        "state backend) can be reached"))),
                  Optional(
                      "network_allow",
                      std::move(Schema::ArrayOf(Schema::String().OneOf({"metadata", "loopback"}))
                                    .Doc("what a run with network: full reaches that berthd's "
                                         "runs otherwise cannot: metadata (the cloud "
                                         "metadata services, 169.254.169.254, 169.254.170.2, "
                                         "100.100.100.200, fd00:ec2::254), loopback (this "
                                         "machine's ports other than berthd's and DNS)"))),
              })
              .Require([](const json& config) -> std::optional<std::string> {
                // Runs on values the fields' own checks refused too: it assumes no type.
                const auto network = config.find("network");
                const bool cut = network != config.end() && network->is_string() &&
                                 network->get_ref<const std::string&>() == "berthd_only";
                const auto allow = config.find("network_allow");
                if (cut && allow != config.end() && !allow->is_null())
                  return "network_allow: only with network: full (a berthd_only run reaches "
                         "nothing but berthd)";
                return std::nullopt;
              })
              .JsonSchema({{"not",
                            {{"required", {"network", "network_allow"}},
                             {"properties", {{"network", {{"const", "berthd_only"}}}}}}}}));
  }
  return Schema::Object({});
}

Schema PathPrefix() {
  return std::move(Text("([A-Za-z0-9._-]+/)*[A-Za-z0-9._-]*", "a relative key prefix")
                       .MaxLength(512)
                       .Doc("prefix of every environment's state key"));
}

Schema Build(StateStorageType type) {
  std::string_view name = StateStorageTypeName(type);
  switch (type) {
    case StateStorageType::kKubernetes:
      return Schema::Object(
          {Required("type", TypeField(name)),
           Required("namespace", std::move(Text(kDnsLabel, "a Kubernetes namespace name")
                                               .Doc("namespace of the state Secrets")))});
    case StateStorageType::kS3:
      return Schema::Object({
          Required("type", TypeField(name)),
          Required("bucket", Text("[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", "an S3 bucket name")),
          Required("region", AwsRegion()),
          Optional("path_prefix", PathPrefix()),
          Optional("endpoint",
                   std::move(Text("https?://.+", "an http(s) URL").Doc("S3-compatible endpoint"))),
          Optional("sts_endpoint",
                   std::move(Text("https?://.+", "an http(s) URL")
                                 .Doc("the STS endpoint the run's ID token and role_arn are "
                                      "exchanged at (a VPC endpoint; default: AWS's)"))),
          Optional("use_path_style", Schema::Bool()),
          Optional("role_arn",
                   std::move(RoleArn().Doc("assumed by the backend, from the credentials the run "
                                           "has (its environment's id_token.aws role)"))),
      });
    case StateStorageType::kGcs:
      return Schema::Object({
          Required("type", TypeField(name)),
          Required("bucket", Text("[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]", "a GCS bucket name")),
          Optional("path_prefix", PathPrefix()),
      });
    case StateStorageType::kAzurerm:
      return Schema::Object({
          Required("type", TypeField(name)),
          Required("storage_account_name", Text("[a-z0-9]{3,24}", "a storage account name")),
          Required("container_name",
                   Text("[a-z0-9]([a-z0-9-]{1,61}[a-z0-9])?", "a container name")),
          Optional("resource_group_name", AzureResourceGroup()),
          Optional("subscription_id", Uuid()),
          Optional("path_prefix", PathPrefix()),
      });
    case StateStorageType::kBerth:  // keyed by environment in berthd's backend: no prefix
      return Schema::Object({Required("type", TypeField(name))});
  }
  return Schema::Object({});
}

bool IsKubernetes(RunnerType t) {
  return t == RunnerType::kKubernetes || t == RunnerType::kKubernetesAgent ||
         t == RunnerType::kKubernetesGke || t == RunnerType::kKubernetesEks ||
         t == RunnerType::kKubernetesAks;
}

}  // namespace

std::string_view RunnerTypeName(RunnerType type) { return NameOf(kRunnerTypes, type, "unknown"); }

std::optional<RunnerType> ParseRunnerType(std::string_view name) {
  return ValueOf(kRunnerTypes, name);
}

std::string_view StateStorageTypeName(StateStorageType type) {
  return NameOf(kStorageTypes, type, "unknown");
}

std::optional<StateStorageType> ParseStateStorageType(std::string_view name) {
  return ValueOf(kStorageTypes, name);
}

const std::vector<RunnerType>& AllRunnerTypes() {
  static const std::vector<RunnerType> kAll = ValuesOf(kRunnerTypes);
  return kAll;
}

const std::vector<StateStorageType>& AllStateStorageTypes() {
  static const std::vector<StateStorageType> kAll = ValuesOf(kStorageTypes);
  return kAll;
}

bool Compatible(RunnerType runner, StateStorageType storage) {
  // berth's own backend is reached over HTTPS from anywhere a runner runs.
  if (storage == StateStorageType::kBerth) return true;
  if (IsKubernetes(runner)) return true;
  switch (runner) {
    case RunnerType::kServerlessEcs:
      return storage == StateStorageType::kS3;
    case RunnerType::kVm:
    case RunnerType::kLocal:
      return storage == StateStorageType::kS3 || storage == StateStorageType::kGcs ||
             storage == StateStorageType::kAzurerm;
    default:
      return false;
  }
}

std::string AcceptedStorage(RunnerType runner) {
  std::string out = std::string(RunnerTypeName(runner)) + " accepts:";
  bool first = true;
  for (auto storage : AllStateStorageTypes()) {
    if (!Compatible(runner, storage)) continue;
    out += (first ? " " : ", ") + std::string(StateStorageTypeName(storage));
    first = false;
  }
  return out;
}

std::string CompatibilityMatrixMarkdown() {
  std::string out = "| runner type |";
  for (auto s : AllStateStorageTypes()) out += " " + std::string(StateStorageTypeName(s)) + " |";
  out += "\n| --- |";
  for (size_t i = 0; i < AllStateStorageTypes().size(); ++i) out += " --- |";
  out += "\n";
  for (auto r : AllRunnerTypes()) {
    out += "| " + std::string(RunnerTypeName(r)) + " |";
    for (auto s : AllStateStorageTypes()) out += Compatible(r, s) ? " yes |" : " no |";
    out += "\n";
  }
  return out;
}

std::string RunnerSchemasMarkdown() {
  std::string out =
      "# Runners\n\n"
      "<!-- Generated from src/core/runner_config.cpp by tests/core/runner_docs_test.cpp: "
      "BERTH_UPDATE_DOCS=1 ctest -R runner_docs -->\n\n"
      "A runner is where runs execute (`runner_configuration`, typed by `type`) and where their "
      "state lives (`state_storage_configuration`, typed by `type`):\n\n"
      "```yaml\ndescription: optional, up to 1024 characters\nrunner_configuration:\n  type: "
      "kubernetes-gke\n  # the type's fields\nstate_storage_configuration:\n  type: kubernetes\n"
      "  # the type's fields\n```\n\n"
      "Unknown fields are refused; every error names its JSON path. A `pod_template` may be an "
      "object or a string holding one as JSON.\n\n## Which state storage each runner type "
      "takes\n\n" +
      CompatibilityMatrixMarkdown() + "\n## Runner types\n";
  const std::string header =
      "\n| field | type | required | description |\n| --- | --- | --- | --- |\n";
  for (auto t : AllRunnerTypes()) {
    out += "\n### `" + std::string(RunnerTypeName(t)) + "`\n" + header +
           DescribeFields(RunnerConfigurationSchema(t));
    // What of the type berthd refuses for now (409 when saved), with every field it may set.
    FieldErrors refused = NotHonouredYet(t);
    if (!refused.empty())
      out += "\nNot honoured yet, so refused when saved (409, naming the field):\n";
    for (const FieldError& field : refused) out += "- `" + field.path + "` " + field.rule + "\n";
  }
  out += "\n## State storage types\n";
  for (auto t : AllStateStorageTypes()) {
    out += "\n### `" + std::string(StateStorageTypeName(t)) + "`\n" + header +
           DescribeFields(StateStorageSchema(t));
  }
  return out;
}

const Schema& RunnerConfigurationSchema(RunnerType type) {
  static const auto kSchemas = [] {
    std::map<RunnerType, Schema> schemas;
    for (auto t : AllRunnerTypes()) schemas.emplace(t, Build(t));
    return schemas;
  }();
  return kSchemas.at(type);
}

const Schema& StateStorageSchema(StateStorageType type) {
  static const auto kSchemas = [] {
    std::map<StateStorageType, Schema> schemas;
    for (auto t : AllStateStorageTypes()) schemas.emplace(t, Build(t));
    return schemas;
  }();
  return kSchemas.at(type);
}

bool IsValidId(std::string_view id) {
  static const Pattern kId(kDnsLabel);
  return kId.Matches(id);
}

json RunnerSpec::ToJson() const {
  return {{"id", id},
          {"description", description},
          {"runner_configuration", runner_configuration},
          {"state_storage_configuration", state_storage_configuration}};
}

// The orchestrator seed writes kubernetes state storage both flat ({type, namespace}) and
// nested ({type, kubernetes_configuration: {namespace}}): the nested form is read as the flat
// one, which is what is stored and shown.
void FlattenKubernetesStorage(json& body, FieldErrors& errors) {
  if (!body.is_object() || !body.contains("state_storage_configuration")) return;
  json& storage = body["state_storage_configuration"];
  if (!storage.is_object() || storage.value("type", json()) != "kubernetes" ||
      !storage.contains("kubernetes_configuration"))
    return;
  const std::string path = "$.state_storage_configuration.kubernetes_configuration";
  json nested = storage["kubernetes_configuration"];
  storage.erase("kubernetes_configuration");
  if (!nested.is_object() || nested.size() != 1 || !nested.contains("namespace")) {
    errors.push_back({path, "must be {namespace}"});
    return;
  }
  if (storage.contains("namespace") && storage["namespace"] != nested["namespace"]) {
    errors.push_back({path + ".namespace", "differs from $.state_storage_configuration.namespace"});
    return;
  }
  storage["namespace"] = nested["namespace"];
}

Result<RunnerSpec> ParseRunnerSpec(std::string_view id, json body) {
  FieldErrors errors;
  RunnerSpec spec;
  spec.id = std::string(id);
  if (!IsValidId(id)) errors.push_back({"$.id", "must be " + std::string(kIdRule)});
  if (!body.is_object()) {
    errors.push_back({"$", "must be an object"});
    Error e = MakeError(ErrorKind::kInvalidArgument, "invalid runner");
    e.fields = std::move(errors);
    return e;
  }
  for (const auto& [name, _] : body.items()) {
    if (name != "description" && name != "runner_configuration" &&
        name != "state_storage_configuration" && name != "id") {
      errors.push_back({"$." + name, "is not a known field"});
    }
  }
  if (body.contains("id") && !(body["id"].is_string() && body["id"] == spec.id)) {
    errors.push_back({"$.id", "must match the id in the path"});
  }
  if (body.contains("description") && !body["description"].is_null()) {
    if (!body["description"].is_string()) {
      errors.push_back({"$.description", "must be a string"});
    } else if (CodePoints(body["description"].get_ref<const std::string&>()) > 1024) {
      errors.push_back({"$.description", "must be at most 1024 characters"});
    } else {
      spec.description = body["description"];
    }
  }

  // The type picks the schema; without a known type nothing more can be checked.
  auto typed = [&errors, &body](const char* field, auto parse, auto schema_of, auto& type_out,
                                const std::string& known) -> bool {
    std::string path = std::string("$.") + field;
    if (!body.contains(field) || body[field].is_null()) {
      errors.push_back({path, "is required"});
      return false;
    }
    json& config = body[field];
    if (!config.is_object()) {
      errors.push_back({path, "must be an object"});
      return false;
    }
    if (!config.contains("type") || !config["type"].is_string()) {
      errors.push_back({path + ".type", "is required: one of " + known});
      return false;
    }
    auto type = parse(config["type"].template get<std::string>());
    if (!type) {
      errors.push_back({path + ".type", "must be one of " + known});
      return false;
    }
    type_out = *type;
    schema_of(*type).Validate(config, path, errors);
    return true;
  };
  std::string runner_types, storage_types;
  for (auto t : AllRunnerTypes())
    runner_types += (runner_types.empty() ? "" : ", ") + std::string(RunnerTypeName(t));
  for (auto t : AllStateStorageTypes())
    storage_types += (storage_types.empty() ? "" : ", ") + std::string(StateStorageTypeName(t));
  bool runner_ok = typed("runner_configuration", ParseRunnerType, RunnerConfigurationSchema,
                         spec.type, runner_types);
  FlattenKubernetesStorage(body, errors);
  bool storage_ok = typed("state_storage_configuration", ParseStateStorageType, StateStorageSchema,
                          spec.storage, storage_types);
  if (runner_ok && storage_ok && !Compatible(spec.type, spec.storage)) {
    errors.push_back(
        {"$.state_storage_configuration.type", "is not compatible with runner type " +
                                                   std::string(RunnerTypeName(spec.type)) + " (" +
                                                   AcceptedStorage(spec.type) + ")"});
  }
  if (!errors.empty()) {
    Error e = MakeError(ErrorKind::kInvalidArgument, "invalid runner " + spec.id);
    e.fields = std::move(errors);
    return e;
  }
  spec.runner_configuration = std::move(body["runner_configuration"]);
  spec.state_storage_configuration = std::move(body["state_storage_configuration"]);
  return spec;
}

FieldErrors NotHonouredYet(RunnerType type) {
  const std::string name(RunnerTypeName(type));
  constexpr const char* kNoFederation =
      "is not honoured yet: berthd does not obtain cloud credentials for runners yet";
  const std::string elsewhere =
      "; a kubernetes runner reaches a cluster by its API server or a kubeconfig context, and a "
      "kubernetes-agent runner runs in the cluster its agent runs in";
  switch (type) {
    case RunnerType::kKubernetesGke:
    case RunnerType::kKubernetesEks:
    case RunnerType::kKubernetesAks:
      return {{"$.runner_configuration.cluster",
               "is not honoured yet: berthd cannot reach a " + name +
                   " cluster yet, and would run its runs in its own" + elsewhere},
              {"$.runner_configuration.cluster.auth", kNoFederation}};
    case RunnerType::kServerlessEcs:
      return {{"$.runner_configuration.type",
               "is not honoured yet: berthd has no " + name + " launcher yet" + elsewhere},
              {"$.runner_configuration.auth", kNoFederation}};
    case RunnerType::kVm:
      return {{"$.runner_configuration.type",
               "is not honoured yet: berthd has no " + name + " launcher yet" + elsewhere}};
    case RunnerType::kKubernetes:  // its cluster is reached: launch/kubernetes/cluster_target.h
    case RunnerType::kKubernetesAgent:
    case RunnerType::kLocal:
      return {};
  }
  return {};
}

Result<void> CheckHonoured(std::string_view runner_id, RunnerType type) {
  FieldErrors fields = NotHonouredYet(type);
  if (fields.empty()) return {};
  // Named before the fields move into the error (arguments are evaluated in no set order).
  const std::string first = fields.front().path + " " + fields.front().rule;
  Error error = InvalidFields("runner " + std::string(runner_id) + ": " + first, std::move(fields));
  error.kind = ErrorKind::kFailedPrecondition;
  return error;
}

const Schema& KubernetesJobSchema() {
  static const Schema kSchema = Job(/*kept_pods=*/true);
  return kSchema;
}

}  // namespace berth
