#include "runner/run_service.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>

#include <array>
#include <fstream>
#include <map>
#include <system_error>

#include "runner/cli.h"
#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::runner {
namespace {

namespace fs = std::filesystem;

// Each file a run can be sent, where serve keeps it and the run flag that names it.
struct ServedFile {
  v1::FileKind kind;
  std::string_view name;
  std::string_view flag;
};
constexpr std::array<ServedFile, 8> kServedFiles = {{
    {v1::FILE_KIND_SOURCE, "source.tar.gz", "module"},
    {v1::FILE_KIND_CONFIG, "config.tfvars.json", "config"},
    {v1::FILE_KIND_APPROVED_PLAN, "plan", "plan-file"},
    {v1::FILE_KIND_STATE_KEY, "state.key", "state-key-file"},
    {v1::FILE_KIND_PLAN_KEY, "plan.key", "plan-key-file"},
    {v1::FILE_KIND_CLI_CONFIG, "cli.tfrc", "cli-config"},
    {v1::FILE_KIND_STATE_TOKEN, "state.token", "state-token-file"},
    // Each mapped file is mapped-<n>, named by a --file-mapping of its own.
    {v1::FILE_KIND_MAPPED, "mapped-", "file-mapping"},
}};
// As many mapped files as the Terraform schema allows.
constexpr size_t kMaxMappedFiles = 100;
constexpr std::string_view kPlanFile = "plan";
constexpr std::string_view kOutputsFile = "outputs.json";
constexpr std::string_view kResultFile = "result.json";
// The result travels in a gRPC message, not a termination log: a bigger default budget.
constexpr std::string_view kDefaultResultBudget = "--result-max-bytes=65536";
constexpr size_t kChunkBytes = size_t{1} << 20;

grpc::Status Refuse(grpc::StatusCode code, const std::string& message) { return {code, message}; }

// "--name=value", "--name", "-n" -> the flag's name; "" for a value or a positional.
std::string_view FlagName(std::string_view arg) {
  if (!arg.starts_with('-') || arg == "--") return {};
  arg.remove_prefix(arg.starts_with("--") ? 2 : 1);
  return arg.substr(0, arg.find('='));
}

bool FromClient(const grpc::ServerContext& context, std::string_view expected_name) {
  auto auth = context.auth_context();
  if (!auth) return false;
  auto names = auth->FindPropertyValues("x509_common_name");
  return names.size() == 1 && std::string_view(names[0].data(), names[0].size()) == expected_name;
}

// A private folder for one run's files, removed with everything in it when the run is done.
class RunFolder {
 public:
  static Result<RunFolder> Create(const fs::path& spool) {
    std::error_code error;
    fs::create_directories(spool, error);
    fs::permissions(spool, fs::perms::owner_all, error);
    std::string path = (spool / "run-XXXXXX").string();
    if (::mkdtemp(path.data()) == nullptr)
      return MakeError(ErrorKind::kInternal, "cannot make a folder under " + spool.string());
    return RunFolder(path);
  }
  RunFolder(RunFolder&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  RunFolder& operator=(RunFolder&&) = delete;
  ~RunFolder() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  const fs::path& Path() const { return path_; }

 private:
  explicit RunFolder(fs::path path) : path_(std::move(path)) {}
  fs::path path_;
};

const ServedFile* FindServedFile(v1::FileKind kind) {
  for (const ServedFile& file : kServedFiles)
    if (file.kind == kind) return &file;
  return nullptr;
}

// One file being received: where it goes, how much of it came, the flag that names it.
struct Receiving {
  std::ofstream out;
  size_t size = 0;
  std::string flag;  // empty: none (--plan-file is always given)
};

// Reads FileChunks into folder until End. Returns the flags that point the run at them.
grpc::Status ReceiveFiles(grpc::ServerReaderWriter<v1::RunEvent, v1::RunRequest>& stream,
                          const fs::path& folder, size_t max_bytes,
                          std::vector<std::string>& flags) {
  // By kind, and for mapped files by kind and mapping.
  std::map<std::pair<v1::FileKind, std::string>, Receiving> files;
  size_t mapped_files = 0;
  v1::RunRequest request;
  while (stream.Read(&request)) {
    if (request.has_end()) {
      for (auto& [key, file] : files) {
        file.out.close();
        if (!file.out) return Refuse(grpc::StatusCode::INTERNAL, "cannot write a file");
        if (!file.flag.empty()) flags.push_back(file.flag);
      }
      return grpc::Status::OK;
    }
    if (!request.has_file()) {
      return Refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    "a run takes one start, then file chunks, then end");
    }
    const ServedFile* served = FindServedFile(request.file().kind());
    if (served == nullptr) {
      return Refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    "file.kind: must be source, config, approved plan, state key, plan key, "
                    "CLI config or mapped");
    }
    const bool mapped = served->kind == v1::FILE_KIND_MAPPED;
    const std::string& mapping = request.file().mapping();
    if (mapped != !mapping.empty())
      return Refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    "file.mapping: set on mapped files, and only on them");
    auto [entry, added] = files.try_emplace({served->kind, mapping});
    Receiving& file = entry->second;
    if (added) {
      std::string name(served->name);
      if (mapped) {
        if (auto target = ParseMappingTarget(mapping); !target)
          return Refuse(grpc::StatusCode::INVALID_ARGUMENT,
                        "file.mapping " + mapping + ": " + target.error().message);
        if (++mapped_files > kMaxMappedFiles)
          return Refuse(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "more than " + std::to_string(kMaxMappedFiles) + " mapped files");
        name += std::to_string(mapped_files);
      }
      const fs::path path = folder / name;
      file.out.open(path, std::ios::binary | std::ios::trunc);  // in a 0700 folder
      if (served->kind != v1::FILE_KIND_APPROVED_PLAN)
        file.flag = "--" + std::string(served->flag) + "=" +
                    (mapped ? mapping + "=" : std::string()) + path.string();
    }
    file.size += request.file().data().size();
    if (file.size > max_bytes) {
      return Refuse(grpc::StatusCode::RESOURCE_EXHAUSTED,
                    "file " + std::string(served->name) + " is over --max-file-size (" +
                        std::to_string(max_bytes) + " bytes)");
    }
    file.out.write(request.file().data().data(),
                   static_cast<std::streamsize>(request.file().data().size()));
  }
  return Refuse(grpc::StatusCode::CANCELLED, "the call ended before end");
}

// Sends a file as one artifact in chunks; nothing when it does not exist.
bool SendArtifact(grpc::ServerReaderWriter<v1::RunEvent, v1::RunRequest>& stream,
                  v1::ArtifactKind kind, const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return true;
  std::string chunk(kChunkBytes, '\0');
  v1::RunEvent event;
  do {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    auto* artifact = event.mutable_artifact();
    artifact->set_kind(kind);
    artifact->set_data(chunk.data(), static_cast<size_t>(in.gcount()));
    artifact->set_last(!in);
    if (!stream.Write(event)) return false;
  } while (in);
  return true;
}

}  // namespace

const std::vector<std::string_view>& ServeOwnedRunFlags() {
  static const std::vector<std::string_view> kFlags = [] {
    std::vector<std::string_view> owned = {"outputs",       "result",           "gateway",
                                           "run-id",        "token-file",       "berthd-relay",
                                           "log-recipient", "state-encryption", "restore-from"};
    for (const ServedFile& file : kServedFiles) owned.push_back(file.flag);
    return owned;
  }();
  return kFlags;
}

Result<std::string> CheckServedRunArgs(const std::vector<std::string>& args) {
  const auto& owned = ServeOwnedRunFlags();
  for (const std::string& arg : args) {
    std::string_view name = FlagName(arg);
    if (std::find(owned.begin(), owned.end(), name) != owned.end()) {
      return MakeError(ErrorKind::kInvalidArgument,
                       "start.args: --" + std::string(name) +
                           " is set by runner serve (send files as file chunks; the gateway's "
                           "flags have no place here)");
    }
  }
  std::vector<std::string> line = {"run"};
  line.insert(line.end(), args.begin(), args.end());
  CommandLine parsed = ParseCommandLine(line);
  if (parsed.error)
    return MakeError(ErrorKind::kInvalidArgument, "start.args: " + parsed.error->message);
  return std::get<RunCommand>(parsed.command).options.op;
}

RunService::RunService(ServeOptions options, fs::path runner_path)
    : options_(std::move(options)), runner_path_(std::move(runner_path)) {}

void RunService::Stop() {
  stopping_ = true;
  MutexLock lock(mutex_);
  if (running_pid_ > 0) ::kill(running_pid_, SIGTERM);
}

grpc::Status RunService::Run(grpc::ServerContext* context,
                             grpc::ServerReaderWriter<v1::RunEvent, v1::RunRequest>* stream) {
  if (!FromClient(*context, options_.client_name)) {
    return Refuse(grpc::StatusCode::PERMISSION_DENIED,
                  "only " + options_.client_name + " may start runs here");
  }
  if (stopping_) return Refuse(grpc::StatusCode::UNAVAILABLE, "runner serve is stopping");
  bool idle = false;
  if (!busy_.compare_exchange_strong(idle, true)) {
    return Refuse(grpc::StatusCode::ABORTED, "a run is in progress here: one run at a time");
  }
  struct Release {
    std::atomic<bool>& busy;
    ~Release() { busy = false; }
  } release{busy_};

  v1::RunRequest request;
  if (!stream->Read(&request) || !request.has_start()) {
    return Refuse(grpc::StatusCode::INVALID_ARGUMENT, "a run's first message is its start");
  }
  std::vector<std::string> args(request.start().args().begin(), request.start().args().end());
  auto op = CheckServedRunArgs(args);
  if (!op) return Refuse(grpc::StatusCode::INVALID_ARGUMENT, op.error().message);
  auto folder = RunFolder::Create(options_.spool);
  if (!folder) return Refuse(grpc::StatusCode::INTERNAL, folder.error().message);

  std::vector<std::string> argv = {runner_path_.string(), "run"};
  argv.insert(argv.end(), args.begin(), args.end());
  if (grpc::Status received = ReceiveFiles(*stream, folder->Path(), options_.max_file_bytes, argv);
      !received.ok())
    return received;
  const fs::path& dir = folder->Path();
  argv.push_back("--plan-file=" + (dir / kPlanFile).string());
  argv.push_back("--outputs=" + (dir / kOutputsFile).string());
  argv.push_back("--result=" + (dir / kResultFile).string());
  if (std::none_of(args.begin(), args.end(),
                   [](const std::string& a) { return FlagName(a) == "result-max-bytes"; }))
    argv.emplace_back(kDefaultResultBudget);

  auto child = sys::Subprocess::Spawn({.argv = argv, .pipe_output = true});
  if (!child) return Refuse(grpc::StatusCode::INTERNAL, child.error().message);
  {
    MutexLock lock(mutex_);
    running_pid_ = child->Pid();
  }
  bool interrupted = false;
  bool client_gone = false;
  std::string buffer(size_t{64} * 1024, '\0');
  v1::RunEvent event;
  for (;;) {
    if (!interrupted && (stopping_ || context->IsCancelled())) {
      ::kill(child->Pid(), SIGTERM);  // the runner stops TF at a safe point
      interrupted = true;
    }
    pollfd ready{.fd = child->OutputFd(), .events = POLLIN, .revents = 0};
    if (::poll(&ready, 1, 200) <= 0) continue;
    ssize_t n = ::read(child->OutputFd(), buffer.data(), buffer.size());
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;
    if (n < 0 || client_gone) continue;
    event.set_log(buffer.data(), static_cast<size_t>(n));
    client_gone = !stream->Write(event);
  }
  {
    MutexLock lock(mutex_);
    running_pid_ = -1;
  }
  const int exit_code = child->Wait();
  if (client_gone) return Refuse(grpc::StatusCode::CANCELLED, "the client went away");
  if (*op == "plan" && !SendArtifact(*stream, v1::ARTIFACT_KIND_PLAN, dir / kPlanFile))
    return Refuse(grpc::StatusCode::CANCELLED, "the client went away");
  if (!SendArtifact(*stream, v1::ARTIFACT_KIND_OUTPUTS, dir / kOutputsFile))
    return Refuse(grpc::StatusCode::CANCELLED, "the client went away");
  auto result = sys::ReadFile(dir / kResultFile);
  if (!result) {
    return Refuse(grpc::StatusCode::INTERNAL, "the run ended (exit " + std::to_string(exit_code) +
                                                  ") without a result document");
  }
  event.set_result(*result);
  stream->Write(event);
  return grpc::Status::OK;
}

}  // namespace berth::runner
