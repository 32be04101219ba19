// berth-controller's side of the runner channel (runner_service.proto): dials a runner Pod's
// `runner serve` with mutual TLS and drives one run through it.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/mutex.h"

namespace grpc {
class Channel;
class ClientContext;
}  // namespace grpc

namespace berth::rpc {

struct RunnerTls {
  std::string ca_pem;    // the CA that issued the runner's certificate
  std::string cert_pem;  // the client's (berth-controller's) certificate and key
  std::string key_pem;
  std::string server_name;  // the name the runner's certificate must carry
};

// The files a run is sent; an empty path is not sent.
struct RunnerFiles {
  std::filesystem::path source;  // a .tar.gz of the module's folder
  std::filesystem::path config;
  std::filesystem::path approved_plan;
  std::filesystem::path state_key;
  std::filesystem::path plan_key;
  std::filesystem::path cli_config;
  std::filesystem::path state_token;  // the HTTP state backend's password
  // Files placed before TF starts: "home:PATH" or "workspace:PATH", and the file to send.
  std::vector<std::pair<std::string, std::filesystem::path>> mapped;
};

struct RunnerReply {
  std::string result_json;             // the result document
  std::string plan;                    // a plan's plan file; empty otherwise
  std::optional<std::string> outputs;  // output -json, when the run wrote it
};

class RunnerClient {
 public:
  // address: HOST:PORT (the Pod's IP and 30000). Connecting is lazy: a runner that does not
  // answer is an Unavailable error of Run.
  static Result<std::unique_ptr<RunnerClient>> Create(const std::string& address,
                                                      const RunnerTls& tls);
  ~RunnerClient();
  RunnerClient(const RunnerClient&) = delete;
  RunnerClient& operator=(const RunnerClient&) = delete;

  // One run: args are `runner run`'s flags; on_log gets the log as it comes. A refusal (bad
  // flags, a busy runner, a file too big) is an error naming why; a run that ran and failed is
  // a reply whose result says so.
  Result<RunnerReply> Run(const std::vector<std::string>& args, const RunnerFiles& files,
                          const std::function<void(std::string_view)>& on_log);

  // Interrupts the run in progress (none: nothing), from any thread: the runner stops TF as SIGTERM
  // would, and Run returns a Cancelled error.
  void Cancel() EXCLUDES(mutex_);

 private:
  explicit RunnerClient(std::shared_ptr<grpc::Channel> channel);

  std::shared_ptr<grpc::Channel> channel_;
  Mutex mutex_;
  grpc::ClientContext* active_ GUARDED_BY(mutex_) = nullptr;  // the run in progress
};

}  // namespace berth::rpc
