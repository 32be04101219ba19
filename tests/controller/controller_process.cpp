#include "controller_process.h"

#include <signal.h>

#include <thread>

#include "controller/terraform_object.h"
#include "controller_world.h"
#include "net/http_client.h"
#include "role_bound_client.h"
#include "sys/files.h"
#include "test_tools.h"

namespace berth::controller {

namespace fs = std::filesystem;
using nlohmann::json;

Result<std::unique_ptr<ControllerProcess>> ControllerProcess::Start(kube::KubeApi& admin,
                                                                    const fs::path& dir,
                                                                    const ControllerWorld& world,
                                                                    std::vector<std::string> flags,
                                                                    std::vector<std::string> env) {
  auto bound = testenv::KubeconfigBoundToRole(
      admin, testenv::SourceDir() / "deploy/kubernetes/controller-rbac.yaml", "berth-system");
  if (!bound) return bound.error();
  const fs::path kubeconfig = dir / "controller.kubeconfig";
  if (auto ok = sys::WriteFileAtomic(kubeconfig, *bound); !ok) return ok.error();
  sys::SpawnOptions options;
  options.argv = {BERTH_CONTROLLER_BIN, "--metrics-address=127.0.0.1", "--metrics-port=0"};
  options.argv.insert(options.argv.end(), flags.begin(), flags.end());
  for (std::string& flag : world.StateFlags()) options.argv.push_back(std::move(flag));
  const char* lsan = std::getenv("LSAN_OPTIONS");  // the leak check knows libgit2's
  env.push_back("KUBECONFIG=" + kubeconfig.string());
  env.emplace_back("PATH=/usr/bin:/bin");
  env.push_back(std::string("LSAN_OPTIONS=") + (lsan == nullptr ? "" : lsan));
  options.env = std::move(env);
  const fs::path log = dir / "controller.log";
  options.output_path = log.string();
  auto child = sys::Subprocess::Spawn(options);
  if (!child) return child.error();
  const std::string marker = "serving metrics address=127.0.0.1:";
  for (;;) {  // test setup: it says where it serves once it is ready
    auto seen = sys::ReadFile(log);
    const size_t at = seen ? seen->find(marker) : std::string::npos;
    if (at != std::string::npos && seen->find('\n', at) != std::string::npos) {
      const int port = std::stoi(seen->substr(at + marker.size()));
      return std::unique_ptr<ControllerProcess>(new ControllerProcess(
          std::move(*child), log, "http://127.0.0.1:" + std::to_string(port)));
    }
    if (!child->Running())
      return MakeError(ErrorKind::kInternal, "berth-controller did not start",
                       seen ? *seen : seen.error().ToString());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string ControllerProcess::Log() const {
  auto text = sys::ReadFile(log_);
  return text ? *text : text.error().ToString();
}

std::string ControllerProcess::Metrics() const {
  auto http = net::MakeCurlHttpClient({});
  auto response = http->Send({.method = "GET", .url = metrics_url_ + "/metrics"});
  return response ? response->body : "";
}

int ControllerProcess::Stop() {
  process_.Signal(SIGTERM);
  return process_.Wait();
}

Result<json> WaitForReadyReason(kube::KubeApi& api, const std::string& ns, const std::string& name,
                                const std::string& reason, std::chrono::seconds timeout) {
  json last;
  auto reached = [&](const json& object) {
    last = object;
    const json status = object.value("status", json::object());
    for (const json& c : status.value("conditions", json::array()))
      if (c.value("type", "") == "Ready" && c.value("reason", "") == reason) return true;
    return false;
  };
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto current = api.Get(kTerraforms, ns, name);
    if (current && reached(*current)) return Ok(*current);
    bool done = false;
    auto watched = api.Watch(
        kTerraforms, ns,
        {.field_selector = "metadata.name=" + name,
         .resource_version = current ? (*current)["metadata"].value("resourceVersion", "") : "",
         .timeout_seconds = 30},
        [&](const kube::WatchEvent& event) {
          done = event.type != "BOOKMARK" && reached(event.object);
          return !done;
        },
        [&] { return std::chrono::steady_clock::now() > deadline; });
    if (done) return Ok(last);
  }
  return MakeError(ErrorKind::kDeadlineExceeded, ns + "/" + name + " never reached " + reason,
                   last.dump());
}

}  // namespace berth::controller
