#include "rpc/runner_client.h"

#include <grpcpp/grpcpp.h>

#include <fstream>

#include "rpc/runner_service.grpc.pb.h"

namespace berth::rpc {
namespace {

namespace v1 = berth::runner::v1;

constexpr size_t kChunkBytes = size_t{1} << 20;

ErrorKind KindOf(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
      return ErrorKind::kInvalidArgument;
    case grpc::StatusCode::PERMISSION_DENIED:
      return ErrorKind::kPermissionDenied;
    case grpc::StatusCode::UNAUTHENTICATED:
      return ErrorKind::kUnauthenticated;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return ErrorKind::kResourceExhausted;
    case grpc::StatusCode::ABORTED:
      return ErrorKind::kConflict;
    case grpc::StatusCode::UNAVAILABLE:
      return ErrorKind::kUnavailable;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return ErrorKind::kDeadlineExceeded;
    case grpc::StatusCode::CANCELLED:
      return ErrorKind::kCancelled;
    default:
      return ErrorKind::kInternal;
  }
}

// Streams a file in chunks; false when the call is over (the runner refused or went away).
Result<bool> SendFile(grpc::ClientReaderWriter<v1::RunRequest, v1::RunEvent>& stream,
                      v1::FileKind kind, const std::filesystem::path& path,
                      const std::string& mapping = "") {
  std::ifstream in(path, std::ios::binary);
  if (!in) return MakeError(ErrorKind::kNotFound, "cannot read " + path.string());
  std::string chunk(kChunkBytes, '\0');
  v1::RunRequest request;
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    request.mutable_file()->set_kind(kind);
    request.mutable_file()->set_mapping(mapping);
    request.mutable_file()->set_data(chunk.data(), static_cast<size_t>(in.gcount()));
    if (!stream.Write(request)) return false;
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<RunnerClient>> RunnerClient::Create(const std::string& address,
                                                           const RunnerTls& tls) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls.ca_pem;
  options.pem_cert_chain = tls.cert_pem;
  options.pem_private_key = tls.key_pem;
  grpc::ChannelArguments arguments;
  arguments.SetSslTargetNameOverride(tls.server_name);
  // The runner's plan and outputs come in chunks well under this; no whole-file cap.
  arguments.SetMaxReceiveMessageSize(4 * 1024 * 1024);
  auto channel =
      grpc::CreateCustomChannel("ipv4:" + address, grpc::SslCredentials(options), arguments);
  if (!channel) return MakeError(ErrorKind::kInvalidArgument, "cannot dial " + address);
  return std::unique_ptr<RunnerClient>(new RunnerClient(std::move(channel)));
}

RunnerClient::RunnerClient(std::shared_ptr<grpc::Channel> channel) : channel_(std::move(channel)) {}

RunnerClient::~RunnerClient() = default;

void RunnerClient::Cancel() {
  MutexLock lock(mutex_);
  if (active_ != nullptr) active_->TryCancel();
}

Result<RunnerReply> RunnerClient::Run(const std::vector<std::string>& args,
                                      const RunnerFiles& files,
                                      const std::function<void(std::string_view)>& on_log) {
  auto stub = v1::Runner::NewStub(channel_);
  grpc::ClientContext context;
  {
    MutexLock lock(mutex_);
    active_ = &context;
  }
  struct Forget {
    RunnerClient& client;
    ~Forget() {
      MutexLock lock(client.mutex_);
      client.active_ = nullptr;
    }
  } forget{*this};

  auto stream = stub->Run(&context);
  v1::RunRequest start;
  for (const std::string& arg : args) start.mutable_start()->add_args(arg);
  bool open = stream->Write(start);
  const std::pair<v1::FileKind, const std::filesystem::path*> sent[] = {
      {v1::FILE_KIND_SOURCE, &files.source},
      {v1::FILE_KIND_CONFIG, &files.config},
      {v1::FILE_KIND_APPROVED_PLAN, &files.approved_plan},
      {v1::FILE_KIND_STATE_KEY, &files.state_key},
      {v1::FILE_KIND_PLAN_KEY, &files.plan_key},
      {v1::FILE_KIND_CLI_CONFIG, &files.cli_config},
      {v1::FILE_KIND_STATE_TOKEN, &files.state_token}};
  auto send = [&](v1::FileKind kind, const std::filesystem::path& path,
                  const std::string& mapping) -> Result<void> {
    if (!open || path.empty()) return {};
    auto written = SendFile(*stream, kind, path, mapping);
    if (!written) {
      context.TryCancel();
      return written.error();
    }
    open = *written;
    return {};
  };
  for (const auto& [kind, path] : sent)
    if (auto ok = send(kind, *path, ""); !ok) return ok.error();
  for (const auto& [mapping, path] : files.mapped)
    if (auto ok = send(v1::FILE_KIND_MAPPED, path, mapping); !ok) return ok.error();
  if (open) {
    v1::RunRequest end;
    end.mutable_end();
    open = stream->Write(end);
  }
  if (open) stream->WritesDone();

  RunnerReply reply;
  std::string outputs;
  bool have_outputs = false;
  v1::RunEvent event;
  while (stream->Read(&event)) {
    if (event.has_artifact()) {
      const auto& artifact = event.artifact();
      if (artifact.kind() == v1::ARTIFACT_KIND_PLAN) reply.plan += artifact.data();
      if (artifact.kind() == v1::ARTIFACT_KIND_OUTPUTS) {
        outputs += artifact.data();
        have_outputs = true;
      }
    } else if (event.has_result()) {
      reply.result_json = event.result();
    } else if (on_log) {
      on_log(event.log());
    }
  }
  grpc::Status status = stream->Finish();
  if (!status.ok())
    return MakeError(KindOf(status.error_code()), "runner: " + status.error_message());
  if (reply.result_json.empty())
    return MakeError(ErrorKind::kInternal, "runner: the run ended without a result");
  if (have_outputs) reply.outputs = std::move(outputs);
  return reply;
}

}  // namespace berth::rpc
