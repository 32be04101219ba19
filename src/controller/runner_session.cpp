#include "controller/runner_session.h"

#include "launch/kubernetes/pod_builder.h"

namespace berth::controller {
namespace {

using nlohmann::json;

constexpr char kFingerprintAnnotation[] = "berth.dev/tls-fingerprint";

// A label value from a source revision ("main@sha1:0123..." -> "main-sha1-0123456789ab").
std::string RevisionLabel(const std::string& revision) {
  std::string label;
  for (char c : revision) {
    const bool plain = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.';
    label += plain ? c : '-';
    if (label.size() == 40) break;  // "tf-runner-" + 40 stays under 63
  }
  while (!label.empty() && !std::isalnum(static_cast<unsigned char>(label.back())))
    label.pop_back();
  return label.empty() ? "none" : label;
}

bool PodReady(const json& pod) {
  const json status = pod.value("status", json::object());
  if (status.value("podIP", "").empty()) return false;
  for (const json& condition : status.value("conditions", json::array()))
    if (condition.value("type", "") == "Ready") return condition.value("status", "") == "True";
  return false;
}

bool PodEnded(const json& pod) {
  const std::string phase = pod.value("status", json::object()).value("phase", "");
  return phase == "Succeeded" || phase == "Failed";
}

Error ConnectionFailed(const std::string& message) {
  Error error = MakeError(ErrorKind::kUnavailable, message);
  error.reason = std::string(kRunnerConnectionFailed);
  return error;
}

// Watches the Pod (no polling) until done says so; done gets null once the Pod is gone.
Result<json> WatchPod(kube::KubeApi& api, const std::string& ns, const std::string& name,
                      std::chrono::steady_clock::time_point deadline,
                      const std::function<bool(const json*)>& done) {
  while (std::chrono::steady_clock::now() < deadline) {
    auto current = api.Get(kube::kPods, ns, name);
    if (!current && current.error().kind != ErrorKind::kNotFound) return current.error();
    if (done(current ? &*current : nullptr)) return Ok(current ? *current : json());
    std::optional<json> finished;
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(
        deadline - std::chrono::steady_clock::now());
    auto watched = api.Watch(
        kube::kPods, ns,
        {.field_selector = "metadata.name=" + name,
         .resource_version =
             current ? (*current)["metadata"].value("resourceVersion", "") : std::string(),
         .timeout_seconds = static_cast<int>(std::max<int64_t>(1, left.count()))},
        [&](const kube::WatchEvent& event) {
          const json* pod = event.type == "DELETED" ? nullptr : &event.object;
          if (event.type == "BOOKMARK" || !done(pod)) return true;
          finished = pod ? *pod : json();
          return false;
        },
        [&] { return std::chrono::steady_clock::now() >= deadline; });
    if (finished) return Ok(std::move(*finished));
    if (!watched && watched.error().kind != ErrorKind::kCancelled &&
        watched.error().reason != kube::kReasonExpired)
      return watched.error();
  }
  return MakeError(ErrorKind::kDeadlineExceeded, "runner Pod " + ns + "/" + name);
}

// The runner Pod, Ready: a kept one that still matches, or a new one.
Result<json> ReadyPod(kube::KubeApi& api, const RunnerSessionOptions& options,
                      const launch::TerraformObject& object, const RunnerRun& run,
                      const std::string& fingerprint) {
  auto manifests =
      launch::BuildTerraformRunnerPod(*options.settings, object, RevisionLabel(run.revision));
  if (!manifests) return manifests.error();
  json pod = manifests->workload;
  pod["metadata"]["annotations"][kFingerprintAnnotation] = fingerprint;
  pod["metadata"]["ownerReferences"] = {{{"apiVersion", launch::kTerraformApiVersion},
                                         {"kind", launch::kTerraformKind},
                                         {"name", object.name},
                                         {"uid", object.uid},
                                         {"controller", true}}};
  const auto deadline = std::chrono::steady_clock::now() + options.creation_timeout;
  auto existing = api.Get(kube::kPods, manifests->ns, manifests->name);
  if (existing) {
    const json annotations = (*existing)["metadata"].value("annotations", json::object());
    const bool matches =
        annotations.value(std::string(launch::kSpecHashAnnotation), "") == manifests->spec_hash &&
        annotations.value(kFingerprintAnnotation, "") == fingerprint && !PodEnded(*existing) &&
        !(*existing)["metadata"].contains("deletionTimestamp");
    if (matches) {
      return WatchPod(api, manifests->ns, manifests->name, deadline,
                      [](const json* p) { return p == nullptr || PodReady(*p) || PodEnded(*p); });
    }
    // Another spec.runner, a rotated certificate or an ended Pod: replaced (seed 000).
    auto deleted = api.Delete(kube::kPods, manifests->ns, manifests->name, {});
    if (!deleted && deleted.error().kind != ErrorKind::kNotFound) return deleted.error();
    auto gone = WatchPod(api, manifests->ns, manifests->name, deadline,
                         [](const json* p) { return p == nullptr; });
    if (!gone) return gone.error();
  } else if (existing.error().kind != ErrorKind::kNotFound) {
    return existing.error();
  }
  auto created = api.Create(kube::kPods, manifests->ns, pod);
  if (!created) {
    if (created.error().reason == kube::kReasonQuotaExceeded) {
      Error error = created.error();
      error.reason = std::string(kRunnerQuotaExhausted);
      return error;
    }
    return created.error();
  }
  return WatchPod(api, manifests->ns, manifests->name, deadline,
                  [](const json* p) { return p == nullptr || PodReady(*p) || PodEnded(*p); });
}

}  // namespace

Result<rpc::RunnerReply> RunInRunnerPod(kube::KubeApi& api, RunnerPki& pki,
                                        const RunnerSessionOptions& options,
                                        const launch::TerraformObject& object, const RunnerRun& run,
                                        const std::function<void(std::string_view)>& on_log) {
  auto fingerprint = pki.EnsureRunnerSecret(object);
  if (!fingerprint) return fingerprint.error();
  auto pod = ReadyPod(api, options, object, run, *fingerprint);
  const std::string pod_name = launch::ServedPodName(object.name);
  if (!pod) {
    if (pod.error().reason == kRunnerQuotaExhausted) return pod.error();
    return ConnectionFailed("runner Pod " + object.ns + "/" + pod_name + " not Ready within " +
                            std::to_string(options.creation_timeout.count()) +
                            "s: " + pod.error().message);
  }
  if (pod->is_null() || !PodReady(*pod))
    return ConnectionFailed("runner Pod " + object.ns + "/" + pod_name + " ended or vanished");
  auto client_certificate = pki.ClientCertificate();
  if (!client_certificate) return client_certificate.error();
  const std::string address =
      (*pod)["status"]["podIP"].get<std::string>() + ":" + std::to_string(launch::kServePort);
  auto client = rpc::RunnerClient::Create(address, {.ca_pem = pki.CaPem(),
                                                    .cert_pem = client_certificate->certificate_pem,
                                                    .key_pem = client_certificate->key.pem,
                                                    .server_name = RunnerServerName(object)});
  if (!client) return client.error();
  auto reply = (*client)->Run(run.args, run.files, on_log);
  if (object.runner.always_cleanup) {
    auto deleted = api.Delete(kube::kPods, object.ns, pod_name, {});
    (void)deleted;  // a Pod already gone is what was wanted
  }
  if (!reply && reply.error().kind == ErrorKind::kUnavailable)
    return ConnectionFailed("runner " + address + ": " + reply.error().message);
  return reply;
}

}  // namespace berth::controller
