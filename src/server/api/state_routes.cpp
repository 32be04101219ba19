#include "server/api/state_routes.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/schema.h"
#include "core/state_storage.h"
#include "core/time_format.h"

namespace berth::server {
namespace {

using nlohmann::json;

constexpr int kHistoryShown = 20;

Result<int64_t> VersionNumber(const std::string& text, const std::string& where) {
  std::optional<int64_t> version = WholeNumber(text);
  if (!version || *version < 1)
    return InvalidFields("invalid state version", {{where, "must be a whole number from 1"}});
  return *version;
}

// The holder as an operator needs to judge it: whose run, which operation, how long ago.
json LockJson(const store::StateLock& lock) {
  json info = json::parse(lock.info, nullptr, false);
  json out = {{"id", lock.id},
              {"run_id", lock.run_id.empty() ? json(nullptr) : json(lock.run_id)},
              {"info", info.is_discarded() ? json(nullptr) : info},
              {"created_at", ApiTime(lock.created_at)},
              {"age_seconds", (UnixMillisNow() - lock.created_at) / 1000}};
  if (info.is_object()) {
    out["operation"] = info.value("Operation", "");
    out["who"] = info.value("Who", "");
  }
  return out;
}

// An operator's reason, kept in the state's history: up to 1024 characters, not blank.
Schema ReasonSchema() {
  return std::move(
      Schema::String().MaxLength(1024).Require([](const json& v) -> std::optional<std::string> {
        if (IsBlank(v.get_ref<const std::string&>())) return "must not be blank";
        return std::nullopt;
      }));
}

// A state's version or serial as a whole number (JSON Schema's integer: 7 and 7.0 alike).
std::optional<int64_t> StateNumber(const json& state, const char* field) {
  auto it = state.find(field);
  return it == state.end() ? std::nullopt : AsWholeNumber(*it);
}

// A TF state document: an object with a format version and a serial (tofu refuses others).
Schema StateDocumentSchema() {
  return std::move(Schema::FreeObject().Require([](const json& v) -> std::optional<std::string> {
    auto version = StateNumber(v, "version"), serial = StateNumber(v, "serial");
    if (!version || *version < 1 || !serial || *serial < 0)
      return "must be a TF state: an object with a version (from 1) and a serial (from 0)";
    return std::nullopt;
  }));
}

// The state key of the environment in the path, or why there is none. An environment whose
// runner keeps its state in other storage has none in berthd: an empty history shown, a push
// kept where no run reads it or an unlock of nothing would mislead, so each is refused,
// saying where the state is.
Result<std::string> StateKeyOf(store::Store& store, const RouteRequest& r, const Caller& c) {
  const std::string& project = r.params.at("project");
  const std::string& env = r.params.at("env");
  auto found = store.Get(store::Kind::kEnvironment, c.org, project, env);
  if (!found) return found.error();
  const std::string key = EnvironmentRef{c.org, project, env}.Key();
  const auto linked = found->columns.find("runner_id");
  if (linked == found->columns.end() || !linked->second || linked->second->empty()) return key;
  auto runner = store.Get(store::Kind::kRunner, c.org, "", *linked->second);
  if (!runner) return runner.error();
  auto storage = ParseStateStorage(runner->body.value("state_storage_configuration", json()));
  if (!storage) return storage.error();
  if (std::holds_alternative<BerthStateStorage>(*storage)) return key;
  return MakeError(ErrorKind::kFailedPrecondition,
                   "the state of " + key + " is in the " +
                       std::string(StateStorageTypeName(TypeOf(*storage))) + " storage of runner " +
                       *linked->second +
                       ", not in berthd: read, unlock or push it there (tofu state pull, "
                       "tofu force-unlock, tofu state push)");
}

}  // namespace

StateRoutes::StateRoutes(Router& router, store::Store& store, const TokenGuard& authorized)
    : store_(store), authorized_(authorized) {
  auto add = [&](const std::string& method, const std::string& path, Scope needed,
                 net::ServerResponse (StateRoutes::*handler)(const RouteRequest&, const Caller&)
                     const) {
    router.Add(method, path, [this, needed, handler](const RouteRequest& r) {
      return authorized_(r, needed, [&](const Caller& c) { return (this->*handler)(r, c); });
    });
  };
  const std::string state = "/orgs/{org}/projects/{project}/envs/{env}/state";
  add("GET", state, Scope::kRead, &StateRoutes::Show);
  add("GET", state + "/versions", Scope::kRead, &StateRoutes::Versions);
  // A state holds every secret its resources have: for those who may deploy (and so could
  // read it through a run anyway), not for a read token.
  add("GET", state + "/versions/{version}", Scope::kDeploy, &StateRoutes::Version);
  add("POST", state + "/versions", Scope::kAdmin, &StateRoutes::Push);
  add("POST", state + "/rollback", Scope::kAdmin, &StateRoutes::Rollback);
  add("POST", state + "/unlock", Scope::kAdmin, &StateRoutes::Unlock);
}

net::ServerResponse StateRoutes::Show(const RouteRequest& r, const Caller& c) const {
  auto key = StateKeyOf(store_, r, c);
  if (!key) return ErrorResponse(key.error());
  auto versions = store_.States().Versions(*key);
  if (!versions) return ErrorResponse(versions.error());
  auto history = store_.States().History(*key, kHistoryShown);
  if (!history) return ErrorResponse(history.error());
  json out = {{"key", *key},
              {"versions", versions->size()},
              {"latest", nullptr},
              {"lock", nullptr},
              {"history", json::array()}};
  if (!versions->empty()) {
    const store::StateVersion& v = versions->back();
    out["latest"] = {{"version", v.version},
                     {"size", v.size},
                     {"sha256", v.sha256},
                     {"run_id", v.run_id},
                     {"created_at", ApiTime(v.created_at)},
                     {"deleted", v.deleted}};
  }
  if (auto holder = store_.States().Holder(*key)) out["lock"] = LockJson(*holder);
  for (const store::StateHistoryEntry& e : *history) {
    out["history"].push_back(
        {{"action", e.action}, {"actor", e.actor}, {"detail", e.detail}, {"at", ApiTime(e.at)}});
  }
  return JsonResponse(200, out.dump(-1, ' ', false, json::error_handler_t::replace));
}

net::ServerResponse StateRoutes::Versions(const RouteRequest& r, const Caller& c) const {
  auto key = StateKeyOf(store_, r, c);
  if (!key) return ErrorResponse(key.error());
  auto versions = store_.States().Versions(*key);
  if (!versions) return ErrorResponse(versions.error());
  json items = json::array();
  for (const auto& v : *versions) {
    items.push_back({{"version", v.version},
                     {"size", v.size},
                     {"sha256", v.sha256},
                     {"run_id", v.run_id},
                     {"created_at", ApiTime(v.created_at)},
                     {"deleted", v.deleted}});
  }
  json out = {{"items", items}};
  if (auto holder = store_.States().Holder(*key)) out["lock"] = LockJson(*holder);
  return JsonResponse(200, out.dump(-1, ' ', false, json::error_handler_t::replace));
}

net::ServerResponse StateRoutes::Version(const RouteRequest& r, const Caller& c) const {
  auto key = StateKeyOf(store_, r, c);
  if (!key) return ErrorResponse(key.error());
  auto version = VersionNumber(r.params.at("version"), "$.path.version");
  if (!version) return ErrorResponse(version.error());
  auto content = store_.States().Version(*key, *version);
  if (!content) return ErrorResponse(content.error());
  return JsonResponse(200, *content);
}

// Pushes a state an operator kept (one a run could not persist, say) as the newest version, with
// the reason in the state's history; refused while a run holds the lock, like a rollback.
net::ServerResponse StateRoutes::Push(const RouteRequest& r, const Caller& c) const {
  auto key = StateKeyOf(store_, r, c);
  if (!key) return ErrorResponse(key.error());
  auto body = ParseJsonBody(r);
  if (!body) return body.error();
  static const Schema kSchema = Schema::Object(
      {Required("state", StateDocumentSchema()), Required("reason", ReasonSchema())});
  auto valid = ValidateWith(kSchema, std::move(*body));
  if (!valid) return ErrorResponse(valid.error());
  const std::string reason = (*valid)["reason"];
  json& state = (*valid)["state"];
  // As tofu reads them: whole numbers written without a fraction.
  for (const char* field : {"version", "serial"}) state[field] = *StateNumber(state, field);
  auto put = store_.States().Put(*key, state.dump(), "", "pushed by token " + c.token_id);
  if (!put) return ErrorResponse(put.error());
  if (auto recorded = store_.States().Record(
          *key, {"push", "token " + c.token_id,
                 "pushed as version " + std::to_string(put->version) + ": " + reason});
      !recorded)
    return ErrorResponse(recorded.error());
  return JsonResponse(201, json{{"version", put->version}}.dump());
}

// Puts an earlier version back as the newest: nothing is overwritten, and a locked state
// (a run at work) is refused.
net::ServerResponse StateRoutes::Rollback(const RouteRequest& r, const Caller& c) const {
  auto key = StateKeyOf(store_, r, c);
  if (!key) return ErrorResponse(key.error());
  auto body = ParseJsonBody(r);
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
  if (auto recorded = store_.States().Record(
          *key, {"rollback", "token " + c.token_id,
                 "version " + std::to_string(version) + " put back as version " +
                     std::to_string(put->version)});
      !recorded)
    return ErrorResponse(recorded.error());
  return JsonResponse(200, json{{"version", put->version}, {"from_version", version}}.dump());
}

// Breaks the lock whoever holds it, when an operator has judged that no run will release it
// (a runner lost with its node). Only the lock read here is broken: one taken meanwhile stays.
net::ServerResponse StateRoutes::Unlock(const RouteRequest& r, const Caller& c) const {
  auto key = StateKeyOf(store_, r, c);
  if (!key) return ErrorResponse(key.error());
  auto body = ParseJsonBody(r);
  if (!body) return body.error();
  static const Schema kSchema = Schema::Object({Required("reason", ReasonSchema())});
  auto valid = ValidateWith(kSchema, std::move(*body));
  if (!valid) return ErrorResponse(valid.error());
  auto holder = store_.States().Holder(*key);
  if (!holder && holder.error().kind == ErrorKind::kNotFound)
    return ErrorResponse(409, "FailedPrecondition", "the state of " + *key + " is not locked");
  if (!holder) return ErrorResponse(holder.error());
  if (auto unlocked = store_.States().Unlock(*key, holder->id); !unlocked)
    return ErrorResponse(unlocked.error());
  std::string reason = (*valid)["reason"];
  std::string detail = "lock " + holder->id +
                       (holder->run_id.empty() ? "" : " of run " + holder->run_id) +
                       " broken: " + reason;
  if (auto recorded = store_.States().Record(*key, {"unlock", "token " + c.token_id, detail});
      !recorded)
    return ErrorResponse(recorded.error());
  return JsonResponse(200, json{{"unlocked", LockJson(*holder)}, {"reason", reason}}.dump(
                               -1, ' ', false, json::error_handler_t::replace));
}

}  // namespace berth::server
