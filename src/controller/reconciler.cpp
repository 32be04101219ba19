#include "controller/reconciler.h"

#include <fstream>
#include <map>

#include "controller/dependencies.h"
#include "controller/event_recorder.h"
#include "controller/finalizer.h"
#include "controller/flux_source.h"
#include "controller/git_source.h"
#include "controller/outputs_secret.h"
#include "controller/plan_store.h"
#include "controller/runner_session.h"
#include "controller/state_service.h"
#include "core/base64.h"
#include "core/run_result.h"
#include "core/time_format.h"
#include "crypto/digest.h"
#include "sys/files.h"
#include "sys/module_bundle.h"

namespace berth::controller {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// spec.backendConfig.customConfiguration: the module's backend, replacing berth's default.
std::string CustomBackend(const json& spec) {
  return spec.value("backendConfig", json::object()).value("customConfiguration", "");
}

// A failed run's message and the end of its log (the runner masked both), for the Plan or
// Apply condition.
std::string RunErrorText(const RunError& error) {
  return error.tail.empty() ? error.message : error.message + "\n" + error.tail;
}

// The runner's result, typed: it shares its Pod with the module, so a result of another shape
// is refused by name (as berthd refuses one), never thrown on.
Result<RunResult> RunnerResult(const std::string& result_json) {
  auto result = ParseRunResult(result_json);
  if (!result)
    return MakeError(ErrorKind::kInvalidArgument,
                     "the runner's result is refused: " + result.error().ToString());
  return result;
}

json BinaryOf(const RunResult& result) {
  return {{"name", result.binary_name}, {"version", result.binary_version}};
}

// One pass: the object as read, the status being written.
class Pass {
 public:
  Pass(kube::KubeApi& api, RunnerPki& pki, const ReconcilerOptions& options, const json& raw,
       launch::TerraformObject object)
      : api_(api),
        events_(api, options.instance),
        pki_(pki),
        options_(options),
        raw_(raw),
        object_(std::move(object)),
        old_status_(raw.value("status", json::object())),
        deleting_(raw.value("metadata", json::object()).contains("deletionTimestamp")) {}

  Result<ReconcileOutcome> Run();

 private:
  // The stack's pass: source, variables, then plan or apply.
  Result<ReconcileOutcome> Stack();
  // A deleted object: destroyed first under deletionPolicy: destroy, then let go.
  Result<ReconcileOutcome> Delete();
  // Lets the deleted object go (removes the finalizer), saying why in an Event.
  Result<ReconcileOutcome> Release(bool warning, std::string_view reason,
                                   const std::string& message);
  // How long since the object was deleted.
  std::chrono::seconds SinceDeleted() const;
  Result<ReconcileOutcome> Fail(const Error& error, std::string_view reason);
  Result<void> WriteStatus(json status);
  json Condition(const std::string& type, bool ok, std::string_view reason,
                 const std::string& message) const;
  Result<FetchedGit> Fetch(const fs::path& folder);
  // The source as the module archive the runner is sent, and its revision.
  Result<std::string> Source(const fs::path& scratch);
  Result<json> Variables();
  // A Secret of the object's namespace (ref names it), every key decoded, and one key of it;
  // errors name the field.
  Result<std::map<std::string, std::string>> SecretData(const std::string& field, const json& ref);
  Result<std::string> SecretKey(const std::string& field, const json& ref, const std::string& key);
  // cliConfigSecretRef, fileMappings and a custom backend, as files in scratch for the runner
  // to place.
  Result<void> PlacedFiles(const fs::path& scratch);
  std::vector<std::string> RunArgs(const std::string& op) const;
  Result<rpc::RunnerReply> InPod(const std::string& op, rpc::RunnerFiles files,
                                 const std::string& revision, std::vector<std::string> extra = {});
  Result<ReconcileOutcome> Plan(const fs::path& scratch, const std::string& revision);
  Result<ReconcileOutcome> Apply(const fs::path& scratch, const std::string& revision,
                                 const json& plan);
  Result<std::string> WriteOutputs(const std::string& outputs_json);
  bool Destroying() const { return deleting_ || object_.spec.value("destroy", false); }
  const char* Operation() const { return Destroying() ? "destroy" : "apply"; }
  // Come back on the object's interval (after a success) or retryInterval (after a failure).
  ReconcileOutcome Again() const {
    return {.requeue_after = SpecDuration(object_.spec, "interval", std::chrono::seconds(0))};
  }
  ReconcileOutcome Retry() const {
    return {.requeue_after = SpecDuration(object_.spec, "retryInterval", kDefaultRetryInterval)};
  }

  kube::KubeApi& api_;
  EventRecorder events_;
  RunnerPki& pki_;
  const ReconcilerOptions& options_;
  const json& raw_;
  const launch::TerraformObject object_;
  const json old_status_;
  const bool deleting_;
  rpc::RunnerFiles files_;
  // What this pass ended with: the stack is destroyed, or the pass failed (and why).
  bool destroyed_ = false;
  std::string failure_;
};

json Pass::Condition(const std::string& type, bool ok, std::string_view reason,
                     const std::string& message) const {
  const std::string status = ok ? "True" : "False";
  std::string since = FormatRfc3339(std::chrono::system_clock::now());
  for (const json& old : old_status_.value("conditions", json::array())) {
    if (old.value("type", "") == type && old.value("status", "") == status)
      since = old.value("lastTransitionTime", since);  // it changes only when status does
  }
  return {{"type", type},
          {"status", status},
          {"reason", reason},
          {"message", message},
          {"observedGeneration", object_.generation},
          {"lastTransitionTime", since}};
}

Result<void> Pass::WriteStatus(json status) {
  status["observedGeneration"] = object_.generation;
  // Each step the status records is an Event too, named by the Ready condition's reason.
  for (const json& c : status.value("conditions", json::array())) {
    if (c.value("type", "") != "Ready") continue;
    const std::string reason = c.value("reason", "");
    const bool fine = c.value("status", "") == "True" || reason == "PlanPending" ||
                      reason == "DependencyNotReady";
    events_.Record(object_, !fine, reason, "Reconcile", c.value("message", ""));
  }
  // A merge patch replaces the list whole: the conditions not written now are kept as they were.
  if (status.contains("conditions")) {
    json merged = status["conditions"];
    for (const json& old : old_status_.value("conditions", json::array())) {
      const bool rewritten = std::any_of(merged.begin(), merged.end(), [&](const json& c) {
        return c.value("type", "") == old.value("type", "");
      });
      if (!rewritten) merged.push_back(old);
    }
    status["conditions"] = std::move(merged);
  }
  auto written = api_.Patch(kTerraforms, object_.ns, object_.name, kube::PatchType::kMerge,
                            {{"status", status}}, options_.field_manager, "status");
  if (!written) return written.error();
  return {};
}

Result<ReconcileOutcome> Pass::Fail(const Error& error, std::string_view reason) {
  failure_ = error.message;
  auto written = WriteStatus({{"conditions", {Condition("Ready", false, reason, error.message)}}});
  (void)written;  // the error itself is what the caller needs
  return error;
}

Result<std::string> Pass::Source(const fs::path& scratch) {
  files_.source = scratch / "source.tar.gz";
  if (object_.spec.contains("sourceRef")) {
    auto artifact = ReadFluxArtifact(api_, object_);
    if (!artifact) return artifact.error();
    auto http = net::MakeCurlHttpClient();
    auto downloaded = DownloadArtifact(*http, *artifact, files_.source, options_.max_source_bytes);
    if (!downloaded) return downloaded.error();
    return artifact->revision.empty() ? artifact->digest : artifact->revision;
  }
  auto fetched = Fetch(scratch / "source");
  if (!fetched) return fetched.error();
  auto bundle = sys::PackModule(scratch / "source");
  if (!bundle) return bundle.error();
  if (auto ok = sys::WriteFileAtomic(files_.source, *bundle); !ok) return ok.error();
  return fetched->revision;
}

Result<FetchedGit> Pass::Fetch(const fs::path& folder) {
  const json git = object_.spec.value("git", json::object());
  const json ref = git.value("ref", json::object());
  GitCredentials credentials;
  if (git.contains("secretRef")) {
    auto data = SecretData("spec.git.secretRef", git["secretRef"]);
    if (!data) return data.error();
    for (auto [key, field] : {std::pair{"username", &credentials.username},
                              std::pair{"password", &credentials.password},
                              std::pair{"identity", &credentials.identity},
                              std::pair{"identity.pub", &credentials.identity_pub},
                              std::pair{"known_hosts", &credentials.known_hosts}}) {
      if (auto found = data->find(key); found != data->end()) *field = std::move(found->second);
    }
  }
  return FetchGit(git.value("url", ""),
                  {.branch = ref.value("branch", ""),
                   .tag = ref.value("tag", ""),
                   .commit = ref.value("commit", "")},
                  credentials, folder, options_.max_source_bytes);
}

// varsFrom in order (each key a variable, its value a string; varsKeys picks keys), then
// spec.vars, each overriding what came before.
Result<json> Pass::Variables() {
  json vars = json::object();
  for (const json& from : object_.spec.value("varsFrom", json::array())) {
    const std::string kind = from.value("kind", "");
    const std::string name = from.value("name", "");
    auto source = api_.Get(kind == "Secret" ? kube::kSecrets : kube::kConfigMaps, object_.ns, name);
    if (!source) {
      if (source.error().kind == ErrorKind::kNotFound && from.value("optional", false)) continue;
      return MakeError(source.error().kind,
                       "spec.varsFrom: " + kind + " " + name + ": " + source.error().message);
    }
    const json data = source->value("data", json::object());
    json picked = json::object();
    for (const auto& [key, value] : data.items()) {
      if (kind != "Secret") {
        picked[key] = value;
        continue;
      }
      auto decoded = Base64Decode(value.get<std::string>());
      if (!decoded)
        return MakeError(ErrorKind::kInvalidArgument,
                         "spec.varsFrom: " + name + "." + key + " is not base64");
      picked[key] = *decoded;
    }
    const json keys = from.value("varsKeys", json::array());
    if (keys.empty()) {
      vars.update(picked);
      continue;
    }
    for (const json& key : keys) {
      const std::string wanted = key.get<std::string>();
      if (!picked.contains(wanted))
        return MakeError(ErrorKind::kNotFound,
                         "spec.varsFrom: " + kind + " " + name + " has no key " + wanted);
      vars[wanted] = picked[wanted];
    }
  }
  for (const json& var : object_.spec.value("vars", json::array()))
    vars[var.value("name", "")] = var.value("value", json());
  return Ok(std::move(vars));
}

Result<std::map<std::string, std::string>> Pass::SecretData(const std::string& field,
                                                            const json& ref) {
  const std::string name = ref.value("name", "");
  auto secret = api_.Get(kube::kSecrets, object_.ns, name);
  if (!secret)
    return MakeError(secret.error().kind,
                     field + ": Secret " + name + ": " + secret.error().message);
  std::map<std::string, std::string> data;
  const json encoded = secret->value("data", json::object());
  for (const auto& [key, value] : encoded.items()) {
    auto decoded = Base64Decode(value.is_string() ? value.get<std::string>() : std::string());
    if (!value.is_string() || !decoded)
      return MakeError(ErrorKind::kInvalidArgument,
                       field + ": Secret " + name + "." + key + " is not base64");
    data.emplace(key, std::move(*decoded));
  }
  return data;
}

Result<std::string> Pass::SecretKey(const std::string& field, const json& ref,
                                    const std::string& key) {
  auto data = SecretData(field, ref);
  if (!data) return data.error();
  auto found = data->find(key);
  if (found == data->end())
    return MakeError(ErrorKind::kNotFound,
                     field + ": Secret " + ref.value("name", "") + " has no key " + key);
  return std::move(found->second);
}

Result<void> Pass::PlacedFiles(const fs::path& scratch) {
  if (const std::string backend = CustomBackend(object_.spec); !backend.empty()) {
    // An override file: it replaces a backend the module declares (TF merges it last).
    const fs::path file = scratch / "backend_override.tf";
    if (auto ok = sys::WriteFileAtomic(file, backend); !ok) return ok.error();
    files_.mapped.emplace_back("workspace:berth_backend_override.tf", file);
  } else {
    const StateEndpoint& state = options_.state;
    if (state.url.empty() || state.tokens == nullptr)
      return MakeError(ErrorKind::kFailedPrecondition,
                       "berth-controller has no state service (--state-url) and the object "
                       "names no backend of its own (spec.backendConfig.customConfiguration)");
    files_.state_token = scratch / "state.token";
    const std::string token = state.tokens->Mint(
        object_.ns, object_.name, std::chrono::system_clock::now() + state.token_life);
    if (auto ok = sys::WriteFileAtomic(files_.state_token, token); !ok) return ok.error();
  }
  if (object_.spec.contains("cliConfigSecretRef")) {
    // The key tofu-controller's users already have: terraform.tfrc.
    auto config =
        SecretKey("spec.cliConfigSecretRef", object_.spec["cliConfigSecretRef"], "terraform.tfrc");
    if (!config) return config.error();
    files_.cli_config = scratch / "cli.tfrc";
    if (auto ok = sys::WriteFileAtomic(files_.cli_config, *config); !ok) return ok.error();
  }
  const json mappings = object_.spec.value("fileMappings", json::array());
  for (size_t i = 0; i < mappings.size(); ++i) {
    const json& mapping = mappings[i];
    const json ref = mapping.value("secretRef", json::object());
    auto content = SecretKey("spec.fileMappings[" + std::to_string(i) + "].secretRef", ref,
                             ref.value("key", ""));
    if (!content) return content.error();
    const fs::path file = scratch / ("mapped-" + std::to_string(i));
    if (auto ok = sys::WriteFileAtomic(file, *content); !ok) return ok.error();
    files_.mapped.emplace_back(mapping.value("location", "") + ":" + mapping.value("path", ""),
                               file);
  }
  return {};
}

std::vector<std::string> Pass::RunArgs(const std::string& op) const {
  std::vector<std::string> args = {"--op=" + op, "--namespace=" + object_.ns,
                                   "--name=" + object_.name, "--binary=" + object_.runner.binary};
  if (CustomBackend(object_.spec).empty()) {
    // berth's default backend: the controller's state service, which keeps the state in a
    // Secret beside the object; the Pod itself holds no rights to any Secret.
    const std::string address = options_.state.url + StatePath(object_.ns, object_.name);
    args.insert(
        args.end(),
        {"--state-backend=http", "--backend-config=address=" + address,
         "--backend-config=lock_address=" + address, "--backend-config=unlock_address=" + address,
         "--backend-config=client_ca_certificate_pem=" + options_.state.ca_pem});
  }
  const std::string path = object_.spec.value("path", "");
  if (!path.empty()) args.push_back("--path=" + path);
  return args;
}

Result<rpc::RunnerReply> Pass::InPod(const std::string& op, rpc::RunnerFiles files,
                                     const std::string& revision, std::vector<std::string> extra) {
  std::vector<std::string> args = RunArgs(op);
  args.insert(args.end(), extra.begin(), extra.end());
  RunnerSessionOptions session{.settings = &options_.settings,
                               .creation_timeout = options_.runner_creation_timeout,
                               .field_manager = options_.field_manager};
  return RunInRunnerPod(api_, pki_, session, object_,
                        {.args = std::move(args), .files = std::move(files), .revision = revision},
                        {});
}

// The plan's id: what a person writes into spec.approvePlan to apply it.
std::string PlanId(const std::string& hash) {
  std::string hex = hash.substr(hash.find(':') + 1);
  return "plan-" + hex.substr(0, 16);
}

Result<ReconcileOutcome> Pass::Plan(const fs::path& scratch, const std::string& revision) {
  // Approval is the guard here: a plan that deletes or replaces is shown, not refused.
  std::vector<std::string> extra = {"--allow-destroy"};
  if (Destroying()) extra.emplace_back("--plan-destroy");
  auto reply = InPod("plan", files_, revision, extra);
  if (!reply)
    return Fail(reply.error(), reply.error().reason.empty() ? "RunFailed" : reply.error().reason);
  auto result = RunnerResult(reply->result_json);
  if (!result) return Fail(result.error(), "RunFailed");
  json binary = BinaryOf(*result);
  if (const auto& error = result->error) {
    const std::string kind(RunErrorKindName(error->kind));
    failure_ = "plan failed: " + error->message;
    auto written =
        WriteStatus({{"lastAttemptedRevision", revision},
                     {"binary", binary},
                     {"conditions",
                      {Condition("Plan", false, kind, RunErrorText(*error)),
                       Condition("Ready", false, kind, "plan failed: " + error->message)}}});
    if (!written) return written.error();
    return Retry();
  }
  const PlanSummary plan = result->plan.value_or(PlanSummary{});
  if (!plan.has_changes) {
    auto written = WriteStatus(
        {{"lastAttemptedRevision", revision},
         {"binary", binary},
         {"plan", nullptr},
         {"conditions",
          {Condition("Plan", true, "NoChanges", "no changes at " + revision),
           Condition("Ready", true, "NoChanges",
                     (Destroying() ? "nothing to destroy at " : "up to date at ") + revision)}}});
    if (!written) return written.error();
    destroyed_ = Destroying();
    return Again();
  }
  const std::string& hash = plan.hash;
  const std::string id = PlanId(hash);
  if (auto saved = SavePlan(api_, object_, id, reply->plan, options_.field_manager); !saved)
    return Fail(saved.error(), "PlanNotSaved");
  // Drift: the world moved, not the object. Same revision and same spec as the last apply
  // (whose Apply condition carries the generation it applied).
  int64_t applied_generation = -1;
  for (const json& c : old_status_.value("conditions", json::array()))
    if (c.value("type", "") == "Apply" && c.value("status", "") == "True")
      applied_generation = c.value("observedGeneration", int64_t{-1});
  const bool drifted = !Destroying() && old_status_.value("lastAppliedRevision", "") == revision &&
                       applied_generation == object_.generation;
  json summary = {{"id", id},
                  {"hash", hash},
                  {"sha256", crypto::Sha256Hex(reply->plan)},
                  {"operation", Operation()},
                  {"add", plan.add},
                  {"change", plan.change},
                  {"destroy", plan.destroy},
                  {"replace", plan.replace}};
  if (object_.spec.value("approvePlan", "") == "auto") return Apply(scratch, revision, summary);
  const std::string counts = std::to_string(plan.add) + " to add, " + std::to_string(plan.change) +
                             " to change, " + std::to_string(plan.destroy) + " to destroy";
  const std::string reason = drifted ? "DriftDetected" : "PlanPending";
  auto written = WriteStatus(
      {{"lastAttemptedRevision", revision},
       {"binary", binary},
       {"plan", summary},
       {"conditions",
        {Condition("Plan", true, reason, id + ": " + counts),
         Condition("Ready", false, reason,
                   "plan " + id + " (" + counts + ") waits: set spec.approvePlan to " + id)}}});
  if (!written) return written.error();
  return Again();
}

Result<std::string> Pass::WriteOutputs(const std::string& outputs_json) {
  const json target = object_.spec.value("writeOutputsToSecret", json());
  if (!target.is_object()) return std::string();
  auto data = OutputsSecretData(outputs_json, target.value("outputs", json::array()));
  if (!data) return data.error();
  std::string name = target.value("name", "");
  json metadata = {{"name", name},
                   {"namespace", object_.ns},
                   {"labels", target.value("labels", json::object())},
                   {"annotations", target.value("annotations", json::object())},
                   {"ownerReferences",
                    {{{"apiVersion", launch::kTerraformApiVersion},
                      {"kind", launch::kTerraformKind},
                      {"name", object_.name},
                      {"uid", object_.uid},
                      {"controller", true}}}}};
  metadata["labels"]["app.kubernetes.io/managed-by"] = "berth-controller";
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"type", "Opaque"},
                 {"metadata", metadata},
                 {"data", *data}};
  auto created = api_.Create(kube::kSecrets, object_.ns, secret);
  if (!created && created.error().kind == ErrorKind::kAlreadyExists) {
    // Replace the data whole: an output that went away leaves the Secret too.
    auto replaced = api_.Patch(kube::kSecrets, object_.ns, name, kube::PatchType::kMerge,
                               {{"metadata", metadata}, {"data", nullptr}}, options_.field_manager);
    if (!replaced) return replaced.error();
    auto patched = api_.Patch(kube::kSecrets, object_.ns, name, kube::PatchType::kMerge,
                              {{"data", *data}}, options_.field_manager);
    if (!patched) return patched.error();
  } else if (!created) {
    return created.error();
  }
  return name;
}

Result<ReconcileOutcome> Pass::Apply(const fs::path& scratch, const std::string& revision,
                                     const json& plan) {
  const std::string id = plan.value("id", "");
  const json kept_digest = plan.value("sha256", json());
  auto bytes =
      LoadPlan(api_, object_, id, kept_digest.is_string() ? kept_digest.get<std::string>() : "");
  if (!bytes) return Fail(bytes.error(), "PlanNotFound");
  const fs::path plan_file = scratch / "approved.tfplan";
  if (auto ok = sys::WriteFileAtomic(plan_file, *bytes); !ok) return ok.error();
  rpc::RunnerFiles files = files_;
  files.approved_plan = plan_file;
  auto reply = InPod(Destroying() ? "destroy" : "apply", files, revision,
                     {"--approved-plan=" + plan.value("hash", ""), "--allow-destroy"});
  if (!reply)
    return Fail(reply.error(), reply.error().reason.empty() ? "RunFailed" : reply.error().reason);
  auto result = RunnerResult(reply->result_json);
  if (!result || result->error) {
    const std::string kind =
        result ? std::string(RunErrorKindName(result->error->kind)) : "RunFailed";
    const std::string message = result ? result->error->message : result.error().message;
    failure_ = "apply of " + id + " failed: " + message;
    auto written = WriteStatus(
        {{"conditions",
          {Condition("Apply", false, kind, message),
           Condition("Ready", false, kind, "apply of " + id + " failed: " + message)}}});
    if (!written) return written.error();
    return Retry();
  }
  const char* done = Destroying() ? "Destroyed" : "Applied";
  json status = {{"lastAttemptedRevision", revision},
                 {"lastAppliedRevision", revision},
                 {"binary", BinaryOf(*result)},
                 {"plan", nullptr},
                 {"conditions",
                  {Condition("Apply", true, done, id + (Destroying() ? " destroyed" : " applied")),
                   Condition("Ready", true, done, std::string(done) + " at " + revision)}}};
  if (Destroying()) {
    // What was made is gone, and so are its outputs.
    const json target = object_.spec.value("writeOutputsToSecret", json());
    if (target.is_object()) {
      auto deleted = api_.Delete(kube::kSecrets, object_.ns, target.value("name", ""), {});
      if (!deleted && deleted.error().kind != ErrorKind::kNotFound)
        return Fail(deleted.error(), "OutputsNotWritten");
    }
    status["outputsSecretName"] = nullptr;
  } else if (reply->outputs) {
    auto secret = WriteOutputs(*reply->outputs);
    if (!secret) return Fail(secret.error(), "OutputsNotWritten");
    if (!secret->empty()) status["outputsSecretName"] = *secret;
  }
  if (auto written = WriteStatus(status); !written) return written.error();
  destroyed_ = Destroying();
  return Again();
}

Result<ReconcileOutcome> Pass::Run() {
  if (deleting_) return Delete();
  const bool destroy_on_delete = object_.spec.value("deletionPolicy", "retain") == "destroy";
  if (auto set = SetDestroyFinalizer(api_, raw_, destroy_on_delete, options_.field_manager); !set) {
    // The object changed since it was read: its newer self comes straight back.
    if (set.error().kind == ErrorKind::kConflict)
      return ReconcileOutcome{.requeue_after = std::chrono::seconds(1)};
    return set.error();
  }
  return Stack();
}

std::chrono::seconds Pass::SinceDeleted() const {
  const std::string stamp =
      raw_.value("metadata", json::object()).value("deletionTimestamp", std::string());
  const auto millis = ParseRfc3339Millis(stamp);
  if (!millis) return std::chrono::seconds(0);
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  return std::chrono::duration_cast<std::chrono::seconds>(now - std::chrono::milliseconds(*millis));
}

Result<ReconcileOutcome> Pass::Release(bool warning, std::string_view reason,
                                       const std::string& message) {
  events_.Record(object_, warning, reason, "Delete", message);
  if (auto removed = SetDestroyFinalizer(api_, raw_, false, options_.field_manager); !removed) {
    if (removed.error().kind == ErrorKind::kNotFound) return ReconcileOutcome{};
    return removed.error();
  }
  return ReconcileOutcome{};
}

Result<ReconcileOutcome> Pass::Delete() {
  if (!HasDestroyFinalizer(raw_)) return ReconcileOutcome{};  // nothing of berth's holds it
  if (object_.spec.value("deletionPolicy", "retain") != "destroy")
    return Release(false, "Retained",
                   "deletionPolicy is retain: the infrastructure and its state are kept");
  auto terminating = NamespaceTerminating(api_, object_.ns);
  if (!terminating) return terminating.error();
  if (*terminating) {
    return Release(true, "DestroySkipped",
                   "namespace " + object_.ns +
                       " is being deleted: no runner can start in it and its Secrets, state "
                       "included, go with it; the infrastructure is kept");
  }
  auto outcome = Stack();
  if (destroyed_) return Release(false, "Destroyed", "destroyed; the object goes");
  if (failure_.empty()) return outcome;  // a destroy plan waiting for its approval
  const std::chrono::seconds waited = SinceDeleted();
  if (waited >= options_.destroy_timeout) {
    return Release(true, "DestroyAbandoned",
                   "no destroy within " + std::to_string(options_.destroy_timeout.count()) +
                       "s of the deletion (" + failure_ +
                       "): the infrastructure and its state Secret are kept");
  }
  // Come back by the deadline at the latest, even if the object's retryInterval is longer.
  const std::chrono::seconds left = options_.destroy_timeout - waited;
  return ReconcileOutcome{.requeue_after = std::min(left, Retry().requeue_after)};
}

Result<ReconcileOutcome> Pass::Stack() {
  // A deletion destroys without waiting: what it depends on may be going too.
  if (!deleting_) {
    auto wait = CheckDependencies(api_, object_);
    if (!wait) return Fail(wait.error(), "DependencyNotReady");
    if (!wait->reason.empty()) {
      auto written =
          WriteStatus({{"conditions", {Condition("Ready", false, wait->reason, wait->message)}}});
      if (!written) return written.error();
      // The controller wakes it when a dependency gets Ready; this is the fallback.
      return Retry();
    }
  }
  auto scratch = sys::TempDir::Create("berth-controller");
  if (!scratch) return scratch.error();
  auto revision = Source(scratch->Path());
  if (!revision) return Fail(revision.error(), "SourceUnavailable");
  auto vars = Variables();
  if (!vars) return Fail(vars.error(), "VarsUnavailable");
  if (auto ok = PlacedFiles(scratch->Path()); !ok) return Fail(ok.error(), "SecretUnavailable");
  files_.config = scratch->Path() / "vars.tfvars.json";
  if (auto ok = sys::WriteFileAtomic(files_.config, vars->dump()); !ok) return ok.error();

  // An approved plan of the revision it was made from is applied; anything else plans.
  const json pending = old_status_.value("plan", json());
  const std::string approved = object_.spec.value("approvePlan", "");
  // A plan made for the other operation (the object was deleted, or spec.destroy changed) is
  // never applied: it plans again.
  const bool same_operation = pending.is_object() && pending.value("operation", "") == Operation();
  if (same_operation && !approved.empty() && approved == pending.value("id", "") &&
      old_status_.value("lastAttemptedRevision", "") == *revision)
    return Apply(scratch->Path(), *revision, pending);
  if (same_operation && old_status_.value("lastAttemptedRevision", "") == *revision &&
      old_status_.value("observedGeneration", int64_t{0}) == object_.generation)
    return Again();  // still waiting for its approval: nothing new to plan
  const bool drift_off =
      object_.spec.value("driftDetection", json::object()).value("disabled", false);
  if (drift_off && !deleting_ && old_status_.value("lastAppliedRevision", "") == *revision &&
      old_status_.value("observedGeneration", int64_t{0}) == object_.generation)
    return Again();
  return Plan(scratch->Path(), *revision);
}

}  // namespace

Result<ReconcileOutcome> Reconciler::Reconcile(const json& raw) {
  auto object = launch::TerraformObject::Parse(raw);
  if (!object) return object.error();
  Pass pass(api_, pki_, options_, raw, std::move(*object));
  return pass.Run();
}

}  // namespace berth::controller
