// The API's routes and their handlers. Configuration resources share one set of generic
// handlers (list, create, get, replace, patch, delete); each resource type says how a request
// body becomes a record and a record becomes JSON.
#include "server/api/api.h"

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/deployment_state.h"
#include "core/run_labels.h"
#include "core/runner_config.h"
#include "core/runner_rules.h"
#include "core/schema.h"
#include "core/time_format.h"
#include "crypto/age.h"
#include "crypto/digest.h"
#include "crypto/random.h"
#include "launch/kubernetes/cluster_target.h"
#include "launch/kubernetes/pod_relaxations.h"
#include "launch/runner_settings.h"
#include "server/api/deployment_routes.h"
#include "server/api/openapi.h"
#include "server/api/overview_routes.h"
#include "server/api/request_support.h"
#include "server/api/runner_status_routes.h"
#include "server/api/session_credentials.h"
#include "server/api/session_routes.h"
#include "server/api/state_routes.h"
#include "server/api/token_routes.h"
#include "server/retention.h"
#include "server/runner_resolution.h"

namespace berth::server {
namespace {

using nlohmann::json;
using store::Kind;
using store::Record;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// What a configuration resource type needs beyond the generic handlers.
struct ResourceType {
  Kind kind;
  std::string collection;  // URL segment
  bool in_project = false;
  // Validates a full body (id already checked) into a record; body is normalised in place.
  std::function<Result<Record>(store::Store&, const Caller&, const std::string& project,
                               const std::string& id, json body)>
      build;
  std::function<json(const Record&)> render;
};

Schema DisplayNameSchema() {
  return Schema::Object({Optional("id", Schema::String()),
                         Optional("display_name", std::move(Schema::String().MaxLength(256)))});
}

// What a runner reaches beyond its runs is an admin's to define: a local runner's work_dir (a
// root berthd makes, gives away and prunes folders there) and a Kubernetes runner's cluster and
// service account (where it runs, with what API rights).
FieldErrors AdminOnlyReach(const launch::RunnerSettings& settings) {
  FieldErrors fields;
  const auto* local = std::get_if<launch::LocalRunnerSettings>(&settings);
  if (local != nullptr && !local->work_dir.empty())
    fields.push_back({"$.runner_configuration.work_dir",
                      "puts run folders where berthd makes, chowns and prunes them; only an "
                      "admin may"});
  const launch::KubernetesRunnerSettings* kubernetes = launch::KubernetesSettingsOf(settings);
  if (kubernetes == nullptr) return fields;
  if (kubernetes->cluster)
    fields.push_back({"$.runner_configuration.cluster",
                      "runs in a cluster with berthd's own credentials there; only an admin may"});
  if (!kubernetes->pod.service_account.empty())
    fields.push_back({"$.runner_configuration.job.service_account",
                      "runs with another ServiceAccount's API rights than the launcher's; only an "
                      "admin may"});
  return fields;
}

// A Pod weaker than the hardened default, and what AdminOnlyReach names, are an admin's to
// define.
Result<void> CheckAdminOnly(const RunnerSpec& spec, const launch::RunnerSettings& settings,
                            const Caller& caller) {
  FieldErrors fields = AdminOnlyReach(settings);
  if (const launch::KubernetesRunnerSettings* kubernetes = launch::KubernetesSettingsOf(settings))
    for (FieldError& field : launch::PodRelaxations(kubernetes->pod.template_spec,
                                                    "$.runner_configuration.job.pod_template.spec"))
      fields.push_back(std::move(field));
  if (fields.empty() || caller.scopes.Holds(Scope::kAdmin)) return {};
  Error error = InvalidFields("runner " + spec.id + " reaches beyond its runs: needs scope admin",
                              std::move(fields));
  error.kind = ErrorKind::kPermissionDenied;
  return error;
}

// A local runner's limits that need control groups, or a network cut that needs the sandbox,
// on a berthd that cannot give them: refused when saved rather than ignored at run time.
Result<void> CheckLocalEnforceable(const RunnerSpec& spec, const launch::RunnerSettings& settings,
                                   const ApiOptions& options) {
  const auto* local = std::get_if<launch::LocalRunnerSettings>(&settings);
  if (local == nullptr) return {};
  FieldErrors fields;
  const launch::RunLimits& limits = local->limits;
  for (const auto& [name, set] : {std::pair{"memory", limits.memory_bytes.has_value()},
                                  std::pair{"cpu_seconds", limits.cpu_seconds.has_value()},
                                  std::pair{"processes", limits.processes.has_value()}}) {
    if (set && !options.local_limits_refusal.empty())
      fields.push_back({std::string("$.runner_configuration.limits.") + name,
                        "cannot be enforced by this berthd: " + options.local_limits_refusal});
  }
  if (local->cuts_network && !options.local_network_refusal.empty())
    fields.push_back({"$.runner_configuration.network",
                      "cannot be enforced by this berthd: " + options.local_network_refusal});
  if (fields.empty()) return {};
  Error error = InvalidFields("invalid runner " + spec.id, std::move(fields));
  error.kind = ErrorKind::kFailedPrecondition;
  return error;
}

// A kubernetes runner's cluster must be one this berthd can reach: the organization's folder
// of --clusters-dir has the context in its kubeconfig, or the token file.
Result<void> CheckClusterReachable(const RunnerSpec& spec, const launch::RunnerSettings& settings,
                                   const std::string& org, const ApiOptions& options) {
  const auto* kubernetes = std::get_if<launch::KubernetesRunnerSettings>(&settings);
  if (kubernetes == nullptr || !kubernetes->cluster) return {};
  FieldErrors fields =
      options.clusters ? launch::Unreachable(*kubernetes->cluster, org, *options.clusters)
                       : FieldErrors{{"$.runner_configuration.cluster",
                                      "cannot be reached: this berthd runs no kubernetes runners "
                                      "(start it with --kubernetes)"}};
  if (fields.empty()) return {};
  Error error = InvalidFields("runner " + spec.id + " names a cluster this berthd cannot reach",
                              std::move(fields));
  error.kind = ErrorKind::kFailedPrecondition;
  return error;
}

// Labels valid alone that clash with a stored object's (a request above the limit the other
// sets) conflict with what is saved: 409, naming the other object.
Error LabelConflict(Error error, const std::string& with) {
  error.kind = ErrorKind::kFailedPrecondition;
  error.message = "labels conflict " + with + " labels: " + error.message;
  return error;
}

// A project's new labels, checked with each of its environments' as their deployments would
// take them.
Result<void> FitsItsEnvironments(store::Store& store, const std::string& org,
                                 const std::string& project, const Labels& labels) {
  const json project_labels = LabelsJson(labels);
  auto envs = store::ListAll(store, Kind::kEnvironment, org, project);
  if (!envs) return envs.error();
  for (const Record& env : *envs) {
    auto env_labels = ParseLabels(env.body.value("labels", json::object()), "$.labels");
    if (!env_labels) continue;  // stored labels were valid when saved
    if (auto merged = EffectiveLabels(project_labels, *env_labels); !merged)
      return LabelConflict(merged.error(), "with environment " + env.id + "'s");
  }
  return {};
}

// A Go duration short enough to count in nanoseconds (30m, 2h, 720h).
Schema DurationSchema(std::string doc) {
  return std::move(
      Schema::String()
          .Pattern("([0-9]{1,5}(\\.[0-9]{1,3})?(ns|us|ms|s|m|h)){1,4}", "a duration (30m, 2h)")
          .Doc(std::move(doc)));
}

// A project's or environment's log_recipient: runners encrypt every log chunk to it.
Schema LogRecipientSchema() {
  return std::move(Schema::String()
                       .MaxLength(100)
                       .Require([](const json& v) -> std::optional<std::string> {
                         auto key = crypto::ParseAgeRecipient(v.get<std::string>());
                         if (!key) return key.error().message;
                         return std::nullopt;
                       })
                       .JsonSchema({{"pattern", "^age1[02-9ac-hj-np-z]{58}$"}})
                       .Doc("an age X25519 recipient (age1...): runners encrypt every log chunk "
                            "to it before it leaves them, so that berthd keeps logs it cannot "
                            "read (docs/agents.md); an environment's wins over its project's"));
}

// An environment's state_retention (server/retention.h): which state versions a pruning spares.
Schema StateRetentionSchema() {
  return Schema::Object(
      {Optional("keep_last",
                std::move(Schema::Integer()
                              .Range(1, 1000000)
                              .Doc("the newest versions always kept (default " +
                                   std::to_string(StateRetention::kDefaultKeepLast) + ")"))),
       Optional("keep_younger_than",
                DurationSchema(std::string("versions younger than this are kept (default ") +
                               StateRetention::kDefaultKeepYoungerThan + ")"))});
}

// The setting as it acts: what the request gave, the defaults for the rest.
json StateRetentionJson(const json& given) {
  return {{"keep_last", given.value("keep_last", StateRetention::kDefaultKeepLast)},
          {"keep_younger_than",
           given.value("keep_younger_than", std::string(StateRetention::kDefaultKeepYoungerThan))}};
}

// An environment's id_token (docs/oidc.md): the audience of its runs' ID tokens and the clouds
// whose SDKs are pointed at the token.
Schema IdTokenSchema() {
  auto text = [](const char* pattern, const char* description, const char* doc) {
    return std::move(Schema::String().Pattern(pattern, description).MaxLength(512).Doc(doc));
  };
  const char* guid = "[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}";
  return std::move(
      Schema::Object(
          {Required("audience", text("[!-~]+", "printable ASCII, no spaces",
                                     "the token's aud: what the verifier expects")),
           Optional("aws",
                    Schema::Object({Required(
                        "role_arn",
                        text("arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]+",
                             "an IAM role's ARN",
                             "AWS_ROLE_ARN, with AWS_WEB_IDENTITY_TOKEN_FILE the token's file"))})),
           Optional("azure",
                    Schema::Object({Required("client_id", text(guid, "a GUID", "ARM_CLIENT_ID")),
                                    Required("tenant_id", text(guid, "a GUID", "ARM_TENANT_ID"))})),
           Optional("gcp",
                    Schema::Object(
                        {Required("workload_identity_provider",
                                  text("projects/[0-9]+/locations/global/workloadIdentityPools/"
                                       "[a-z0-9-]+/providers/[a-z0-9-]+",
                                       "projects/N/locations/global/workloadIdentityPools/P/"
                                       "providers/X",
                                       "the provider that trusts berthd: the credentials "
                                       "file's audience")),
                         Optional("service_account",
                                  text("[a-z0-9-]+@[a-z0-9.-]+\\.gserviceaccount\\.com",
                                       "a service account's email",
                                       "the account the federated token impersonates"))}))})
          .Doc("each run gets an OpenID Connect ID token signed by berthd (docs/oidc.md) in the "
               "file BERTH_ID_TOKEN_FILE names, and the variables the named clouds' SDKs read"));
}

// An environment whose state was encrypted with berth's key stays so: a run without the key
// could read neither its state nor its plans.
Result<void> KeepsItsEncryption(store::Store& store, const std::string& org,
                                const std::string& project, const std::string& id,
                                const std::string& encryption) {
  if (encryption != "none") return {};
  auto current = store.Get(Kind::kEnvironment, org, project, id);
  if (!current) return {};  // being created
  if (current->body.value("state_encryption", "none") != "berth") return {};
  return InvalidFields("invalid environment",
                       {{"$.state_encryption",
                         "must stay berth: the environment's state and plans are encrypted with "
                         "berth's key, which a run without it cannot read"}});
}

json Common(const Record& r) {
  json out = r.body;
  out["id"] = r.id;
  out["version"] = r.version;
  out["created_at"] = r.created_at;
  out["updated_at"] = r.updated_at;
  return out;
}

std::vector<ResourceType> ResourceTypes(const ApiOptions& options) {
  std::vector<ResourceType> types;
  auto simple = [](Kind kind) {
    return [kind](store::Store&, const Caller& caller, const std::string& project,
                  const std::string& id, json body) -> Result<Record> {
      auto valid = ValidateWith(DisplayNameSchema(), std::move(body));
      if (!valid) return valid.error();
      valid->erase("id");
      Record r;
      r.kind = kind;
      r.org_id = caller.org;
      r.parent_id = project;
      r.id = id;
      r.body = {{"display_name", valid->value("display_name", id)}};
      return r;
    };
  };
  types.push_back({Kind::kProject, "projects", false,
                   [](store::Store& store, const Caller& caller, const std::string&,
                      const std::string& id, json body) -> Result<Record> {
                     static const Schema kSchema = Schema::Object({
                         Optional("id", Schema::String()),
                         Optional("display_name", std::move(Schema::String().MaxLength(256))),
                         Optional("labels", Schema::FreeObject()),
                         Optional("log_recipient", LogRecipientSchema()),
                     });
                     auto valid = ValidateWith(kSchema, std::move(body));
                     if (!valid) return valid.error();
                     auto labels = ParseLabels(valid->value("labels", json::object()), "$.labels");
                     if (!labels) return labels.error();
                     if (auto fits = FitsItsEnvironments(store, caller.org, id, *labels); !fits)
                       return fits.error();
                     Record r;
                     r.kind = Kind::kProject;
                     r.org_id = caller.org;
                     r.id = id;
                     r.body = {{"display_name", valid->value("display_name", id)},
                               {"labels", LabelsJson(*labels)}};
                     if (valid->contains("log_recipient"))
                       r.body["log_recipient"] = (*valid)["log_recipient"];
                     return r;
                   },
                   Common});
  types.push_back({Kind::kEnvType, "env-types", false, simple(Kind::kEnvType), Common});

  types.push_back(
      {Kind::kEnvironment, "envs", true,
       [](store::Store& store, const Caller& caller, const std::string& project,
          const std::string& id, json body) -> Result<Record> {
         static const Schema kSchema = Schema::Object({
             Optional("id", Schema::String()),
             Optional("display_name", std::move(Schema::String().MaxLength(256))),
             Required("env_type_id",
                      std::move(Schema::String().Pattern("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?",
                                                         "an environment type id"))),
             // Read-only: the link is made by the first deployment or refresh_runner.
             Optional("runner_id", Schema::String()),
             Optional("labels", Schema::FreeObject()),
             Optional("approval_timeout",
                      DurationSchema("how long a plan may wait for approval before its "
                                     "deployment is cancelled")),
             Optional("state_retention", StateRetentionSchema()),
             Optional("log_recipient", LogRecipientSchema()),
             Optional(
                 "state_encryption",
                 std::move(
                     Schema::String()
                         .OneOf({"none", "berth"})
                         .Doc("berth: OpenTofu encrypts the environment's state and plans with a "
                              "key berth keeps for it (docs/security.md); none (the default)"))),
             Optional("id_token", IdTokenSchema()),
         });
         auto valid = ValidateWith(kSchema, std::move(body));
         if (!valid) return valid.error();
         const std::string encryption = valid->value("state_encryption", "none");
         if (auto refused = KeepsItsEncryption(store, caller.org, project, id, encryption);
             !refused)
           return refused.error();
         auto labels = ParseLabels(valid->value("labels", json::object()), "$.labels");
         if (!labels) return labels.error();
         // With its project's labels, as its deployments will have them.
         auto parent = store.Get(Kind::kProject, caller.org, "", project);
         if (!parent) return parent.error();
         if (auto merged = EffectiveLabels(parent->body.value("labels", json::object()), *labels);
             !merged)
           return LabelConflict(merged.error(), "with project " + project + "'s");
         Record r;
         r.kind = Kind::kEnvironment;
         r.org_id = caller.org;
         r.parent_id = project;
         r.id = id;
         r.body = {{"display_name", valid->value("display_name", id)},
                   {"env_type_id", (*valid)["env_type_id"]},
                   {"labels", LabelsJson(*labels)},
                   {"approval_timeout", valid->value("approval_timeout", json())},
                   {"state_retention",
                    StateRetentionJson(valid->value("state_retention", json::object()))},
                   {"state_encryption", encryption}};
         if (valid->contains("log_recipient")) r.body["log_recipient"] = (*valid)["log_recipient"];
         if (valid->value("id_token", json()).is_object())
           r.body["id_token"] = (*valid)["id_token"];
         r.columns = {{"env_type_id", (*valid)["env_type_id"].get<std::string>()},
                      {"runner_id", std::nullopt}};
         return r;
       },
       [](const Record& r) {
         json out = Common(r);
         out["project_id"] = r.parent_id;
         // As they act, for an environment saved before it had the settings too.
         out["state_retention"] =
             StateRetentionJson(r.body.value("state_retention", json::object()));
         out["state_encryption"] = r.body.value("state_encryption", "none");
         auto link = r.columns.find("runner_id");
         out["runner_id"] =
             link != r.columns.end() && link->second ? json(*link->second) : json(nullptr);
         return out;
       }});

  types.push_back(
      {Kind::kRunner, "runners", false,
       [options](store::Store&, const Caller& caller, const std::string&, const std::string& id,
                 json body) -> Result<Record> {
         auto spec = ParseRunnerSpec(id, std::move(body));
         if (!spec) return spec.error();
         // Refused rather than run in berthd's own cluster with its own credentials.
         if (auto honoured = CheckHonoured(spec->id, spec->type); !honoured)
           return honoured.error();
         // Read as its launcher will read it (pod_template fields included): what is saved can
         // be launched.
         auto settings = launch::ParseRunnerSettings(spec->type, spec->runner_configuration);
         if (!settings) return settings.error();
         if (auto admin = CheckAdminOnly(*spec, *settings, caller); !admin) return admin.error();
         if (auto enforceable = CheckLocalEnforceable(*spec, *settings, options); !enforceable)
           return enforceable.error();
         if (auto reachable = CheckClusterReachable(*spec, *settings, caller.org, options);
             !reachable)
           return reachable.error();
         Record r;
         r.kind = Kind::kRunner;
         r.org_id = caller.org;
         r.id = id;
         r.body = spec->ToJson();
         r.body.erase("id");
         r.columns = {{"runner_type", std::string(RunnerTypeName(spec->type))},
                      {"storage_type", std::string(StateStorageTypeName(spec->storage))}};
         return r;
       },
       Common});

  types.push_back(
      {Kind::kRunnerRule, "runner-rules", false,
       [](store::Store& store, const Caller& caller, const std::string&, const std::string& id,
          json body) -> Result<Record> {
         static const Schema kSchema = Schema::Object({
             Optional("id", Schema::String()),
             Required("runner_id", std::move(Schema::String().Pattern(
                                       "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", "a runner id"))),
             Optional("project_id", std::move(Schema::String().Pattern(
                                        "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", "a project id"))),
             Optional("env_type_id",
                      std::move(Schema::String().Pattern("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?",
                                                         "an environment type id"))),
         });
         auto valid = ValidateWith(kSchema, std::move(body));
         if (!valid) return valid.error();
         std::string runner = (*valid)["runner_id"];
         if (auto found = store.Get(Kind::kRunner, caller.org, "", runner); !found) {
           if (found.error().kind == ErrorKind::kNotFound) {
             return Unresolved("$.runner_id",
                               "must name an existing runner (no runner " + runner + ")");
           }
           return found.error();
         }
         Record r;
         r.kind = Kind::kRunnerRule;
         r.org_id = caller.org;
         r.id = id;
         std::string project = valid->value("project_id", "");
         std::string type = valid->value("env_type_id", "");
         r.body = {{"runner_id", runner},
                   {"project_id", project.empty() ? json(nullptr) : json(project)},
                   {"env_type_id", type.empty() ? json(nullptr) : json(type)}};
         r.columns = {{"runner_id", runner}, {"project_id", project}, {"env_type_id", type}};
         return r;
       },
       Common});
  return types;
}

// JSON merge patch (RFC 7386).
void MergePatch(json& target, const json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = json::object();
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(key);
    } else {
      MergePatch(target[key], value);
    }
  }
}

}  // namespace

class ApiHandlers {
 public:
  ApiHandlers(store::Store& store, Router& router, DeploymentControl& control,
              const ApiOptions& options)
      : store_(store),
        authorized_(store, options.requests_per_second, options.burst,
                    options.clock ? *options.clock : SystemClock::Instance()) {
    router.Add("GET", "/healthz",
               [](const RouteRequest&) { return JsonResponse(200, "{\"status\":\"ok\"}"); });
    // Ready when the store answers (a lookup that finds nothing is an answer): a berthd whose
    // database is away takes no traffic, but is not restarted for it (/healthz stays 200).
    router.Add("GET", "/readyz", [this](const RouteRequest&) {
      auto probe = store_.FindToken("readiness-probe");
      if (probe || probe.error().kind == ErrorKind::kNotFound)
        return JsonResponse(200, "{\"status\":\"ready\"}");
      return JsonResponse(503, "{\"status\":\"the store does not answer\"}");
    });
    router.Add("GET", "/openapi.json", [](const RouteRequest&) {
      return JsonResponse(200, std::string(OpenApiDocument()));
    });
    for (const auto& type : ResourceTypes(options)) AddResource(router, type);
    router.Add("POST", "/orgs/{org}/projects/{project}/envs/{env}/actions/refresh_runner",
               [this](const RouteRequest& r) {
                 return authorized_(r, Scope::kConfigure,
                                    [&](const Caller& c) { return RefreshRunner(r, c); });
               });
    states_ = std::make_unique<StateRoutes>(router, store, authorized_, options.states_elsewhere);
    runner_status_ = std::make_unique<RunnerStatusRoutes>(
        router, store, authorized_, options.clock ? *options.clock : SystemClock::Instance(),
        options.check_cluster);
    deployments_ = std::make_unique<DeploymentRoutes>(router, store, authorized_, control, options);
    Clock& clock = options.clock ? *options.clock : SystemClock::Instance();
    tokens_ = std::make_unique<TokenRoutes>(router, store, authorized_, clock);
    sessions_ =
        std::make_unique<SessionRoutes>(router, store, authorized_, clock, options.secure_cookies);
    overview_ = std::make_unique<OverviewRoutes>(router, store, authorized_);
    // The series that name an organization's projects and environments: for its own tokens.
    router.Add("GET", "/orgs/{org}/metrics",
               [this, metrics = options.environment_metrics](const RouteRequest& r) {
                 return authorized_(r, Scope::kRead, [&](const Caller& c) {
                   if (!metrics)
                     return ErrorResponse(404, "NotFound", "this berthd serves no metrics");
                   net::ServerResponse response;
                   response.headers["Content-Type"] = "text/plain; version=0.0.4";
                   response.body = metrics(c.org);
                   return response;
                 });
               });
  }

 private:
  static std::optional<int64_t> IfMatch(const RouteRequest& r, bool& malformed) {
    malformed = false;
    auto it = r.http.headers.find("if-match");
    if (it == r.http.headers.end() || it->second == "*") return std::nullopt;
    std::string v = it->second;
    if (v.starts_with("W/")) v = v.substr(2);
    // "N", as this API gives ETags (a bare N is taken too): digits only.
    std::string digits =
        v.size() >= 3 && v.front() == '"' && v.back() == '"' ? v.substr(1, v.size() - 2) : v;
    std::optional<int64_t> version = WholeNumber(digits);
    malformed = !version;
    return version;
  }

  static net::ServerResponse WithEtag(net::ServerResponse response, int64_t version) {
    response.headers["ETag"] = "\"" + std::to_string(version) + "\"";
    return response;
  }

  // A conflict on a version named by If-Match is a failed precondition (412).
  static net::ServerResponse VersionAware(const Error& e, bool if_match) {
    if (if_match && e.kind == ErrorKind::kConflict) {
      return ErrorResponse(412, "PreconditionFailed", e.message);
    }
    return ErrorResponse(e);
  }

  void AddResource(Router& router, const ResourceType& type) {
    std::string base = type.in_project ? "/orgs/{org}/projects/{project}/" + type.collection
                                       : "/orgs/{org}/" + type.collection;
    std::string item = base + "/{id}";
    auto project_of = [in_project = type.in_project](const RouteRequest& r) {
      return in_project ? r.params.at("project") : std::string();
    };

    router.Add("GET", base, [=, this](const RouteRequest& r) {
      return authorized_(r, Scope::kRead, [&](const Caller& c) {
        store::ListQuery query;
        query.after = r.query.count("after") ? r.query.at("after") : "";
        if (r.query.count("limit")) {
          std::optional<int64_t> limit = WholeNumber(r.query.at("limit"));
          if (!limit || *limit < 1 || *limit > 1000)
            return ErrorResponse(Invalid("limit", "must be a whole number from 1 to 1000"));
          query.limit = static_cast<int>(*limit);
        }
        for (const char* filter : {"runner_id", "project_id", "env_type_id", "runner_type"}) {
          if (r.query.count(filter)) query.where[filter] = r.query.at(filter);
        }
        auto page = store_.List(type.kind, c.org, project_of(r), query);
        if (!page) return ErrorResponse(page.error());
        json items = json::array();
        for (const auto& record : page->items) items.push_back(type.render(record));
        json out = {{"items", items}};
        if (!page->next.empty()) out["next"] = page->next;
        return JsonResponse(200, Dump(out));
      });
    });

    router.Add("POST", base, [=, this](const RouteRequest& r) {
      return authorized_(r, Scope::kConfigure, [&](const Caller& c) {
        auto body = ParseJsonBody(r);
        if (!body) return body.error();
        std::string id;
        if (body->contains("id")) {
          if (!(*body)["id"].is_string()) return ErrorResponse(Invalid("$.id", "must be a string"));
          id = (*body)["id"];
        } else if (type.kind == Kind::kRunnerRule) {
          id = "rule-" + crypto::RandomId();
        } else {
          return ErrorResponse(Invalid("$.id", "is required"));
        }
        if (!IsValidId(id))
          return ErrorResponse(Invalid("$.id", "must be " + std::string(kIdRule)));
        auto record = type.build(store_, c, project_of(r), id, std::move(*body));
        if (!record) return ErrorResponse(record.error());
        auto created = store_.Create(std::move(*record));
        if (!created) return ErrorResponse(created.error());
        auto response = WithEtag(JsonResponse(201, Dump(type.render(*created))), created->version);
        response.headers["Location"] = r.path + "/" + created->id;
        return response;
      });
    });

    router.Add("GET", item, [=, this](const RouteRequest& r) {
      return authorized_(r, Scope::kRead, [&](const Caller& c) {
        auto record = store_.Get(type.kind, c.org, project_of(r), r.params.at("id"));
        if (!record) return ErrorResponse(record.error());
        return WithEtag(JsonResponse(200, Dump(type.render(*record))), record->version);
      });
    });

    auto update = [=, this](const RouteRequest& r, bool patch) {
      return authorized_(r, Scope::kConfigure, [&](const Caller& c) {
        bool malformed = false;
        auto expected = IfMatch(r, malformed);
        if (malformed) return ErrorResponse(Invalid("If-Match", "must be an ETag such as \"3\""));
        auto body = ParseJsonBody(r, patch);
        if (!body) return body.error();
        const std::string& id = r.params.at("id");
        auto current = store_.Get(type.kind, c.org, project_of(r), id);
        if (!current) return ErrorResponse(current.error());
        json next = *body;
        if (patch) {
          next = type.render(*current);
          for (const char* meta : {"version", "created_at", "updated_at", "project_id"})
            next.erase(meta);
          if (type.kind == Kind::kEnvironment) next.erase("runner_id");
          MergePatch(next, *body);
        }
        // An id is never changed: a body naming another one conflicts with the object.
        if (next.contains("id") && next["id"] != id) {
          Error rename = Invalid("$.id", "must match the id in the path (an id never changes)");
          rename.kind = ErrorKind::kConflict;
          return ErrorResponse(rename);
        }
        next.erase("id");
        auto record = type.build(store_, c, project_of(r), id, std::move(next));
        if (!record) return ErrorResponse(record.error());
        // A body that is wrong is wrong whatever version it was meant for: checked first.
        if (expected && *expected != current->version) {
          return ErrorResponse(412, "PreconditionFailed",
                               "If-Match names version " + std::to_string(*expected) + ", the " +
                                   std::string(store::KindName(type.kind)) + " is at version " +
                                   std::to_string(current->version));
        }
        // The runner link of an environment is kept: only refresh_runner moves it.
        if (type.kind == Kind::kEnvironment)
          record->columns["runner_id"] = current->columns["runner_id"];
        auto updated = store_.Update(std::move(*record), current->version);
        if (!updated) return VersionAware(updated.error(), true);
        return WithEtag(JsonResponse(200, Dump(type.render(*updated))), updated->version);
      });
    };
    router.Add("PUT", item, [update](const RouteRequest& r) { return update(r, false); });
    router.Add("PATCH", item, [update](const RouteRequest& r) { return update(r, true); });

    router.Add("DELETE", item, [=, this](const RouteRequest& r) {
      return authorized_(r, Scope::kConfigure, [&](const Caller& c) {
        bool malformed = false;
        auto expected = IfMatch(r, malformed);
        if (malformed) return ErrorResponse(Invalid("If-Match", "must be an ETag such as \"3\""));
        const std::string& id = r.params.at("id");
        if (type.kind == Kind::kRunner) {
          auto users = store_.EnvironmentsUsingRunner(c.org, id);
          if (!users) return ErrorResponse(users.error());
          if (!users->empty()) return RunnerInUse(id, *users);
        }
        auto deleted = store_.Delete(type.kind, c.org, project_of(r), id, expected.value_or(-1));
        if (!deleted) {
          if (type.kind == Kind::kRunner &&
              deleted.error().kind == ErrorKind::kFailedPrecondition) {
            // An environment was linked between the check and the delete.
            auto users = store_.EnvironmentsUsingRunner(c.org, id);
            if (users) return RunnerInUse(id, *users);
          }
          return VersionAware(deleted.error(), expected.has_value());
        }
        net::ServerResponse response;
        response.status = 204;
        return response;
      });
    });
  }

  static net::ServerResponse RunnerInUse(const std::string& id,
                                         const std::vector<std::string>& envs) {
    json doc = {{"error",
                 {{"kind", "FailedPrecondition"},
                  {"message", "runner " + id + " is linked to " + std::to_string(envs.size()) +
                                  " environment(s); refresh their runner first"},
                  {"environments", envs}}}};
    return JsonResponse(409, Dump(doc));
  }

  net::ServerResponse RefreshRunner(const RouteRequest& r, const Caller& c) {
    auto body = ParseJsonBody(r);
    if (!body) return body.error();
    static const Schema kSchema = Schema::Object({Optional("dry_run", Schema::Bool())});
    auto valid = ValidateWith(kSchema, std::move(*body));
    if (!valid) return ErrorResponse(valid.error());
    bool dry_run = valid->value("dry_run", false);
    const std::string& project = r.params.at("project");
    auto env = store_.Get(Kind::kEnvironment, c.org, project, r.params.at("env"));
    if (!env) return ErrorResponse(env.error());
    auto rules = LoadRunnerRules(store_, c.org);
    if (!rules) return ErrorResponse(rules.error());
    auto rule = ChooseRunnerRule(*rules, project, env->columns["env_type_id"].value_or(""));
    std::optional<std::string> previous = env->columns["runner_id"];
    if (!rule) {
      return ErrorResponse(409, "FailedPrecondition",
                           "no runner rule matches environment " + project + "/" + env->id +
                               (previous ? "; it stays linked to runner " + *previous : ""));
    }
    bool changed = previous != rule->runner_id;
    if (!dry_run && changed) {
      env->columns["runner_id"] = rule->runner_id;
      auto updated = store_.Update(*env, env->version);
      if (!updated) return ErrorResponse(updated.error());
    }
    json out = {{"runner_id", rule->runner_id},
                {"rule_id", rule->id},
                {"previous_runner_id", previous ? json(*previous) : json(nullptr)},
                {"changed", changed},
                {"dry_run", dry_run}};
    return JsonResponse(200, Dump(out));
  }

  store::Store& store_;
  TokenGuard authorized_;
  std::unique_ptr<StateRoutes> states_;
  std::unique_ptr<RunnerStatusRoutes> runner_status_;
  std::unique_ptr<DeploymentRoutes> deployments_;
  std::unique_ptr<TokenRoutes> tokens_;
  std::unique_ptr<SessionRoutes> sessions_;
  std::unique_ptr<OverviewRoutes> overview_;
};

std::string HashToken(const std::string& secret) { return crypto::Sha256Hex(secret); }

std::string NewTokenSecret() { return "berth_" + crypto::RandomToken(32); }

Result<std::pair<store::ApiToken, std::string>> IssueToken(store::Store& store,
                                                           store::ApiToken token) {
  std::string secret = NewTokenSecret();
  if (token.id.empty()) token.id = std::string(kApiTokenIdPrefix) + crypto::RandomId();
  if (token.created_at == 0) token.created_at = UnixMillisNow();
  if (auto created = store.CreateToken(token, HashToken(secret)); !created) return created.error();
  return std::pair{std::move(token), std::move(secret)};
}

Result<std::string> IssueToken(store::Store& store, const std::string& org,
                               const std::string& description, Scopes scopes) {
  auto issued = IssueToken(store, {.org_id = org, .description = description, .scopes = scopes});
  if (!issued) return issued.error();
  return std::move(issued->second);
}

Api::Api(store::Store& store, DeploymentControl& control, const ApiOptions& options)
    : handlers_(std::make_unique<ApiHandlers>(store, router_, control, options)) {}

Api::~Api() = default;

net::ServerResponse Api::Handle(const net::ServerRequest& request) const {
  return router_.Dispatch(request);
}

}  // namespace berth::server
