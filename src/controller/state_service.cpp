#include "controller/state_service.h"

#include <optional>

#include "core/base64.h"
#include "core/bounded_json.h"
#include "core/inflate.h"
#include "net/request_fields.h"

namespace berth::controller {
namespace {

using nlohmann::json;

constexpr std::string_view kPrefix = "/state/";
constexpr char kWorkspace[] = "default";  // the only one a Terraform object has
constexpr char kLockInfoAnnotation[] = "app.terraform.io/lock-info";
constexpr size_t kMaxLockInfoBytes = 64 << 10;

net::ServerResponse Reply(int status, std::string body = {}) {
  net::ServerResponse response{.status = status};
  if (!body.empty()) response.headers["content-type"] = "application/json";
  response.body = std::move(body);
  return response;
}

net::ServerResponse Problem(int status, const std::string& message) {
  auto response = Reply(status, json{{"error", message}}.dump());
  if (status == 401)
    response.headers["www-authenticate"] = "Basic realm=\"berth-controller state\"";
  return response;
}

net::ServerResponse Failed(const Error& error) {
  return Problem(error.kind == ErrorKind::kNotFound ? 502 : HttpStatus(error.kind),
                 "the Kubernetes API: " + error.message);
}

bool IsNameChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

struct StateRef {
  std::string ns;
  std::string name;
};

// /state/<namespace>/<name>: a DNS label and a DNS subdomain short enough that the Secret's
// name (tfstate-default-<name>) and the Lease's (lock-<that>) are names too.
std::optional<StateRef> ParsePath(const std::string& target) {
  std::string_view path(target);
  path = path.substr(0, path.find('?'));
  if (!path.starts_with(kPrefix)) return std::nullopt;
  path.remove_prefix(kPrefix.size());
  const size_t slash = path.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  StateRef ref{std::string(path.substr(0, slash)), std::string(path.substr(slash + 1))};
  const size_t max_name = 253 - std::string("lock-tfstate-default-").size();
  if (ref.ns.empty() || ref.ns.size() > 63 || ref.name.empty() || ref.name.size() > max_name)
    return std::nullopt;
  for (char c : ref.ns)
    if (!IsNameChar(c)) return std::nullopt;
  for (char c : ref.name)
    if (!IsNameChar(c) && c != '.') return std::nullopt;
  return ref;
}

json Labels(const std::string& name) {
  return {{"tfstate", "true"}, {"tfstateSecretSuffix", name}, {"tfstateWorkspace", kWorkspace}};
}

// The lock's holder and what tofu said of it; empty when the Lease holds none.
struct Held {
  std::string id;
  std::string info;
  std::string resource_version;
};

Held HeldBy(const json& lease) {
  Held held;
  const json spec = lease.value("spec", json::object());
  if (spec.is_object() && spec.contains("holderIdentity") && spec["holderIdentity"].is_string())
    held.id = spec["holderIdentity"].get<std::string>();
  const json metadata = lease.value("metadata", json::object());
  const json annotations = metadata.value("annotations", json::object());
  if (annotations.is_object() && annotations.contains(kLockInfoAnnotation) &&
      annotations[kLockInfoAnnotation].is_string())
    held.info = annotations[kLockInfoAnnotation].get<std::string>();
  held.resource_version = metadata.value("resourceVersion", "");
  return held;
}

// The ID of a LockInfo body, empty when the body is not one.
std::string LockId(const std::string& body) {
  const json info = ParseBoundedJsonOrNull(body);
  if (!info.is_object() || !info.contains("ID") || !info["ID"].is_string()) return {};
  return info["ID"].get<std::string>();
}

}  // namespace

std::string StatePath(const std::string& ns, const std::string& name) {
  return std::string(kPrefix) + ns + "/" + name;
}

std::string StateSecretName(const std::string& name) {
  return std::string("tfstate-") + kWorkspace + "-" + name;
}

std::string StateLeaseName(const std::string& name) { return "lock-" + StateSecretName(name); }

net::Admission StateService::Admit(const net::ServerRequest& head) const {
  auto ref = ParsePath(head.target);
  if (!ref)
    return {.refusal = Problem(404, "no such state: the path is /state/{namespace}/{name}")};
  const auto verdict =
      tokens_.Verify(net::RequestCredential(head), ref->ns, ref->name, clock_.Wall());
  if (verdict == StateTokens::Verdict::kExpired)
    return {.refusal = Problem(401, "the state token has expired")};
  if (verdict != StateTokens::Verdict::kValid)
    return {.refusal =
                Problem(401, "the token does not open the state of " + ref->ns + "/" + ref->name)};
  return {.body_limit = head.method == "POST" ? options_.max_state_bytes : kMaxLockInfoBytes};
}

net::ServerResponse StateService::Handle(const net::ServerRequest& request) const {
  // Admit has run for requests with a body; a GET has none, so the token is checked here too.
  if (net::Admission admission = Admit(request); admission.refusal)
    return std::move(*admission.refusal);
  const StateRef ref = *ParsePath(request.target);
  if (request.method == "GET") return Read(ref.ns, ref.name);
  if (request.method == "POST")
    return Write(ref.ns, ref.name, net::QueryValue(request.target, "ID"), request.body);
  if (request.method == "LOCK") return Lock(ref.ns, ref.name, request.body);
  if (request.method == "UNLOCK") return Unlock(ref.ns, ref.name, request.body);
  return Problem(405,
                 "berth-controller's state service speaks GET, POST, LOCK and UNLOCK (a Terraform "
                 "object's state goes with the object)");
}

net::ServerResponse StateService::Read(const std::string& ns, const std::string& name) const {
  auto secret = api_.Get(kube::kSecrets, ns, StateSecretName(name));
  if (!secret && secret.error().kind == ErrorKind::kNotFound) return Reply(204);
  if (!secret) return Failed(secret.error());
  const json data = secret->value("data", json::object());
  if (!data.is_object() || !data.contains("tfstate")) return Reply(204);
  if (!data["tfstate"].is_string())
    return Problem(500, "Secret " + StateSecretName(name) + ": tfstate is not a string");
  auto compressed = Base64Decode(data["tfstate"].get<std::string>());
  if (!compressed)
    return Problem(500, "Secret " + StateSecretName(name) + ": tfstate is not base64");
  auto state = Inflate(*compressed, Compression::kGzip, options_.max_state_bytes);
  if (!state)
    return Problem(500, "Secret " + StateSecretName(name) + ": tfstate " + state.error().message);
  return Reply(200, std::move(*state));
}

net::ServerResponse StateService::Write(const std::string& ns, const std::string& name,
                                        const std::string& lock_id,
                                        const std::string& state) const {
  auto lease = api_.Get(kube::kLeases, ns, StateLeaseName(name));
  if (!lease && lease.error().kind != ErrorKind::kNotFound) return Failed(lease.error());
  if (lease) {
    const Held held = HeldBy(*lease);
    if (!held.id.empty() && held.id != lock_id) return Reply(423, held.info);
  }
  if (auto checked = CheckBoundedJson(state, kTfDocument.depth); !checked)
    return Problem(400, "the state is refused: " + checked.error().message);
  auto compressed = Gzip(state, GzipLevel::kFast);
  if (!compressed) return Problem(500, compressed.error().message);
  const json data = {{"tfstate", Base64Encode(*compressed)}};
  const std::string secret_name = StateSecretName(name);
  auto existing = api_.Get(kube::kSecrets, ns, secret_name);
  if (!existing && existing.error().kind != ErrorKind::kNotFound) return Failed(existing.error());
  auto written = existing ? api_.Patch(kube::kSecrets, ns, secret_name, kube::PatchType::kMerge,
                                       {{"data", data}}, options_.field_manager)
                          : api_.Create(kube::kSecrets, ns,
                                        {{"apiVersion", "v1"},
                                         {"kind", "Secret"},
                                         {"type", "Opaque"},
                                         {"metadata",
                                          {{"name", secret_name},
                                           {"namespace", ns},
                                           {"labels", Labels(name)},
                                           {"annotations", {{"encoding", "gzip"}}}}},
                                         {"data", data}});
  if (!written) return Failed(written.error());
  return Reply(200);
}

net::ServerResponse StateService::Lock(const std::string& ns, const std::string& name,
                                       const std::string& info) const {
  const std::string id = LockId(info);
  if (id.empty()) return Problem(400, "the body must be a LockInfo with an ID");
  const std::string lease_name = StateLeaseName(name);
  // Twice at most: a replica or a runner that took the lock in between wins.
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto lease = api_.Get(kube::kLeases, ns, lease_name);
    if (!lease && lease.error().kind != ErrorKind::kNotFound) return Failed(lease.error());
    if (!lease) {
      auto made = api_.Create(kube::kLeases, ns,
                              {{"apiVersion", "coordination.k8s.io/v1"},
                               {"kind", "Lease"},
                               {"metadata",
                                {{"name", lease_name},
                                 {"namespace", ns},
                                 {"labels", Labels(name)},
                                 {"annotations", {{kLockInfoAnnotation, info}}}}},
                               {"spec", {{"holderIdentity", id}}}});
      if (made) return Reply(200);
      if (made.error().kind == ErrorKind::kAlreadyExists) continue;
      return Failed(made.error());
    }
    const Held held = HeldBy(*lease);
    if (held.id == id) return Reply(200);
    if (!held.id.empty()) return Reply(423, held.info);
    auto taken = api_.Patch(kube::kLeases, ns, lease_name, kube::PatchType::kMerge,
                            {{"metadata",
                              {{"resourceVersion", held.resource_version},
                               {"annotations", {{kLockInfoAnnotation, info}}}}},
                             {"spec", {{"holderIdentity", id}}}},
                            options_.field_manager);
    if (taken) return Reply(200);
    if (taken.error().kind != ErrorKind::kConflict) return Failed(taken.error());
  }
  return Problem(409, "the lock " + lease_name + " keeps changing hands: try again");
}

net::ServerResponse StateService::Unlock(const std::string& ns, const std::string& name,
                                         const std::string& info) const {
  const std::string id = LockId(info);
  if (id.empty()) return Problem(400, "the body must be a LockInfo with an ID");
  const std::string lease_name = StateLeaseName(name);
  auto lease = api_.Get(kube::kLeases, ns, lease_name);
  // Unlocking what is not locked succeeds: a retried UNLOCK whose answer was lost.
  if (!lease && lease.error().kind == ErrorKind::kNotFound) return Reply(200);
  if (!lease) return Failed(lease.error());
  const Held held = HeldBy(*lease);
  if (held.id.empty()) return Reply(200);
  if (held.id != id) return Reply(423, held.info);
  auto released = api_.Patch(kube::kLeases, ns, lease_name, kube::PatchType::kMerge,
                             {{"metadata",
                               {{"resourceVersion", held.resource_version},
                                {"annotations", {{kLockInfoAnnotation, nullptr}}}}},
                              {"spec", {{"holderIdentity", nullptr}}}},
                             options_.field_manager);
  if (!released) return Failed(released.error());
  return Reply(200);
}

}  // namespace berth::controller
