#include "controller/state_server.h"

namespace berth::controller {

Result<std::unique_ptr<StateServer>> StateServer::Start(kube::KubeApi& api, RunnerPki& pki,
                                                        Clock& clock,
                                                        const StateServerOptions& options) {
  if (options.host.empty())
    return MakeError(ErrorKind::kInvalidArgument,
                     "--state-host: the name or address runner Pods reach the state service by "
                     "is required");
  auto certificate = pki.StateServerCertificate(options.host);
  if (!certificate) return certificate.error();
  std::unique_ptr<StateServer> server(
      new StateServer(api, clock, pki.StateTokenKey(), pki.CaPem(), options.host));
  auto files = sys::TempDir::Create("berth-controller-state");
  if (!files) return files.error();
  server->files_.emplace(std::move(*files));
  const auto cert_file = server->files_->Path() / "tls.crt";
  const auto key_file = server->files_->Path() / "tls.key";
  if (auto ok = sys::WriteFileAtomic(cert_file, certificate->certificate_pem); !ok)
    return ok.error();
  if (auto ok = sys::WriteFileAtomic(key_file, certificate->key.pem); !ok) return ok.error();
  const StateService& service = server->service_;
  auto listening = net::StartHttpServer(
      {.address = options.address,
       .port = options.port,
       .tls_cert_file = cert_file.string(),
       .tls_key_file = key_file.string(),
       .admit = [&service](const net::ServerRequest& head) { return service.Admit(head); }},
      [&service](const net::ServerRequest& request) { return service.Handle(request); });
  if (!listening) return listening.error();
  server->server_ = std::move(*listening);
  return server;
}

StateServer::~StateServer() {
  if (server_) server_->Stop();
}

StateEndpoint StateServer::Endpoint() const {
  const std::string host = host_.find(':') == std::string::npos ? host_ : "[" + host_ + "]";
  return {.url = "https://" + host + ":" + std::to_string(server_->Port()),
          .ca_pem = ca_pem_,
          .tokens = &tokens_};
}

}  // namespace berth::controller
