#include "runner/gateway_run.h"

#include <cstdio>

#include "crypto/random.h"
#include "runner/id_token_setup.h"
#include "runner/sealed_outputs.h"
#include "runner/work_dir.h"
#include "sys/files.h"

namespace berth::runner {
namespace {

namespace fs = std::filesystem;

constexpr std::chrono::milliseconds kLogFlushEvery{500};
// How often a runner kept for its apply asks whether it came: a short request each time, to
// whichever replica answers, rather than a request held open on a server thread for long.
constexpr std::chrono::seconds kAskForApplyEvery{1};

// The run's token from --token-file or the file BERTH_TOKEN_FILE names; empty when neither
// gives one.
std::string ReadRunToken(const RunOptions& options, const std::vector<std::string>& environment) {
  std::string file =
      options.token_file.empty() ? Lookup(environment, "BERTH_TOKEN_FILE") : options.token_file;
  auto token = file.empty() ? Result<std::string>(std::string()) : sys::ReadFile(file);
  std::string text = token ? *token : std::string();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

fs::path StagingFolder(const std::string& run_id) {
  std::error_code ec;
  return fs::temp_directory_path(ec) / ("berth-gateway-" + run_id + "-" + crypto::RandomToken(6));
}

}  // namespace

GatewayRun::GatewayRun(const RunOptions& options, const std::vector<std::string>& environment)
    : token_(ReadRunToken(options, environment)),
      staging_(StagingFolder(options.run_id)),
      client_(GatewayOptions{.url = options.gateway, .run_id = options.run_id, .token = token_},
              net::MakeOpenSslHttpClient()) {}

GatewayRun::~GatewayRun() {
  shipper_.reset();
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

Result<void> GatewayRun::Stage(const std::string& what, const fs::path& file) {
  auto body = client_.Fetch(what);
  if (!body) return body.error();
  return sys::WriteFileAtomicUnsynced(file, *body);
}

Result<void> GatewayRun::Prepare(RunOptions& options, LogSink& log) {
  if (token_.empty())
    return MakeError(ErrorKind::kInvalidArgument,
                     "--gateway needs the run's token: --token-file, or the file BERTH_TOKEN_FILE "
                     "names");
  shipper_ = std::make_unique<LogShipper>(client_, kLogFlushEvery, options.log_recipient);
  log.Tee([shipper = shipper_.get()](std::string_view line) { shipper->Line(line); });
  std::error_code ec;
  fs::create_directories(staging_, ec);
  if (ec)
    return MakeError(ErrorKind::kUnavailable, "cannot stage the run's inputs: " + ec.message());
  options.config = (staging_ / "inputs.tfvars.json").string();
  if (auto staged = Stage("inputs", options.config); !staged) return staged.error();
  if (options.module.empty()) {
    options.module = (staging_ / "module.tar.gz").string();
    if (auto staged = Stage("bundle", options.module); !staged) return staged.error();
  }
  if (options.plan_file.empty()) options.plan_file = (staging_ / "run.tfplan").string();
  if (options.changes_file.empty() && options.op == "plan")
    options.changes_file = (staging_ / "changes.json").string();
  if (!options.approved_plan.empty()) {
    if (auto staged = Stage("plan", options.plan_file); !staged) return staged.error();
  }
  if (options.outputs.empty()) options.outputs = (staging_ / "outputs.json").string();
  if (options.state_encryption && options.state_key_file.empty()) {
    options.state_key_file = (staging_ / "state.key").string();
    if (auto staged = Stage("state-key", options.state_key_file); !staged) return staged.error();
  }
  if (options.plan_key_file.empty()) {
    options.plan_key_file = (staging_ / "plan.key").string();
    if (auto staged = Stage("plan-key", options.plan_key_file); !staged) return staged.error();
  }
  // An ID token for the module's providers, when the environment asks for one (404: it does
  // not, or berthd is older than ID tokens).
  auto answer = client_.Fetch("id-token");
  if (!answer) return answer.error().kind == ErrorKind::kNotFound ? Result<void>() : answer.error();
  auto placed = PlaceIdToken(*answer, staging_, options.run_id);
  if (!placed) return placed.error();
  options.id_token_file = placed->file.string();
  options.id_token_env = std::move(placed->env);
  return {};
}

void GatewayRun::Upload(const std::string& name, const fs::path& file,
                        const std::string& recipient) {
  std::error_code ec;
  if (file.empty() || !fs::exists(file, ec)) return;
  auto content = sys::ReadFile(file);
  if (content && !recipient.empty()) content = SealSensitiveOutputs(*content, recipient);
  auto put = content ? client_.PutArtifact(name, *content) : Result<void>(content.error());
  if (!put)
    std::fprintf(stderr, "runner: cannot upload the %s (%s): %s\n", name.c_str(), file.c_str(),
                 put.error().message.c_str());
}

void GatewayRun::KeepState(const fs::path& errored) { Upload("state", errored); }

void GatewayRun::Deliver(const RunOptions& options, const RunResult& result) {
  if (shipper_) {
    if (options.op == "plan" && !result.error) {
      Upload("plan", options.plan_file);
      // A log only its owner reads keeps its values from berthd: so does the change list.
      if (options.log_recipient.empty()) Upload("changes", options.changes_file);
    }
    Upload("outputs", options.outputs, options.log_recipient);
    if (!shipper_->Close()) std::fprintf(stderr, "runner: part of the log could not be shipped\n");
  }
  constexpr size_t kWholeResult = size_t{16} << 20;
  if (auto posted = client_.PostResult(SerializeRunResult(result, kWholeResult)); !posted)
    std::fprintf(stderr, "runner: cannot post the result: %s\n", posted.error().message.c_str());
}

std::optional<ApplyHandover> GatewayRun::AwaitApply(Duration wait, int signal_fd, LogSink& log) {
  return runner::AwaitApply(client_, wait, kAskForApplyEvery, signal_fd, log);
}

}  // namespace berth::runner
