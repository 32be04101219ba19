// The API's routes and their handlers. Configuration resources share one set of generic
// handlers (list, create, get, replace, patch, delete); each resource type says how a request
// body becomes a record and a record becomes JSON.
#include "server/api/api.h"

#include <charconv>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/deployment_state.h"
#include "core/runner_config.h"
#include "core/runner_rules.h"
#include "core/schema.h"
#include "core/time_format.h"
#include "crypto/digest.h"
#include "crypto/random.h"
#include "server/api/openapi.h"
#include "server/api/rate_limiter.h"
#include "server/runner_resolution.h"

namespace berth::server {
namespace {

using nlohmann::json;
using store::Kind;
using store::Record;

Error Invalid(std::string path, std::string rule, std::string message = "invalid request") {
  Error e = MakeError(ErrorKind::kInvalidArgument, std::move(message));
  e.fields.push_back({std::move(path), std::move(rule)});
  return e;
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// The organization, from a valid token for it.
struct Caller {
  std::string org;
  std::string token_id;
};

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

Result<json> ValidateWith(const Schema& schema, json body) {
  FieldErrors errors;
  schema.Validate(body, "$", errors);
  if (!errors.empty()) {
    Error e = MakeError(ErrorKind::kInvalidArgument, "invalid request body");
    e.fields = std::move(errors);
    return e;
  }
  return Ok(std::move(body));
}

json Common(const Record& r) {
  json out = r.body;
  out["id"] = r.id;
  out["version"] = r.version;
  out["created_at"] = r.created_at;
  out["updated_at"] = r.updated_at;
  return out;
}

std::vector<ResourceType> ResourceTypes() {
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
  types.push_back({Kind::kProject, "projects", false, simple(Kind::kProject), Common});
  types.push_back({Kind::kEnvType, "env-types", false, simple(Kind::kEnvType), Common});

  types.push_back({Kind::kEnvironment, "envs", true,
                   [](store::Store&, const Caller& caller, const std::string& project,
                      const std::string& id, json body) -> Result<Record> {
                     static const Schema kSchema = Schema::Object({
                         Optional("id", Schema::String()),
                         Optional("display_name", std::move(Schema::String().MaxLength(256))),
                         Required("env_type_id", std::move(Schema::String().Pattern(
                                                     "[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?",
                                                     "an environment type id"))),
                         // Read-only: the link is made by the first deployment or refresh_runner.
                         Optional("runner_id", Schema::String()),
                     });
                     auto valid = ValidateWith(kSchema, std::move(body));
                     if (!valid) return valid.error();
                     Record r;
                     r.kind = Kind::kEnvironment;
                     r.org_id = caller.org;
                     r.parent_id = project;
                     r.id = id;
                     r.body = {{"display_name", valid->value("display_name", id)},
                               {"env_type_id", (*valid)["env_type_id"]}};
                     r.columns = {{"env_type_id", (*valid)["env_type_id"].get<std::string>()},
                                  {"runner_id", std::nullopt}};
                     return r;
                   },
                   [](const Record& r) {
                     json out = Common(r);
                     out["project_id"] = r.parent_id;
                     auto link = r.columns.find("runner_id");
                     out["runner_id"] = link != r.columns.end() && link->second
                                            ? json(*link->second)
                                            : json(nullptr);
                     return out;
                   }});

  types.push_back({Kind::kRunner, "runners", false,
                   [](store::Store&, const Caller& caller, const std::string&,
                      const std::string& id, json body) -> Result<Record> {
                     auto spec = ParseRunnerSpec(id, std::move(body));
                     if (!spec) return spec.error();
                     Record r;
                     r.kind = Kind::kRunner;
                     r.org_id = caller.org;
                     r.id = id;
                     r.body = spec->ToJson();
                     r.body.erase("id");
                     r.columns = {
                         {"runner_type", std::string(RunnerTypeName(spec->type))},
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
             return Invalid("$.runner_id",
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

class Handlers {
 public:
  Handlers(store::Store& store, Router& router, const ApiOptions& options)
      : store_(store),
        allow_server_paths_(options.allow_server_paths),
        cancel_run_(options.cancel_run),
        limiter_(options.requests_per_second, options.burst,
                 options.clock ? *options.clock : SystemClock::Instance()) {
    router.Add("GET", "/healthz",
               [](const RouteRequest&) { return JsonResponse(200, "{\"status\":\"ok\"}"); });
    router.Add("GET", "/openapi.json", [](const RouteRequest&) {
      return JsonResponse(200, std::string(OpenApiDocument()));
    });
    for (const auto& type : ResourceTypes()) AddResource(router, type);
    router.Add("POST", "/orgs/{org}/projects/{project}/envs/{env}/actions/refresh_runner",
               [this](const RouteRequest& r) {
                 return Authorized(r, [&](const Caller& c) { return RefreshRunner(r, c); });
               });
    const std::string state = "/orgs/{org}/projects/{project}/envs/{env}/state";
    router.Add("GET", state + "/versions", [this](const RouteRequest& r) {
      return Authorized(r, [&](const Caller& c) { return StateVersions(r, c); });
    });
    router.Add("GET", state + "/versions/{version}", [this](const RouteRequest& r) {
      return Authorized(r, [&](const Caller& c) { return StateVersion(r, c); });
    });
    router.Add("POST", state + "/rollback", [this](const RouteRequest& r) {
      return Authorized(r, [&](const Caller& c) { return StateRollback(r, c); });
    });
    const std::string env_deployments = "/orgs/{org}/projects/{project}/envs/{env}/deployments";
    router.Add("POST", env_deployments, [this](const RouteRequest& r) {
      return Authorized(r, [&](const Caller& c) { return CreateDeployment(r, c); });
    });
    router.Add("GET", env_deployments, [this](const RouteRequest& r) {
      return Authorized(r, [&](const Caller& c) { return ListDeployments(r, c); });
    });
    router.Add("GET", "/orgs/{org}/deployments/{id}", [this](const RouteRequest& r) {
      return Authorized(r, [&](const Caller& c) { return GetDeployment(r, c); });
    });
    router.Add("POST", "/orgs/{org}/deployments/{id}/cancel", [this](const RouteRequest& r) {
      return Authorized(r, [&](const Caller& c) { return CancelDeployment(r, c); });
    });
  }

 private:
  using Body = std::function<net::ServerResponse(const Caller&)>;

  // 401 without a valid token, 403 for another organization's objects.
  net::ServerResponse Authorized(const RouteRequest& r, const Body& body) const {
    auto header = r.http.headers.find("authorization");
    if (header == r.http.headers.end() || !header->second.starts_with("Bearer ")) {
      auto response = ErrorResponse(401, "Unauthenticated", "a bearer token is required");
      response.headers["WWW-Authenticate"] = "Bearer";
      return response;
    }
    auto token = store_.FindToken(HashToken(header->second.substr(7)));
    if (!token) {
      if (token.error().kind != ErrorKind::kNotFound) return ErrorResponse(token.error());
      auto response = ErrorResponse(401, "Unauthenticated", "the token is not valid");
      response.headers["WWW-Authenticate"] = "Bearer error=\"invalid_token\"";
      return response;
    }
    if (auto wait = limiter_.Take(token->id)) {
      auto response = ErrorResponse(
          429, "ResourceExhausted",
          "too many requests for this token; retry in " + std::to_string(wait->count()) + " s");
      response.headers["Retry-After"] = std::to_string(wait->count());
      return response;
    }
    const std::string& org = r.params.at("org");
    if (token->org_id != org) {
      return ErrorResponse(403, "PermissionDenied",
                           "the token is not valid for organization " + org);
    }
    return body(Caller{org, token->id});
  }

  // A request's JSON object body, or the response that refuses it (415 for another media
  // type, 400 for anything that is not a JSON object).
  using ParsedBody = boost::system::result<json, net::ServerResponse>;
  static ParsedBody ParseBody(const RouteRequest& r, bool merge_patch = false) {
    auto refuse = [](net::ServerResponse response) {
      return ParsedBody(boost::system::in_place_error, std::move(response));
    };
    auto type = r.http.headers.find("content-type");
    std::string media =
        type == r.http.headers.end() ? "" : type->second.substr(0, type->second.find(';'));
    bool ok =
        media == "application/json" || (merge_patch && media == "application/merge-patch+json");
    if (!ok) {
      return refuse(ErrorResponse(415, "UnsupportedMediaType",
                                  std::string("unsupported media type: send application/json") +
                                      (merge_patch ? " or application/merge-patch+json" : "")));
    }
    json body = json::parse(r.http.body, nullptr, false);
    if (body.is_discarded()) {
      return refuse(
          ErrorResponse(Invalid("$", "must be valid JSON", "the body is not valid JSON")));
    }
    if (!body.is_object()) return refuse(ErrorResponse(Invalid("$", "must be an object")));
    return ParsedBody(boost::system::in_place_value, std::move(body));
  }

  static std::optional<int64_t> IfMatch(const RouteRequest& r, bool& malformed) {
    malformed = false;
    auto it = r.http.headers.find("if-match");
    if (it == r.http.headers.end() || it->second == "*") return std::nullopt;
    std::string v = it->second;
    if (v.starts_with("W/")) v = v.substr(2);
    if (v.size() < 3 || v.front() != '"' || v.back() != '"') {
      malformed = true;
      return std::nullopt;
    }
    try {
      return std::stoll(v.substr(1, v.size() - 2));
    } catch (...) {
      malformed = true;
      return std::nullopt;
    }
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
      return Authorized(r, [&](const Caller& c) {
        store::ListQuery query;
        query.after = r.query.count("after") ? r.query.at("after") : "";
        if (r.query.count("limit")) {
          try {
            query.limit = std::stoi(r.query.at("limit"));
          } catch (...) {
            return ErrorResponse(Invalid("limit", "must be a whole number from 1 to 1000"));
          }
          if (query.limit < 1 || query.limit > 1000) {
            return ErrorResponse(Invalid("limit", "must be a whole number from 1 to 1000"));
          }
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
      return Authorized(r, [&](const Caller& c) {
        auto body = ParseBody(r);
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
      return Authorized(r, [&](const Caller& c) {
        auto record = store_.Get(type.kind, c.org, project_of(r), r.params.at("id"));
        if (!record) return ErrorResponse(record.error());
        return WithEtag(JsonResponse(200, Dump(type.render(*record))), record->version);
      });
    });

    auto update = [=, this](const RouteRequest& r, bool patch) {
      return Authorized(r, [&](const Caller& c) {
        bool malformed = false;
        auto expected = IfMatch(r, malformed);
        if (malformed) return ErrorResponse(Invalid("If-Match", "must be an ETag such as \"3\""));
        auto body = ParseBody(r, patch);
        if (!body) return body.error();
        const std::string& id = r.params.at("id");
        auto current = store_.Get(type.kind, c.org, project_of(r), id);
        if (!current) return ErrorResponse(current.error());
        if (expected && *expected != current->version) {
          return ErrorResponse(412, "PreconditionFailed",
                               "If-Match names version " + std::to_string(*expected) + ", the " +
                                   std::string(store::KindName(type.kind)) + " is at version " +
                                   std::to_string(current->version));
        }
        json next = *body;
        if (patch) {
          next = type.render(*current);
          for (const char* meta : {"version", "created_at", "updated_at", "project_id"})
            next.erase(meta);
          if (type.kind == Kind::kEnvironment) next.erase("runner_id");
          MergePatch(next, *body);
        }
        if (next.contains("id") && next["id"] != id) {
          return ErrorResponse(Invalid("$.id", "must match the id in the path"));
        }
        next.erase("id");
        auto record = type.build(store_, c, project_of(r), id, std::move(next));
        if (!record) return ErrorResponse(record.error());
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
      return Authorized(r, [&](const Caller& c) {
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

  static json DeploymentJson(const store::Deployment& d) {
    auto at = [](int64_t ms) {
      return FormatRfc3339(std::chrono::system_clock::time_point(std::chrono::milliseconds(ms)), 3);
    };
    return {{"id", d.id},
            {"project_id", d.project_id},
            {"env_id", d.env_id},
            {"sequence", d.sequence},
            {"state", DeploymentStateName(d.state)},
            {"op", d.spec.value("op", "")},
            {"source", d.spec.value("source", json::object())},
            {"run_id", d.run_id.empty() ? json(nullptr) : json(d.run_id)},
            {"transitions", d.transitions},
            {"result", d.result},
            {"created_at", at(d.created_at)},
            {"updated_at", at(d.updated_at)}};
  }

  net::ServerResponse CreateDeployment(const RouteRequest& r, const Caller& c) {
    auto body = ParseBody(r);
    if (!body) return body.error();
    static const Schema kSchema = Schema::Object({
        Required("op", std::move(Schema::String().OneOf({"plan", "apply", "destroy"}))),
        Required("source", Schema::Object({Required("path", std::move(Schema::String().Pattern(
                                                                "/.*", "an absolute path")))})),
    });
    auto valid = ValidateWith(kSchema, std::move(*body));
    if (!valid) return ErrorResponse(valid.error());
    std::string path = (*valid)["source"]["path"];
    if (!allow_server_paths_)
      return ErrorResponse(
          InvalidFields("invalid deployment",
                        {{"$.source.path", "is accepted only by an embedded berthd (berth up)"}}));
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec))
      return ErrorResponse(InvalidFields("invalid deployment",
                                         {{"$.source.path", "must be a folder on the server"}}));
    store::Deployment d{.org_id = c.org,
                        .project_id = r.params.at("project"),
                        .env_id = r.params.at("env"),
                        .id = "d-" + crypto::RandomId()};
    d.spec = *valid;
    auto env = store_.Get(Kind::kEnvironment, c.org, d.project_id, d.env_id);
    if (!env) return ErrorResponse(env.error());
    auto created = store_.Deployments().Create(d);
    if (!created) return ErrorResponse(created.error());
    return JsonResponse(201, DeploymentJson(*created).dump());
  }

  net::ServerResponse ListDeployments(const RouteRequest& r, const Caller& c) {
    auto env = store_.Get(Kind::kEnvironment, c.org, r.params.at("project"), r.params.at("env"));
    if (!env) return ErrorResponse(env.error());
    auto list = store_.Deployments().ListForEnvironment(c.org, r.params.at("project"),
                                                        r.params.at("env"), 100);
    if (!list) return ErrorResponse(list.error());
    json items = json::array();
    for (const auto& d : *list) items.push_back(DeploymentJson(d));
    return JsonResponse(200, json{{"items", items}}.dump());
  }

  net::ServerResponse GetDeployment(const RouteRequest& r, const Caller& c) {
    auto d = store_.Deployments().Get(c.org, r.params.at("id"));
    if (!d) return ErrorResponse(d.error());
    return JsonResponse(200, DeploymentJson(*d).dump());
  }

  // A queued deployment is cancelled at once; a started one through its run (the runner stops
  // TF cleanly, the dispatcher records the end); an ended one cannot be.
  net::ServerResponse CancelDeployment(const RouteRequest& r, const Caller& c) {
    const std::string& id = r.params.at("id");
    auto d = store_.Deployments().Get(c.org, id);
    if (!d) return ErrorResponse(d.error());
    if (IsTerminal(d->state))
      return ErrorResponse(
          409, "FailedPrecondition",
          "deployment " + id + " has ended (" + std::string(DeploymentStateName(d->state)) + ")");
    if (d->state == DeploymentState::kQueued) {
      auto cancelled = store_.Deployments().Transition(c.org, id, DeploymentState::kQueued,
                                                       DeploymentState::kCancelled,
                                                       "cancelled by token " + c.token_id);
      if (!cancelled) return ErrorResponse(cancelled.error());
      return JsonResponse(200, DeploymentJson(*cancelled).dump());
    }
    if (!cancel_run_)
      return ErrorResponse(409, "FailedPrecondition",
                           "deployment " + id + " has started and this berthd runs no dispatcher");
    if (auto stopping = cancel_run_(c.org, id); !stopping) return ErrorResponse(stopping.error());
    return JsonResponse(202, DeploymentJson(*d).dump());
  }

  // The state key of the environment in the path, or the response when it does not exist.
  using StateKey = boost::system::result<std::string, net::ServerResponse>;
  StateKey StateKeyOf(const RouteRequest& r, const Caller& c) const {
    const std::string& project = r.params.at("project");
    const std::string& env = r.params.at("env");
    auto found = store_.Get(Kind::kEnvironment, c.org, project, env);
    if (!found) return StateKey(boost::system::in_place_error, ErrorResponse(found.error()));
    return c.org + "/" + project + "/" + env;
  }

  static Result<int64_t> VersionNumber(const std::string& text, const std::string& where) {
    int64_t version = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
    if (ec != std::errc() || end != text.data() + text.size() || version < 1) {
      return InvalidFields("invalid state version", {{where, "must be a whole number from 1"}});
    }
    return version;
  }

  net::ServerResponse StateVersions(const RouteRequest& r, const Caller& c) {
    auto key = StateKeyOf(r, c);
    if (!key) return key.error();
    auto versions = store_.States().Versions(*key);
    if (!versions) return ErrorResponse(versions.error());
    json items = json::array();
    for (const auto& v : *versions) {
      items.push_back({{"version", v.version},
                       {"size", v.size},
                       {"sha256", v.sha256},
                       {"run_id", v.run_id},
                       {"created_at", FormatRfc3339(std::chrono::system_clock::time_point(
                                                        std::chrono::milliseconds(v.created_at)),
                                                    3)},
                       {"deleted", v.deleted}});
    }
    json out = {{"items", items}};
    if (auto holder = store_.States().Holder(*key)) {
      out["lock"] = {{"id", holder->id}, {"info", json::parse(holder->info, nullptr, false)}};
    }
    return JsonResponse(200, out.dump());
  }

  net::ServerResponse StateVersion(const RouteRequest& r, const Caller& c) {
    auto key = StateKeyOf(r, c);
    if (!key) return key.error();
    auto version = VersionNumber(r.params.at("version"), "$.path.version");
    if (!version) return ErrorResponse(version.error());
    auto content = store_.States().Version(*key, *version);
    if (!content) return ErrorResponse(content.error());
    return JsonResponse(200, *content);
  }

  // Puts an earlier version back as the newest: nothing is overwritten, and a locked state
  // (a run at work) is refused.
  net::ServerResponse StateRollback(const RouteRequest& r, const Caller& c) {
    auto key = StateKeyOf(r, c);
    if (!key) return key.error();
    auto body = ParseBody(r);
    if (!body) return body.error();
    static const Schema kSchema =
        Schema::Object({Required("version", std::move(Schema::Integer().Range(1, INT64_MAX)))});
    auto valid = ValidateWith(kSchema, std::move(*body));
    if (!valid) return ErrorResponse(valid.error());
    int64_t version = (*valid)["version"].get<int64_t>();
    auto content = store_.States().Version(*key, version);
    if (!content) return ErrorResponse(content.error());
    auto put = store_.States().Put(
        *key, *content, "",
        "rollback to version " + std::to_string(version) + " by token " + c.token_id);
    if (!put) return ErrorResponse(put.error());
    return JsonResponse(200, json{{"version", put->version}, {"from_version", version}}.dump());
  }

  net::ServerResponse RefreshRunner(const RouteRequest& r, const Caller& c) {
    auto body = ParseBody(r);
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
  const bool allow_server_paths_;
  const std::function<Result<void>(const std::string&, const std::string&)> cancel_run_;
  mutable RateLimiter limiter_;
};

}  // namespace

std::string HashToken(const std::string& secret) { return crypto::Sha256Hex(secret); }

Result<std::string> IssueToken(store::Store& store, const std::string& org,
                               const std::string& description) {
  std::string secret = "berth_" + crypto::RandomToken(32);
  store::ApiToken token{"tok-" + crypto::RandomId(), org, description, 0};
  if (auto created = store.CreateToken(token, HashToken(secret)); !created) return created.error();
  return secret;
}

Api::Api(store::Store& store, ApiOptions options) : store_(store) {
  handlers_ = std::make_shared<Handlers>(store_, router_, options);
}

net::ServerResponse Api::Handle(const net::ServerRequest& request) const {
  return router_.Dispatch(request);
}

}  // namespace berth::server
