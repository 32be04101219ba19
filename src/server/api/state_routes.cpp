#include "server/api/state_routes.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/schema.h"
#include "core/state_storage.h"
#include "core/time_format.h"

namespace berth::server {

// Where the environment in the path keeps its state: berthd's backend (no runner linked yet,
// or berth storage), or its runner's other storage.
struct StateHome {
  EnvironmentRef env;
  std::string runner_id;
  std::optional<StateStorage> elsewhere;  // nullopt: berthd's own backend
};

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

Result<StateHome> HomeOf(store::Store& store, const RouteRequest& r, const Caller& c) {
  const std::string& project = r.params.at("project");
  const std::string& env = r.params.at("env");
  auto found = store.Get(store::Kind::kEnvironment, c.org, project, env);
  if (!found) return found.error();
  StateHome home{.env = {c.org, project, env}};
  const auto linked = found->columns.find("runner_id");
  if (linked == found->columns.end() || !linked->second || linked->second->empty()) return home;
  home.runner_id = *linked->second;
  auto runner = store.Get(store::Kind::kRunner, c.org, "", home.runner_id);
  if (!runner) return runner.error();
  auto storage = ParseStateStorage(runner->body.value("state_storage_configuration", json()));
  if (!storage) return storage.error();
  if (!std::holds_alternative<BerthStateStorage>(*storage)) home.elsewhere = std::move(*storage);
  return home;
}

Error NotInBerthd(const StateHome& home, const std::string& what) {
  return MakeError(ErrorKind::kFailedPrecondition,
                   "the state of " + home.env.Key() + " is in the " +
                       std::string(StateStorageTypeName(TypeOf(*home.elsewhere))) +
                       " storage of runner " + home.runner_id + ", not in berthd: " + what);
}

// The state key of the environment in the path in berthd's backend, or why it has none there.
// An environment whose runner keeps its state elsewhere has no versions in berthd: a list, a
// version, a push (kept where no run reads it) or a rollback is refused, saying where it is.
Result<std::string> StateKeyOf(store::Store& store, const RouteRequest& r, const Caller& c) {
  auto home = HomeOf(store, r, c);
  if (!home) return home.error();
  if (home->elsewhere)
    return NotInBerthd(*home, "its versions are that storage's (tofu state pull, tofu state push)");
  return home->env.Key();
}

// What was done by hand to a state, newest first.
json HistoryJson(const std::vector<store::StateHistoryEntry>& history) {
  json out = json::array();
  for (const store::StateHistoryEntry& e : history)
    out.push_back(
        {{"action", e.action}, {"actor", e.actor}, {"detail", e.detail}, {"at", ApiTime(e.at)}});
  return out;
}

// The lock TF wrote in another storage, shaped as berthd's own lock is shown.
json ElsewhereLockJson(const ElsewhereLock& lock) {
  json out = {{"id", lock.id},
              {"run_id", nullptr},
              {"operation", lock.operation},
              {"who", lock.who},
              {"where", lock.where}};
  if (!lock.created.empty()) out["created_at"] = lock.created;
  return out;
}

}  // namespace

StateRoutes::StateRoutes(Router& router, store::Store& store, const TokenGuard& authorized,
                         StatesElsewhere* elsewhere)
    : store_(store), authorized_(authorized), elsewhere_(elsewhere) {
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
  auto home = HomeOf(store_, r, c);
  if (!home) return ErrorResponse(home.error());
  if (home->elsewhere) return ShowElsewhere(*home);
  const std::string key = home->env.Key();
  auto versions = store_.States().Versions(key);
  if (!versions) return ErrorResponse(versions.error());
  auto history = store_.States().History(key, kHistoryShown);
  if (!history) return ErrorResponse(history.error());
  json out = {{"key", key},
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
  if (auto holder = store_.States().Holder(key)) out["lock"] = LockJson(*holder);
  out["history"] = HistoryJson(*history);
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
  auto home = HomeOf(store_, r, c);
  if (!home) return ErrorResponse(home.error());
  auto body = ParseJsonBody(r);
  if (!body) return body.error();
  static const Schema kSchema = Schema::Object({Required("reason", ReasonSchema())});
  auto valid = ValidateWith(kSchema, std::move(*body));
  if (!valid) return ErrorResponse(valid.error());
  if (home->elsewhere) return UnlockElsewhere(*home, c, (*valid)["reason"]);
  const std::string key = home->env.Key();
  auto holder = store_.States().Holder(key);
  if (!holder && holder.error().kind == ErrorKind::kNotFound)
    return ErrorResponse(409, "FailedPrecondition", "the state of " + key + " is not locked");
  if (!holder) return ErrorResponse(holder.error());
  if (auto unlocked = store_.States().Unlock(key, holder->id); !unlocked)
    return ErrorResponse(unlocked.error());
  std::string reason = (*valid)["reason"];
  std::string detail = "lock " + holder->id +
                       (holder->run_id.empty() ? "" : " of run " + holder->run_id) +
                       " broken: " + reason;
  if (auto recorded = store_.States().Record(key, {"unlock", "token " + c.token_id, detail});
      !recorded)
    return ErrorResponse(recorded.error());
  return JsonResponse(200, json{{"unlocked", LockJson(*holder)}, {"reason", reason}}.dump(
                               -1, ' ', false, json::error_handler_t::replace));
}

net::ServerResponse StateRoutes::ShowElsewhere(const StateHome& home) const {
  if (elsewhere_ == nullptr)
    return ErrorResponse(NotInBerthd(home, "read it there (tofu state pull)"));
  auto state = elsewhere_->Show(*home.elsewhere, home.env);
  if (!state) return ErrorResponse(state.error());
  const std::string key = home.env.Key();
  auto history = store_.States().History(key, kHistoryShown);
  if (!history) return ErrorResponse(history.error());
  json out = {{"key", key},
              {"storage", StateStorageTypeName(TypeOf(*home.elsewhere))},
              {"where", state->where},
              {"versions", 0},  // berthd keeps none of them: the storage does
              {"latest", nullptr},
              {"lock", state->lock ? ElsewhereLockJson(*state->lock) : json(nullptr)},
              {"history", HistoryJson(*history)}};
  if (state->size)
    out["latest"] = {
        {"size", *state->size}, {"etag", state->etag}, {"last_modified", state->last_modified}};
  return JsonResponse(200, out.dump(-1, ' ', false, json::error_handler_t::replace));
}

net::ServerResponse StateRoutes::UnlockElsewhere(const StateHome& home, const Caller& c,
                                                 const std::string& reason) const {
  if (elsewhere_ == nullptr)
    return ErrorResponse(NotInBerthd(home, "unlock it there (tofu force-unlock)"));
  auto lock = elsewhere_->Unlock(*home.elsewhere, home.env);
  if (!lock) return ErrorResponse(lock.error());
  const std::string detail =
      "lock " + lock->id + " (" + lock->who + ") in " + lock->where + " broken: " + reason;
  if (auto recorded =
          store_.States().Record(home.env.Key(), {"unlock", "token " + c.token_id, detail});
      !recorded)
    return ErrorResponse(recorded.error());
  return JsonResponse(200, json{{"unlocked", ElsewhereLockJson(*lock)}, {"reason", reason}}.dump(
                               -1, ' ', false, json::error_handler_t::replace));
}

}  // namespace berth::server
