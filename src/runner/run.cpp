// The operations of `runner run`, step by step. Every path ends in a filled-in RunResult; the
// first failure decides the error kind.
#include "runner/run.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "core/bounded_json.h"
#include "core/inflate.h"
#include "core/masker.h"
#include "core/time_format.h"
#include "crypto/digest.h"
#include "runner/mapped_files.h"
#include "runner/module_archive.h"
#include "runner/shared_providers.h"
#include "runner/state_encryption.h"
#include "runner/step_runner.h"
#include "runner/work_dir.h"
#include "sys/fd.h"
#include "sys/files.h"
#include "sys/subprocess.h"
#include "tf/apply_events.h"
#include "tf/binary.h"
#include "tf/encrypted_payload.h"
#include "tf/plan.h"
#include "tf/plan_changes.h"
#include "tf/plan_file.h"

namespace berth::runner {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Now() { return FormatRfc3339(std::chrono::system_clock::now()); }

// How a command that takes the state lock treats it: waits for it up to --lock-timeout, or
// takes none when the run holds it already (--lock=false).
std::string LockFlag(const RunOptions& o) {
  if (!o.lock) return "-lock=false";
  return "-lock-timeout=" +
         std::to_string(std::chrono::duration_cast<std::chrono::seconds>(o.lock_timeout).count()) +
         "s";
}

// "a, b, c and 4 more": destructive addresses, bounded.
std::string Addresses(const std::vector<std::string>& addresses) {
  constexpr size_t kShown = 10;
  std::string out;
  for (size_t i = 0; i < addresses.size() && i < kShown; ++i) {
    if (i > 0) out += ", ";
    out += addresses[i];
  }
  if (addresses.size() > kShown)
    out += " and " + std::to_string(addresses.size() - kShown) + " more";
  return out;
}

// "ID: x, Who: y, Operation: z" from the Lock Info block TF prints when a lock is held, so
// that the result names the lock a force-unlock would need.
std::string LockInfo(const std::string& output) {
  std::string info;
  for (std::string_view field : {"ID:", "Who:", "Operation:", "Created:"}) {
    size_t at = output.find(std::string("  ") + std::string(field));
    if (at == std::string::npos) continue;
    size_t start = output.find_first_not_of(' ', at + 2 + field.size());
    size_t end = output.find('\n', start);
    if (start == std::string::npos) continue;
    if (!info.empty()) info += ", ";
    info +=
        std::string(field.substr(0, field.size() - 1)) + " " + output.substr(start, end - start);
  }
  return info;
}

std::string WithoutPrefix(const std::string& hash) {
  return hash.starts_with("sha256:") ? hash.substr(7) : hash;
}

class Run {
 public:
  Run(const RunOptions& options, const RunContext& context) : o_(options), context_(context) {
    result_.op = o_.op;
    result_.image = o_.image;
    result_.inputs_hash = o_.inputs_hash;
    result_.started_at = Now();
  }

  RunResult Execute() {
    context_.events->Record("RunStarted",
                            "op " + o_.op + (o_.image.empty() ? "" : " in " + o_.image), false);
    Perform();
    LearnVersionIfUnknown();
    result_.finished_at = Now();
    if (result_.error) result_.error->tail = masker_.Mask(result_.error->tail);
    if (result_.error) {
      context_.events->Record("RunFinished",
                              "failed: " + std::string(RunErrorKindName(result_.error->kind)) +
                                  " in step " + result_.error->step + ": " + result_.error->message,
                              true);
    } else {
      context_.events->Record("RunFinished", "succeeded", false);
    }
    return std::move(result_);
  }

 private:
  // Records the error unless an earlier one is already recorded. Always returns false.
  bool Fail(RunErrorKind kind, std::string step, const std::string& message, int exit_code = 0,
            std::string tail = {}) {
    if (!result_.error) {
      result_.error =
          RunError{kind, std::move(step), masker_.Mask(message), exit_code, std::move(tail)};
    }
    return false;
  }

  // Runs a TF command as a step; on failure records the error with kind (or what the output
  // shows: a held lock, a stop, a timeout).
  bool Step(const std::string& name, std::vector<std::string> args, RunErrorKind kind,
            StepOutcome* out = nullptr, bool capture = false) {
    args.insert(args.begin(), binary_.path.string());
    context_.events->Record("StepStarted", "step " + name, false);
    StepOutcome outcome = steps_->Run(name, args, capture);
    result_.steps.push_back({name, outcome.exit_code, outcome.seconds});
    bool ok = outcome.exit_code == 0;
    context_.events->Record(ok ? "StepSucceeded" : "StepFailed",
                            "step " + name + " exited with " + std::to_string(outcome.exit_code),
                            !ok);
    if (!ok) {
      if (outcome.timed_out) {
        kind = RunErrorKind::kTimeout;
      } else if (outcome.cancelled) {
        kind = RunErrorKind::kCancelled;
      } else if (outcome.tail.find("Error acquiring the state lock") != std::string::npos) {
        kind = RunErrorKind::kStateLocked;
      } else if (outcome.tail.find("Saved plan is stale") != std::string::npos) {
        kind = RunErrorKind::kPlanStale;
      }
      std::string message = binary_.name + " " + args[1] + " failed with exit code " +
                            std::to_string(outcome.exit_code);
      if (kind == RunErrorKind::kStateLocked) {
        if (std::string lock = LockInfo(outcome.tail); !lock.empty()) {
          message = "the state is locked (" + lock + ")";
        }
      }
      Fail(kind, name, message, outcome.exit_code, outcome.tail);
    }
    if (out) *out = std::move(outcome);
    return ok;
  }

  std::vector<std::string> VarFileArgs() const {
    if (o_.config.empty()) return {};
    return {"-var-file=" + fs::absolute(o_.config).string()};
  }

  bool Perform() {
    if (o_.op == "destroy" && !o_.allow_destroy) {
      return Fail(RunErrorKind::kDestructivePlan, "guard", "destroy needs --allow-destroy");
    }
    if (!o_.inputs_hash.empty() && !CheckInputsHash()) return false;
    auto dir = PrepareWorkDir(o_);
    if (!dir) return Fail(RunErrorKind::kSourceUnavailable, "source", dir.error().ToString());
    dir_ = *dir;
    if (auto secrets = LoadSecrets(o_, dir_, context_.environment, masker_); !secrets) {
      return Fail(RunErrorKind::kInvalidFlags, "inputs", secrets.error().ToString());
    }
    // Held until this returns: the files mapped into home go when TF is done.
    auto mapped =
        PlaceMappedFiles(o_.file_mappings, HomeFolder(context_.environment, dir_), dir_.workdir);
    if (!mapped) return Fail(RunErrorKind::kInvalidFlags, "inputs", mapped.error().ToString());
    std::vector<std::string> not_passed;  // said once the log is there
    auto env = TfEnvironment(context_.environment, o_, dir_,
                             [&not_passed](const std::string& why) { not_passed.push_back(why); });
    if (o_.state_backend == "http") {
      auto token = sys::ReadFile(o_.state_token_file.empty()
                                     ? Lookup(context_.environment, "BERTH_TOKEN_FILE")
                                     : o_.state_token_file);
      if (!token || token->empty())
        return Fail(RunErrorKind::kInvalidFlags, "inputs",
                    "--state-backend=http needs a token: --state-token-file, or the file "
                    "BERTH_TOKEN_FILE names");
      masker_.Add(*token);
      env.push_back("TF_HTTP_USERNAME=run");
      env.push_back("TF_HTTP_PASSWORD=" + *token);
    }
    if (!o_.id_token_file.empty()) {
      auto token = sys::ReadFile(o_.id_token_file);
      if (!token) return Fail(RunErrorKind::kInvalidFlags, "inputs", token.error().ToString());
      masker_.Add(*token);
      env.insert(env.end(), o_.id_token_env.begin(), o_.id_token_env.end());
    }
    if (!o_.state_key_file.empty()) {
      auto key = ReadStateKey(o_.state_key_file);
      if (!key) return Fail(RunErrorKind::kInvalidFlags, "inputs", key.error().ToString());
      masker_.Add(*key);
      if (auto bytes = Base64Decode(*key)) state_key_ = std::move(*bytes);
      auto self = sys::SelfExecutable();
      if (!self) return Fail(RunErrorKind::kInternal, "inputs", self.error().ToString());
      env.push_back("TF_ENCRYPTION=" +
                    EncryptionConfig(*self, std::filesystem::absolute(o_.state_key_file)));
    }
    auto binary = tf::ChooseBinary(o_.binary, o_.bin, Lookup(env, "PATH"));
    if (!binary) return Fail(RunErrorKind::kInit, "binary", binary.error().ToString());
    binary_ = *binary;
    result_.binary_name = binary_.name;
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (o_.timeout) deadline = std::chrono::steady_clock::now() + *o_.timeout;
    steps_.emplace(masker_, env, dir_.workdir.string(), *context_.log, context_.signal_fd,
                   o_.stop_timeout, deadline);
    for (const std::string& why : not_passed) steps_->Log("inputs", "not passed to TF: " + why);
    if (std::string level = Lookup(env, "TF_LOG"); !level.empty())
      steps_->Log("inputs", "TF_LOG=" + level +
                                ": TF's own log follows in this one; it may show values berth "
                                "cannot know are secret (a provider's API answers)");
    if (!o_.plan_key_file.empty()) {
      auto key = sys::ReadFile(o_.plan_key_file);
      if (!key)
        return Fail(RunErrorKind::kInvalidFlags, "inputs",
                    "--plan-key-file: " + key.error().ToString());
      plan_key_ = *key;
    }

    // tofu writes its version into every plan file, which the runner reads anyway: a run that
    // plans starts no `version -json` (a whole TF start-up). Other runs, and Terraform, run it
    // beside init: it touches nothing init does.
    env_ = env;
    const bool version_from_plan = binary_.name == "tofu" && Plans();
    if (!version_from_plan) StartVersion(env);
    bool initialised = dir_.initialised ? ContinueInit() : Init();
    if (!version_from_plan && !FinishVersion()) return false;
    if (!initialised) return false;
    if (!o_.force_unlock.empty() &&
        !Step("force-unlock", {"force-unlock", "-force", "-no-color", o_.force_unlock},
              RunErrorKind::kForceUnlock)) {
      return false;
    }
    if (o_.op == "plan") return OpPlan();
    if (o_.op == "apply") return OpApply(false);
    if (o_.op == "destroy") return OpApply(true);
    if (o_.op == "refresh") return OpRefresh();
    if (o_.op == "drift") return OpDrift();
    if (o_.op == "restore") return OpRestore();
    if (o_.op == "output") return ReadOutputs();
    if (o_.op == "validate")
      return Step("validate", {"validate", "-no-color"}, RunErrorKind::kValidate);
    return Fail(RunErrorKind::kInvalidFlags, "flags", "--op: unknown operation " + o_.op);
  }

  bool Plans() const {
    return o_.op == "plan" || o_.op == "apply" || o_.op == "destroy" || o_.op == "drift";
  }

  // A run that read no plan file (it failed first, or show -json read it) asks TF itself.
  void LearnVersionIfUnknown() {
    if (!result_.binary_version.empty() || !steps_) return;
    StartVersion(env_);
    FinishVersion();
  }

  bool CheckInputsHash() {
    if (o_.config.empty()) {
      return Fail(RunErrorKind::kInputsMismatch, "inputs", "--inputs-hash given without --config");
    }
    auto config = sys::ReadFile(o_.config);
    if (!config) return Fail(RunErrorKind::kInputsMismatch, "inputs", config.error().ToString());
    std::string actual = "sha256:" + crypto::Sha256Hex(*config);
    if (actual != o_.inputs_hash) {
      return Fail(RunErrorKind::kInputsMismatch, "inputs",
                  "--config hashes to " + actual + ", not the --inputs-hash " + o_.inputs_hash);
    }
    return true;
  }

  void StartVersion(const std::vector<std::string>& env) {
    sys::SpawnOptions options;
    options.argv = {binary_.path.string(), "version", "-json"};
    options.env = env;
    options.working_dir = dir_.workdir.string();
    options.stdout_path = (dir_.root / ".berth-version.out").string();
    options.output_path = "/dev/null";
    version_started_ = std::chrono::steady_clock::now();
    auto child = sys::Subprocess::Spawn(options);
    if (child) version_.emplace(std::move(*child));
  }

  bool FinishVersion() {
    int exit_code = version_ ? version_->Wait() : 127;
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - version_started_).count();
    result_.steps.insert(result_.steps.begin(), {"version", exit_code, seconds});
    auto out_path = dir_.root / ".berth-version.out";
    auto out = sys::ReadFile(out_path);
    fs::remove(out_path);
    auto doc = json::parse(out ? *out : "", nullptr, false);
    if (exit_code != 0 || !doc.is_object() || !doc.contains("terraform_version") ||
        !doc["terraform_version"].is_string()) {
      return Fail(RunErrorKind::kInit, "version",
                  binary_.path.string() + " version -json failed with exit code " +
                      std::to_string(exit_code),
                  exit_code);
    }
    result_.binary_version = doc["terraform_version"].get<std::string>();
    return true;
  }

  bool Init() {
    if (!LendProviders()) return false;
    std::vector<std::string> args{"init", "-input=false", "-no-color", LockFlag(o_)};
    for (const auto& value : o_.backend_config) {
      // KEY=VALUE passes as is; anything else names a file, which TF reads itself.
      args.push_back("-backend-config=" + value);
    }
    return Step("init", args, RunErrorKind::kInit);
  }

  // The packages of the runner's shared cache that the lock file pins, linked into the run's
  // plugin cache for init to use (runner/shared_providers.h).
  bool LendProviders() {
    const std::string shared = Lookup(context_.environment, "BERTH_SHARED_PROVIDERS");
    if (shared.empty()) return true;
    const std::string cache = Lookup(env_, "TF_PLUGIN_CACHE_DIR");
    if (cache.empty())
      return Fail(RunErrorKind::kInvalidFlags, "environment",
                  "BERTH_SHARED_PROVIDERS needs TF_PLUGIN_CACHE_DIR, the run's own plugin cache "
                  "its packages are linked into");
    std::string lent;
    for (const std::string& provider :
         LendSharedProviders(shared, dir_.workdir / ".terraform.lock.hcl", cache))
      lent += (lent.empty() ? "" : ", ") + provider;
    if (!lent.empty()) steps_->Log("init", "from the runner's shared provider cache: " + lent);
    return true;
  }

  // The plan run's init is where TF runs (--prepared): tofu refuses a provider that is not
  // the one the approved plan's lock file names, so nothing in it needs trusting.
  bool ContinueInit() {
    steps_->Log("init", "not run: the plan run's providers and modules are used again");
    return true;
  }

  fs::path PlanFile() const {
    return o_.plan_file.empty() ? dir_.root / ".berth-plan.tfplan" : fs::absolute(o_.plan_file);
  }

  // Reads the plan at path and fills result_.plan: from tofu's plan file itself where this
  // berth reads its format (no TF process, no provider schema loaded), else with `show -json`.
  std::optional<tf::PlanAnalysis> Analyse(const fs::path& path) {
    std::optional<tf::PlanAnalysis> analysis =
        binary_.name == "tofu" ? ReadPlanFile(path) : std::nullopt;
    // --binary=auto that found Terraform: the list is asked for, and cannot be made.
    if (binary_.name != "tofu" && !o_.changes_file.empty())
      steps_->Log("plan", "no change list: only tofu's plan file is read for one");
    if (!analysis && !result_.error) analysis = Show(path);
    if (!analysis) return std::nullopt;
    if (result_.binary_version.empty()) result_.binary_version = analysis->tf_version;
    result_.plan = analysis->summary;
    std::string summary = "plan " + analysis->summary.hash + ": " +
                          std::to_string(analysis->summary.add) + " to add, " +
                          std::to_string(analysis->summary.change) + " to change, " +
                          std::to_string(analysis->summary.destroy) + " to destroy, " +
                          std::to_string(analysis->summary.replace) + " to replace";
    steps_->Log("plan", summary);
    context_.events->Record("PlanSummary", summary, false);
    return analysis;
  }

  // Nullopt with no error recorded when the file is not in a format read here (an encrypted
  // plan, another format version).
  std::optional<tf::PlanAnalysis> ReadPlanFile(const fs::path& path) {
    auto bytes = sys::ReadFile(path);
    if (!bytes) {
      Fail(RunErrorKind::kPlan, "plan", "the plan file: " + bytes.error().ToString());
      return std::nullopt;
    }
    auto analysis = PlanFileAnalysis(std::move(*bytes));
    if (analysis) return std::move(*analysis);
    if (analysis.error().kind != ErrorKind::kFailedPrecondition)
      Fail(RunErrorKind::kPlan, "plan", "the plan file: " + analysis.error().ToString());
    return std::nullopt;
  }

  Result<tf::PlanAnalysis> PlanFileAnalysis(std::string bytes) {
    if (!state_key_.empty()) {
      // tofu encrypts the plans of an environment with a key: the runner holds it too.
      auto opened = tf::OpenAesGcmPayload(bytes, state_key_);
      if (opened) {
        bytes = std::move(*opened);
      } else if (opened.error().kind != ErrorKind::kFailedPrecondition) {
        return opened.error();
      }
    }
    // Read once for both: the analysis, and the change list when one is asked for.
    auto contents = tf::ReadPlanFileContents(bytes);
    if (!contents) return contents.error();
    if (!o_.changes_file.empty()) WriteChanges(*contents);
    return tf::AnalysePlanContents(*contents, plan_key_);
  }

  // The change list for people (the dashboard's), masked as the log is. A list that cannot be
  // written costs the run nothing: the plan, its hash and its guard stand without it.
  void WriteChanges(const tf::PlanFileContents& contents) {
    auto changes = tf::DescribePlanChanges(
        contents, [this](std::string_view text) { return masker_.Mask(text); });
    auto written = changes ? sys::WriteFileAtomicUnsynced(o_.changes_file, changes->dump())
                           : Result<void>(changes.error());
    if (!written) steps_->Log("plan", "no change list: " + written.error().message);
  }

  std::optional<tf::PlanAnalysis> Show(const fs::path& path) {
    StepOutcome out;
    if (!Step("show", {"show", "-json", "-no-color", path.string()}, RunErrorKind::kPlan, &out,
              true)) {
      return std::nullopt;
    }
    auto analysis = tf::AnalysePlan(out.stdout_data, plan_key_);
    if (!analysis) {
      Fail(RunErrorKind::kPlan, "show", analysis.error().ToString());
      return std::nullopt;
    }
    return std::move(*analysis);
  }

  // plan validates the configuration before it plans, so no separate validate runs (another
  // TF process, another load of every provider's schema). Only when plan fails does validate
  // say whose fault it was: the configuration's (Validate), or the plan's (Plan).
  bool MakePlan(const std::vector<std::string>& extra, const fs::path& path) {
    std::vector<std::string> args{"plan", "-input=false", "-no-color", LockFlag(o_),
                                  "-out=" + path.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto vars = VarFileArgs();
    args.insert(args.end(), vars.begin(), vars.end());
    if (Step("plan", args, RunErrorKind::kPlan)) return true;
    if (!result_.error || result_.error->kind != RunErrorKind::kPlan) return false;
    RunError planned = std::move(*result_.error);
    result_.error.reset();
    if (Step("validate", {"validate", "-no-color"}, RunErrorKind::kValidate))
      result_.error = std::move(planned);
    return false;
  }

  bool Guard(const tf::PlanAnalysis& analysis) {
    if (analysis.destructive.empty() || o_.allow_destroy) return true;
    return Fail(RunErrorKind::kDestructivePlan, "guard",
                "the plan deletes or replaces " + Addresses(analysis.destructive) +
                    "; rerun with --allow-destroy to permit it");
  }

  bool Approved(const tf::PlanAnalysis& analysis) {
    if (o_.approved_plan.empty()) return true;
    if (WithoutPrefix(analysis.summary.hash) == WithoutPrefix(o_.approved_plan)) return true;
    return Fail(RunErrorKind::kPlanNotApproved, "approval",
                "the plan's effect " + analysis.summary.hash + " is not the approved " +
                    o_.approved_plan + "; nothing was applied");
  }

  bool OpPlan() {
    fs::path path = PlanFile();
    if (!MakePlan(
            o_.plan_destroy ? std::vector<std::string>{"-destroy"} : std::vector<std::string>{},
            path))
      return false;
    auto analysis = Analyse(path);
    return analysis && Guard(*analysis);
  }

  // An approved plan file whose bytes are the ones approved was read, guarded and hashed when
  // it was planned: it is applied as it is.
  // Nullopt when no digest was given; false when the file is not those bytes.
  std::optional<bool> ApprovedBytes(const fs::path& path) {
    if (o_.approved_plan_sha256.empty()) return std::nullopt;
    auto bytes = sys::ReadFile(path);
    if (bytes && crypto::Sha256Hex(*bytes) == o_.approved_plan_sha256) {
      // The file names the tofu that wrote it (else the run asks tofu at its end).
      if (binary_.name == "tofu") {
        if (auto read = PlanFileAnalysis(std::move(*bytes)))
          result_.binary_version = read->tf_version;
      }
      return true;
    }
    Fail(RunErrorKind::kPlanNotApproved, "approval",
         "the plan file " + path.string() + " is not the approved one (SHA-256 " +
             o_.approved_plan_sha256 + "); nothing was applied");
    return false;
  }

  bool OpApply(bool destroy) {
    fs::path path = PlanFile();
    std::error_code ec;
    // A saved plan (an approved one) is applied as it is, a destroy plan too.
    bool saved = !o_.plan_file.empty() && fs::exists(path, ec);
    if (!saved &&
        !MakePlan(destroy ? std::vector<std::string>{"-destroy"} : std::vector<std::string>{},
                  path)) {
      return false;
    }
    std::optional<bool> approved_bytes = saved ? ApprovedBytes(path) : std::nullopt;
    if (approved_bytes == false) return false;
    if (!approved_bytes) {
      auto analysis = Analyse(path);
      if (!analysis || !Approved(*analysis) || !Guard(*analysis)) return false;
    }
    std::vector<std::string> args{"apply", "-input=false", "-no-color", "-auto-approve",
                                  LockFlag(o_)};
    AddEventsFile(args);
    args.push_back(path.string());
    bool applied = Step("apply", args, RunErrorKind::kApply);
    if (!applied) {
      RescueState();
      return false;
    }
    return ReadOutputs();
  }

  bool OpRefresh() {
    std::vector<std::string> args{"apply",        "-refresh-only", "-auto-approve",
                                  "-input=false", "-no-color",     LockFlag(o_)};
    auto vars = VarFileArgs();
    args.insert(args.end(), vars.begin(), vars.end());
    AddEventsFile(args);
    if (!Step("refresh", args, RunErrorKind::kApply)) {
      RescueState();
      return false;
    }
    return ReadOutputs();
  }

  bool OpDrift() {
    fs::path path = PlanFile();
    if (!MakePlan({"-refresh-only"}, path)) return false;
    auto analysis = Analyse(path);
    if (!analysis) return false;
    result_.drift = DriftReport{!analysis->drifted.empty(), analysis->drifted};
    steps_->Log("drift", analysis->drifted.empty() ? "no drift"
                                                   : "drifted: " + Addresses(analysis->drifted));
    return true;
  }

  bool OpRestore() {
    if (o_.restore_from.empty())
      return Fail(RunErrorKind::kRestore, "restore", "--restore-from is required");
    auto raw = sys::ReadFile(o_.restore_from);
    if (!raw) return Fail(RunErrorKind::kRestore, "restore", raw.error().ToString());
    std::string state = *raw;
    if (state.size() >= 2 && static_cast<unsigned char>(state[0]) == 0x1f &&
        static_cast<unsigned char>(state[1]) == 0x8b) {
      auto unzipped = Inflate(state, Compression::kGzip, 1ull << 30);
      if (!unzipped) return Fail(RunErrorKind::kRestore, "restore", unzipped.error().ToString());
      state = std::move(*unzipped);
    }
    auto doc = json::parse(state, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("version") ||
        !doc.contains("serial")) {
      return Fail(RunErrorKind::kRestore, "restore",
                  "--restore-from: not a state file (a JSON object with version and serial)");
    }
    fs::path file = dir_.root / ".berth-restore.tfstate";
    if (auto w = sys::WriteFileAtomicUnsynced(file, state); !w)
      return Fail(RunErrorKind::kRestore, "restore", w.error().ToString());
    bool pushed =
        Step("restore", {"state", "push", LockFlag(o_), file.string()}, RunErrorKind::kRestore);
    fs::remove(file);
    return pushed && Step("state-list", {"state", "list"}, RunErrorKind::kRestore);
  }

  fs::path EventsFile() const { return dir_.root / ".berth-events.json"; }

  // Where tofu can, an apply also writes its events to a file: they carry its outputs.
  void AddEventsFile(std::vector<std::string>& args) const {
    if (tf::WritesJsonInto(binary_, result_.binary_version))
      args.push_back("-json-into=" + EventsFile().string());
  }

  // From the apply's events when none is sensitive (they leave sensitive values out), else
  // with `output -json`.
  bool ReadOutputs() {
    std::error_code ec;
    if (fs::exists(EventsFile(), ec)) {
      auto events = sys::ReadFile(EventsFile());
      fs::remove(EventsFile(), ec);
      auto outputs = events ? tf::PlainOutputsFromEvents(*events) : std::nullopt;
      if (outputs) return KeepOutputs(*outputs, outputs->dump());
    }
    StepOutcome out;
    if (!Step("output", {"output", "-json", "-no-color"}, RunErrorKind::kOutput, &out, true))
      return false;
    auto doc = ParseBoundedJson(out.stdout_data, kTfDocument);
    if (!doc || !doc->is_object())
      return Fail(RunErrorKind::kOutput, "output", "output -json is not a JSON object");
    return KeepOutputs(*doc, out.stdout_data);
  }

  // outputs is `output -json`'s document; text is what --outputs gets.
  bool KeepOutputs(const json& outputs, const std::string& text) {
    std::vector<OutputInfo> infos;
    for (const auto& [name, value] : outputs.items()) {
      infos.push_back({name, value.is_object() && value.value("sensitive", json()) == true});
    }
    result_.outputs = std::move(infos);
    if (!o_.outputs.empty()) {
      if (auto w = sys::WriteFileAtomicUnsynced(o_.outputs, text); !w) {
        return Fail(RunErrorKind::kOutput, "output", "--outputs: " + w.error().ToString());
      }
    }
    return true;
  }

  // TF leaves errored.tfstate when it could not persist state: push it again, and if that
  // fails keep it where the launcher collects it and say where.
  void RescueState() {
    fs::path errored = dir_.workdir / "errored.tfstate";
    std::error_code ec;
    if (!fs::exists(errored, ec)) return;
    steps_->Log("rescue", "state was not persisted; pushing errored.tfstate again");
    StepOutcome out;
    std::vector<std::string> args{binary_.path.string(), "state", "push", LockFlag(o_),
                                  errored.string()};
    out = steps_->Run("rescue", args);
    result_.steps.push_back({"rescue", out.exit_code, out.seconds});
    if (out.exit_code == 0) {
      steps_->Log("rescue", "state pushed");
      return;
    }
    if (context_.keep_state) context_.keep_state(errored);
    result_.error.reset();
    Fail(RunErrorKind::kStatePersist, "rescue",
         "state could not be persisted; it is kept at " + errored.string(), out.exit_code,
         out.tail);
  }

  const RunOptions& o_;
  const RunContext& context_;
  RunResult result_;
  Masker masker_;
  WorkDir dir_;
  tf::Binary binary_;
  std::string plan_key_;
  std::string state_key_;         // the raw AES key of --state-key-file
  std::vector<std::string> env_;  // TF's environment
  std::optional<StepRunner> steps_;
  std::optional<sys::Subprocess> version_;
  std::chrono::steady_clock::time_point version_started_;
};

}  // namespace

RunResult ExecuteRun(const RunOptions& options, const RunContext& context) {
  return Run(options, context).Execute();
}

bool WriteResult(const std::string& path, const RunResult& result, size_t max_bytes) {
  std::string doc = SerializeRunResult(result, max_bytes);
  sys::Fd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  // Not synced: it is read once the runner has exited (a berthd crash does not lose it, and no
  // run outlives a power loss), and a run with a gateway has posted it already.
  return fd && sys::WriteAll(fd.Get(), doc);
}

}  // namespace berth::runner
