#include "runner/serve.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/server_credentials.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>

#include "core/exit_codes.h"
#include "runner/run_service.h"
#include "sys/fd.h"
#include "sys/files.h"

namespace berth::runner {
namespace {

// Up to 4 MiB per message is gRPC's default; file chunks are smaller than that, and a file
// of any size arrives in as many as it takes.
constexpr int kMaxMessageBytes = 4 * 1024 * 1024;

Result<std::shared_ptr<grpc::ServerCredentials>> MutualTls(const ServeOptions& options) {
  auto cert = sys::ReadFile(options.tls_cert);
  if (!cert) return cert.error();
  auto key = sys::ReadFile(options.tls_key);
  if (!key) return key.error();
  auto ca = sys::ReadFile(options.client_ca);
  if (!ca) return ca.error();
  grpc::SslServerCredentialsOptions tls(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  tls.pem_root_certs = *ca;
  tls.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(tls);
}

// The stop signals, read from a descriptor; blocked first so that no thread dies of them.
sys::Fd StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  return sys::Fd(signalfd(-1, &set, SFD_CLOEXEC));
}

}  // namespace

int Serve(const ServeOptions& options) {
  sys::Fd stop = StopSignals();  // before gRPC starts its threads, which inherit the mask
  auto credentials = MutualTls(options);
  if (!credentials) {
    std::fprintf(stderr, "runner serve: %s\n", credentials.error().ToString().c_str());
    return exit_code::kRunnerFailed;
  }
  auto self = sys::SelfExecutable();
  if (!self) {
    std::fprintf(stderr, "runner serve: %s\n", self.error().ToString().c_str());
    return exit_code::kRunnerFailed;
  }
  RunService service(options, *self);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options.listen, *credentials, &port);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "runner serve: cannot listen on %s\n", options.listen.c_str());
    return exit_code::kRunnerFailed;
  }
  const std::string host = options.listen.substr(0, options.listen.rfind(':'));
  std::fprintf(stderr, "runner serve: listening on %s:%d\n", host.c_str(), port);
  std::fflush(stderr);

  signalfd_siginfo signal{};
  while (::read(stop.Get(), &signal, sizeof signal) < 0 && errno == EINTR) {
  }
  std::fprintf(stderr, "runner serve: stopping (signal %u)\n", signal.ssi_signo);
  service.Stop();      // the run in progress, if any, is interrupted and ends
  server->Shutdown();  // waits for it to send its result
  return exit_code::kOk;
}

}  // namespace berth::runner
