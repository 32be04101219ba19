// Runner documents: every type's valid shape, each kind of bad input with its JSON path and
// rule, the compatibility matrix, and the Ed25519 key of agent runners.
#include "core/runner_config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/ed25519_key.h"

namespace berth {
namespace {

using nlohmann::json;

// The key from seed 001's kubernetes-agent example.
constexpr const char* kAgentKey =
    "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAc5dgCx4ano39JT0XgTsHnts3jej+5xl7ZAwSIrKpef0=\n"
    "-----END PUBLIC KEY-----\n";

json Job() { return {{"namespace", "berth-runner"}, {"service_account", "berth-runner"}}; }

json Valid(const std::string& type) {
  if (type == "kubernetes") return {{"type", type}, {"job", Job()}};
  if (type == "kubernetes-agent") return {{"type", type}, {"key", kAgentKey}, {"job", Job()}};
  if (type == "kubernetes-gke") {
    return {{"type", type},
            {"cluster",
             {{"name", "my-cluster"},
              {"project_id", "my-gcp-project"},
              {"location", "europe-west3"},
              {"internal_ip", false},
              {"auth",
               {{"gcp_audience",
                 "//iam.googleapis.com/projects/123456789012/locations/global/"
                 "workloadIdentityPools/my-wif-pool/providers/platform-orchestrator-runner"},
                {"gcp_service_account",
                 "platform-orchestrator-runner@my-gcp-project.iam.gserviceaccount.com"}}}}},
            {"job", Job()}};
  }
  if (type == "kubernetes-eks") {
    return {{"type", type},
            {"cluster",
             {{"name", "prod"},
              {"region", "eu-west-1"},
              {"auth", {{"role_arn", "arn:aws:iam::123456789012:role/berth"}}}}},
            {"job", Job()}};
  }
  if (type == "kubernetes-aks") {
    std::string uuid = "0b8f1a2c-1d2e-4f30-9a8b-7c6d5e4f3a2b";
    return {{"type", type},
            {"cluster",
             {{"name", "aks1"},
              {"resource_group", "rg-infra"},
              {"subscription_id", uuid},
              {"auth", {{"client_id", uuid}, {"tenant_id", uuid}}}}},
            {"job", Job()}};
  }
  if (type == "serverless-ecs") {
    return {{"type", type},
            {"auth", {{"role_arn", "arn:aws:iam::123456789012:role/berth"}}},
            {"job",
             {{"region", "us-east-1"}, {"cluster", "runners"}, {"subnets", {"subnet-0a1b2c3d"}}}}};
  }
  if (type == "vm") return {{"type", type}, {"key", kAgentKey}, {"work_dir", "/var/lib/berth"}};
  return {{"type", "local"}, {"max_parallel", 2}};
}

json Storage(const std::string& type) {
  if (type == "kubernetes") return {{"type", type}, {"namespace", "berth-state"}};
  if (type == "s3") return {{"type", type}, {"bucket", "acme-tfstate"}, {"region", "eu-west-1"}};
  if (type == "gcs") return {{"type", type}, {"bucket", "acme-tfstate"}};
  if (type == "azurerm") {
    return {{"type", type}, {"storage_account_name", "acmestate"}, {"container_name", "tfstate"}};
  }
  return {{"type", "berth"}};
}

class EveryRunnerType : public ::testing::TestWithParam<RunnerType> {};

TEST_P(EveryRunnerType, AcceptsItsValidShapeWithEveryCompatibleStorage) {
  std::string type(RunnerTypeName(GetParam()));
  for (auto storage : AllStateStorageTypes()) {
    std::string s(StateStorageTypeName(storage));
    json body = {{"description", "d"},
                 {"runner_configuration", Valid(type)},
                 {"state_storage_configuration", Storage(s)}};
    auto spec = ParseRunnerSpec("my-runner", body);
    if (Compatible(GetParam(), storage)) {
      ASSERT_TRUE(spec) << type << " + " << s << ": "
                        << (spec ? ""
                                 : spec.error().fields.at(0).path + " " +
                                       spec.error().fields.at(0).rule);
      EXPECT_EQ(spec->type, GetParam());
      EXPECT_EQ(spec->storage, storage);
    } else {
      ASSERT_FALSE(spec) << type << " accepted " << s;
      ASSERT_EQ(spec.error().fields.size(), 1u);
      EXPECT_EQ(spec.error().fields[0].path, "$.state_storage_configuration.type");
      EXPECT_NE(spec.error().fields[0].rule.find(AcceptedStorage(GetParam())), std::string::npos);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, EveryRunnerType, ::testing::ValuesIn(AllRunnerTypes()),
                         [](const auto& row) {
                           std::string n(RunnerTypeName(row.param));
                           for (auto& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

// Each type's valid shape, and what of it this berthd does not honour yet: every field that
// names a cluster, credentials or a launcher berthd does not have, and nothing else.
TEST_P(EveryRunnerType, SaysWhatOfItsValidShapeIsNotHonouredYet) {
  const std::string type(RunnerTypeName(GetParam()));
  std::vector<std::string> paths;
  for (const FieldError& field : NotHonouredYet(GetParam())) {
    paths.push_back(field.path);
    EXPECT_TRUE(field.rule.starts_with("is not honoured yet: ")) << field.rule;
  }
  const std::map<std::string, std::vector<std::string>> expected = {
      {"kubernetes", {}},
      {"kubernetes-agent", {}},
      {"local", {}},
      {"kubernetes-gke", {"$.runner_configuration.cluster", "$.runner_configuration.cluster.auth"}},
      {"kubernetes-eks", {"$.runner_configuration.cluster", "$.runner_configuration.cluster.auth"}},
      {"kubernetes-aks", {"$.runner_configuration.cluster", "$.runner_configuration.cluster.auth"}},
      {"serverless-ecs", {"$.runner_configuration.type", "$.runner_configuration.auth"}},
      {"vm", {"$.runner_configuration.type"}}};
  EXPECT_EQ(paths, expected.at(type));
}

// A kubernetes runner's cluster is one of two shapes, never both, never half of one; null is
// no cluster (berthd's own).
TEST(KubernetesCluster, IsAContextOrAServerWithItsCaAndOneWayInAndNothingInBetween) {
  const json server = {
      {"server", "https://10.0.0.1:6443"},
      {"certificate_authority", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
      {"auth", {{"token_file", "prod.token"}}}};
  auto errors = [](json cluster) {
    json configuration = Valid("kubernetes");
    configuration["cluster"] = std::move(cluster);
    auto spec = ParseRunnerSpec("k8s", {{"runner_configuration", configuration},
                                        {"state_storage_configuration", Storage("berth")}});
    std::vector<std::string> found;
    if (!spec)
      for (const FieldError& field : spec.error().fields)
        found.push_back(field.path + " " + field.rule);
    return found;
  };
  EXPECT_EQ(errors(nullptr), std::vector<std::string>{});
  EXPECT_EQ(errors({{"kubeconfig_context", "prod"}}), std::vector<std::string>{});
  EXPECT_EQ(errors(server), std::vector<std::string>{});
  json both = server;
  both["kubeconfig_context"] = "prod";
  EXPECT_EQ(errors(both),
            std::vector<std::string>{"$.runner_configuration.cluster kubeconfig_context or server, "
                                     "certificate_authority and auth: not both"});
  json half = server;
  half.erase("auth");
  EXPECT_EQ(errors(half), std::vector<std::string>{
                              "$.runner_configuration.cluster names no cluster: give "
                              "kubeconfig_context, or server, certificate_authority and auth"});
  EXPECT_EQ(errors(json::object()).size(), 1u);
  json plain = server;
  plain["server"] = "http://10.0.0.1:6443";
  EXPECT_EQ(errors(plain),
            std::vector<std::string>{"$.runner_configuration.cluster.server must be an https URL"});
  json escaping = server;
  escaping["auth"]["token_file"] = "../berthd/admin-token";
  EXPECT_EQ(errors(escaping),
            std::vector<std::string>{"$.runner_configuration.cluster.auth.token_file must be a "
                                     "file name"});
  json no_pem = server;
  no_pem["certificate_authority"] = "MIIB";
  EXPECT_EQ(errors(no_pem),
            std::vector<std::string>{
                "$.runner_configuration.cluster.certificate_authority must be a PEM certificate"});
  // Found by schemathesis: an empty context passed the schema and named no cluster.
  EXPECT_EQ(errors({{"kubeconfig_context", ""}}),
            std::vector<std::string>{
                "$.runner_configuration.cluster.kubeconfig_context must be a context name: not "
                "empty"});
  json by_id_token = server;
  by_id_token["auth"] = {{"oidc_audience", "prod-cluster"}};
  EXPECT_EQ(errors(by_id_token), std::vector<std::string>{});
  json two_ways = by_id_token;
  two_ways["auth"]["token_file"] = "prod.token";
  const std::vector<std::string> one_way = {
      "$.runner_configuration.cluster.auth give token_file or oidc_audience: one of them"};
  EXPECT_EQ(errors(two_ways), one_way);
  json no_way = server;
  no_way["auth"] = json::object();
  EXPECT_EQ(errors(no_way), one_way);
  EXPECT_TRUE(NotHonouredYet(RunnerType::kKubernetes).empty());
  EXPECT_TRUE(CheckHonoured("k8s", RunnerType::kKubernetes));
}

// The API's refusal and a deployment's failure are one error: 409's kind, every field, the
// first named in its message.
TEST(NotHonouredYet, AsAnErrorItNamesTheRunnerAndTheFirstFieldAndKeepsEveryField) {
  auto refused = CheckHonoured("gke", RunnerType::kKubernetesGke);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kFailedPrecondition);
  EXPECT_TRUE(refused.error().message.starts_with(
      "runner gke: $.runner_configuration.cluster is not honoured yet"))
      << refused.error().message;
  ASSERT_EQ(refused.error().fields.size(), 2u);
  EXPECT_EQ(refused.error().fields[1].path, "$.runner_configuration.cluster.auth");
}

TEST(CompatibilityMatrix, IsTheOneTheContractGives) {
  using R = RunnerType;
  using S = StateStorageType;
  for (auto r : {R::kKubernetes, R::kKubernetesAgent, R::kKubernetesGke, R::kKubernetesEks,
                 R::kKubernetesAks}) {
    for (auto s : AllStateStorageTypes()) EXPECT_TRUE(Compatible(r, s));
  }
  EXPECT_TRUE(Compatible(R::kServerlessEcs, S::kS3));
  EXPECT_FALSE(Compatible(R::kServerlessEcs, S::kGcs));
  EXPECT_FALSE(Compatible(R::kServerlessEcs, S::kAzurerm));
  EXPECT_FALSE(Compatible(R::kServerlessEcs, S::kKubernetes));
  EXPECT_TRUE(Compatible(R::kVm, S::kGcs));
  EXPECT_FALSE(Compatible(R::kVm, S::kKubernetes));
  for (auto r : AllRunnerTypes()) EXPECT_TRUE(Compatible(r, S::kBerth));
  std::string table = CompatibilityMatrixMarkdown();
  EXPECT_NE(table.find("| serverless-ecs | no | yes | no | no | yes |"), std::string::npos)
      << table;
}

struct Bad {
  std::string name;
  json body;
  std::string path;
  std::string rule;
};

class RunnerRefused : public ::testing::TestWithParam<Bad> {};

TEST_P(RunnerRefused, NamingThePathAndTheRule) {
  auto spec = ParseRunnerSpec("r1", GetParam().body);
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().kind, ErrorKind::kInvalidArgument);
  bool found = false;
  std::string all;
  for (const auto& f : spec.error().fields) {
    all += f.path + ": " + f.rule + "\n";
    found |= f.path == GetParam().path && f.rule.find(GetParam().rule) != std::string::npos;
  }
  EXPECT_TRUE(found) << "wanted " << GetParam().path << ": " << GetParam().rule << "\ngot:\n"
                     << all;
}

json With(json body, const std::string& pointer, json value) {
  body[json::json_pointer(pointer)] = std::move(value);
  return body;
}

json Without(json body, const std::string& pointer) {
  json::json_pointer p(pointer);
  body[p.parent_pointer()].erase(p.back());
  return body;
}

std::vector<Bad> BadRunners() {
  json gke = {{"runner_configuration", Valid("kubernetes-gke")},
              {"state_storage_configuration", Storage("kubernetes")}};
  json agent = {{"runner_configuration", Valid("kubernetes-agent")},
                {"state_storage_configuration", Storage("s3")}};
  return {
      {"not_object", json::array(), "$", "must be an object"},
      {"missing_config", Without(gke, "/runner_configuration"), "$.runner_configuration",
       "is required"},
      {"unknown_type", With(gke, "/runner_configuration/type", "nomad"),
       "$.runner_configuration.type", "must be one of kubernetes, "},
      {"type_not_string", With(gke, "/runner_configuration/type", 5), "$.runner_configuration.type",
       "is required"},
      {"missing_nested", Without(gke, "/runner_configuration/cluster/project_id"),
       "$.runner_configuration.cluster.project_id", "is required"},
      {"bad_location", With(gke, "/runner_configuration/cluster/location", "Europe!"),
       "$.runner_configuration.cluster.location", "a GCP region or zone"},
      {"bad_audience", With(gke, "/runner_configuration/cluster/auth/gcp_audience", "x"),
       "$.runner_configuration.cluster.auth.gcp_audience", "workload identity"},
      {"wrong_type_bool", With(gke, "/runner_configuration/cluster/internal_ip", "no"),
       "$.runner_configuration.cluster.internal_ip", "must be true or false"},
      {"unknown_field", With(gke, "/runner_configuration/cluster/zone", "a"),
       "$.runner_configuration.cluster.zone", "is not a known field"},
      {"unknown_top", With(gke, "/owner", "me"), "$.owner", "is not a known field"},
      {"bad_namespace", With(gke, "/runner_configuration/job/namespace", "Not_A_Namespace"),
       "$.runner_configuration.job.namespace", "a Kubernetes namespace name"},
      {"pod_template_bad_string", With(gke, "/runner_configuration/job/pod_template", "{not json"),
       "$.runner_configuration.job.pod_template", "JSON object"},
      {"pod_template_array", With(gke, "/runner_configuration/job/pod_template", json::array()),
       "$.runner_configuration.job.pod_template", "must be an object"},
      {"keep_for_approval_too_long", With(gke, "/runner_configuration/job/keep_for_approval", "7h"),
       "$.runner_configuration.job.keep_for_approval", "must be a duration from 1m to 6h"},
      {"keep_for_approval_not_duration",
       With(gke, "/runner_configuration/job/keep_for_approval", "a while"),
       "$.runner_configuration.job.keep_for_approval", "must be a duration from 1m to 6h"},
      // An agent keeps no Pods for their apply: the field is refused, not ignored.
      {"keep_for_approval_agent", With(agent, "/runner_configuration/job/keep_for_approval", "30m"),
       "$.runner_configuration.job.keep_for_approval", "is not a known field"},
      {"agent_key_garbage", With(agent, "/runner_configuration/key", "ssh-ed25519 AAAA"),
       "$.runner_configuration.key", "PEM block"},
      {"agent_key_rsa",
       With(agent, "/runner_configuration/key",
            "-----BEGIN PUBLIC "
            "KEY-----\nMFwwDQYJKoZIhvcNAQEBBQADSwAwSAJBAMxP2wiyHz8rv9zfXqzOiXRx0eHy4o1d\n"
            "Yx8i3jf7ZbpgiXBPpvJiOhgUW69iqdLwBKnZY9o/Vq1DqaO7aWIl6u8CAwEAAQ==\n-----END PUBLIC "
            "KEY-----\n"),
       "$.runner_configuration.key", "an Ed25519 public key"},
      {"storage_missing_bucket", Without(agent, "/state_storage_configuration/bucket"),
       "$.state_storage_configuration.bucket", "is required"},
      {"storage_unknown_type", With(agent, "/state_storage_configuration/type", "consul"),
       "$.state_storage_configuration.type", "must be one of kubernetes, s3"},
      {"ecs_with_gcs",
       {{"runner_configuration", Valid("serverless-ecs")},
        {"state_storage_configuration", Storage("gcs")}},
       "$.state_storage_configuration.type",
       "serverless-ecs accepts: s3, berth"},
      {"local_parallel_range",
       {{"runner_configuration", {{"type", "local"}, {"max_parallel", 0}}},
        {"state_storage_configuration", Storage("berth")}},
       "$.runner_configuration.max_parallel",
       "must be from 1 to 64"},
      {"description_type", With(gke, "/description", 7), "$.description", "must be a string"},
      {"id_mismatch", With(gke, "/id", "other"), "$.id", "must match the id in the path"},
  };
}

INSTANTIATE_TEST_SUITE_P(Rows, RunnerRefused, ::testing::ValuesIn(BadRunners()),
                         [](const auto& row) { return row.param.name; });

// What the document's patterns let a client write is accepted: their bounds are in range.
TEST(RunnerSpec, DurationsAtTheEdgesOfTheirPatternsAreAccepted) {
  json gke = {{"runner_configuration", Valid("kubernetes-gke")},
              {"state_storage_configuration", Storage("kubernetes")}};
  for (const char* keep : {"1m", "9m", "59m", "6h"}) {
    auto spec =
        ParseRunnerSpec("r1", With(gke, "/runner_configuration/job/keep_for_approval", keep));
    EXPECT_TRUE(spec) << keep << ": " << spec.error().ToString();
  }
  json agent = {{"runner_configuration", Valid("kubernetes-agent")},
                {"state_storage_configuration", Storage("s3")}};
  for (const char* expiry : {"1m", "59m", "1h", "168h"}) {
    auto spec = ParseRunnerSpec("r1", With(agent, "/runner_configuration/command_expiry", expiry));
    EXPECT_TRUE(spec) << expiry << ": " << spec.error().ToString();
  }
}

TEST(RunnerSpec, EveryErrorIsReportedAtOnce) {
  json body = {{"runner_configuration", {{"type", "kubernetes-gke"}, {"cluster", json::object()}}},
               {"state_storage_configuration", {{"type", "s3"}}}};
  auto spec = ParseRunnerSpec("r1", body);
  ASSERT_FALSE(spec);
  // cluster.name, project_id, location, auth; job; bucket, region.
  EXPECT_GE(spec.error().fields.size(), 7u);
}

TEST(RunnerSpec, APodTemplateGivenAsJsonStringIsStoredAsAnObject) {
  json body = {{"runner_configuration",
                With(Valid("kubernetes-agent"), "/job/pod_template",
                     R"({"metadata":{"labels":{"app.kubernetes.io/name":"runner"}}})")},
               {"state_storage_configuration", Storage("kubernetes")}};
  auto spec = ParseRunnerSpec("agent-1", body);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->runner_configuration["job"]["pod_template"]["metadata"]["labels"]
                                      ["app.kubernetes.io/name"],
            "runner");
}

TEST(RunnerSpec, TheSeedsNestedKubernetesStorageIsReadAsTheFlatOne) {
  json nested = {{"type", "kubernetes"},
                 {"kubernetes_configuration", {{"namespace", "platform-orchestrator"}}}};
  auto spec = ParseRunnerSpec("agent-1", {{"runner_configuration", Valid("kubernetes-agent")},
                                          {"state_storage_configuration", nested}});
  ASSERT_TRUE(spec) << spec.error().ToString();
  EXPECT_EQ(spec->state_storage_configuration,
            (json{{"type", "kubernetes"}, {"namespace", "platform-orchestrator"}}));

  for (const auto& [bad, path] : std::vector<std::pair<json, std::string>>{
           {{{"type", "kubernetes"}, {"kubernetes_configuration", {{"name", "x"}}}},
            "$.state_storage_configuration.kubernetes_configuration"},
           {{{"type", "kubernetes"},
             {"namespace", "a"},
             {"kubernetes_configuration", {{"namespace", "b"}}}},
            "$.state_storage_configuration.kubernetes_configuration.namespace"}}) {
    auto refused = ParseRunnerSpec("agent-1", {{"runner_configuration", Valid("kubernetes-agent")},
                                               {"state_storage_configuration", bad}});
    ASSERT_FALSE(refused) << bad.dump();
    EXPECT_EQ(refused.error().fields.front().path, path) << refused.error().ToString();
  }
}

TEST(RunnerSpec, IdsAreDnsLabels) {
  for (const std::string& good :
       {std::string("a"), std::string("my-gke-runner"), std::string("r0"), std::string(63, 'a')}) {
    EXPECT_TRUE(IsValidId(good)) << good;
  }
  for (const std::string& bad :
       {std::string(""), std::string("-a"), std::string("a-"), std::string("My"),
        std::string("a_b"), std::string("a.b"), std::string(64, 'a')}) {
    EXPECT_FALSE(IsValidId(bad)) << bad;
  }
  auto spec = ParseRunnerSpec("Bad_Id", {{"runner_configuration", Valid("local")},
                                         {"state_storage_configuration", Storage("berth")}});
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().fields.at(0).path, "$.id");
}

TEST(Ed25519Key, TheSeedKeyParses) {
  auto key = ParseEd25519PublicKeyPem(kAgentKey);
  ASSERT_TRUE(key) << key.error().message;
  EXPECT_EQ(key->raw.size(), 32u);
  EXPECT_FALSE(ParseEd25519PublicKeyPem(std::string(kAgentKey) + kAgentKey));
  EXPECT_FALSE(
      ParseEd25519PublicKeyPem("-----BEGIN PUBLIC KEY-----\n!!!\n-----END PUBLIC KEY-----"));
}

}  // namespace
}  // namespace berth
