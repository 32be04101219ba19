// Status codes as the HTTP backend client reads them (OpenTofu internal/backend/remote-state/
// http): GET 200 with the state, or 204 when there is none; LOCK 200, or 423 with the holder's
// LockInfo as the body; everything else 200 on success.
#include "server/statebackend/state_backend.h"

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/bounded_json.h"
#include "core/environment_ref.h"
#include "crypto/jws.h"
#include "net/request_fields.h"
#include "server/live_run.h"

namespace berth::server {
namespace {

using nlohmann::json;

net::ServerResponse Reply(int status, std::string body = {},
                          std::string content_type = "application/json") {
  net::ServerResponse response{.status = status};
  if (!body.empty()) response.headers["content-type"] = std::move(content_type);
  response.body = std::move(body);
  return response;
}

net::ServerResponse Problem(int status, const std::string& message) {
  auto response = Reply(status, json{{"error", message}}.dump());
  if (status == 401) response.headers["www-authenticate"] = "Basic realm=\"berth state\"";
  return response;
}

int StatusOf(const Error& error) { return HttpStatus(error.kind); }

}  // namespace

StateBackend::StateBackend(store::Store& store, std::string public_key, Clock& clock)
    : store_(store), states_(store.States()), tokens_(std::move(public_key)), clock_(clock) {}

net::ServerResponse StateBackend::Handle(const net::ServerRequest& request) const {
  // /state/v1/{org}/{project}/{env}, each an id (a DNS label); TF's query (lock IDs) follows.
  std::string_view path = std::string_view(request.target).substr(kStatePathPrefix.size());
  auto where = EnvironmentRef::FromKey(path.substr(0, path.find('?')));
  if (!where) return Problem(404, "no such state: the path is /state/v1/{org}/{project}/{env}");
  std::string key = where->Key();

  auto token = tokens_.Verify(net::RequestCredential(request), crypto::kRunTokenAudience,
                              clock_.WallSeconds());
  if (!token) return Problem(401, "a run token is required: " + token.error().message);
  if (token->scope != key)
    return Problem(403, "the run's token is for " + token->scope + ", not " + key);
  if (auto live = RunIsLive(store_, token->run_id); !live)
    return Problem(StatusOf(live.error()), live.error().message);

  const std::string& method = request.method;
  // A write with no lock ID comes from TF run with -lock=false: berthd holds the lock for the
  // whole run, with the run's id as its ID, so the write is under that lock (and refused once an
  // operator broke it: a run cut off cannot write over what came after).
  std::string lock_id = net::QueryValue(request.target, "ID");
  if (lock_id.empty()) lock_id = token->run_id;
  if (method == "GET") {
    auto state = states_.Current(key);
    if (!state && state.error().kind == ErrorKind::kNotFound) return Reply(204);
    if (!state) return Problem(StatusOf(state.error()), state.error().message);
    return Reply(200, *state);
  }
  if (method == "POST") {
    // Checked as it streams by: berthd keeps the state's bytes, it need not build the document.
    if (auto state = CheckBoundedJson(request.body, kTfDocument.depth); !state)
      return Problem(400, "the state is refused: " + state.error().message);
    auto stored = states_.Put(key, request.body, lock_id, token->run_id);
    if (!stored) {
      if (stored.error().reason == "Locked") return Reply(423, stored.error().context);
      return Problem(StatusOf(stored.error()), stored.error().message);
    }
    return Reply(200);
  }
  if (method == "DELETE") {
    auto deleted = states_.Delete(key, lock_id, token->run_id);
    if (!deleted) {
      if (deleted.error().reason == "Locked") return Reply(423, deleted.error().context);
      return Problem(StatusOf(deleted.error()), deleted.error().message);
    }
    return Reply(200);
  }
  if (method == "LOCK" || method == "UNLOCK") {
    json info = ParseBoundedJsonOrNull(request.body);
    auto id = info.is_object() ? info.find("ID") : info.end();
    if (!info.is_object() || id == info.end() || !id->is_string() || id->get<std::string>().empty())
      return Problem(400, "the body must be a LockInfo with an ID");
    if (method == "LOCK") {
      auto locked = states_.Lock(key, {id->get<std::string>(), request.body, 0, token->run_id});
      if (!locked && locked.error().reason == "Locked") return Reply(423, locked.error().context);
      if (!locked) return Problem(StatusOf(locked.error()), locked.error().message);
      return Reply(200);
    }
    auto unlocked = states_.Unlock(key, id->get<std::string>());
    if (!unlocked && unlocked.error().reason == "Locked")
      return Reply(423, unlocked.error().context);
    if (!unlocked) return Problem(StatusOf(unlocked.error()), unlocked.error().message);
    return Reply(200);
  }
  return Problem(405, "the state backend speaks GET, POST, DELETE, LOCK and UNLOCK");
}

}  // namespace berth::server
