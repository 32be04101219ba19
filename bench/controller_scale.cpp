// berth-controller at scale: N Terraform objects (default 10000) on the test apiserver, then
// the berth-controller process started against them; reports its peak RSS, reconciles per
// second until every object has a status, Kubernetes API requests per reconcile, and list
// calls after the first sync (the target: none). Each object depends on one that does not
// exist, so each reconcile reads it (and looks for a cycle), writes DependencyNotReady and
// posts its Event, and starts no runner Pod: what is measured is the controller itself, not
// tofu.
// Usage: [BERTH_CONTROLLER=build/release/apps/berth-controller/berth-controller]
//        controller_scale [N]   (after `source "$(scripts/testenv --env-file)"`; the default
//        binary is this build's, with sanitizers in the dev build)
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "controller_world.h"
#include "kube_test_cluster.h"
#include "net/http_client.h"
#include "sys/subprocess.h"

using namespace berth;
using nlohmann::json;

namespace {

constexpr char kNamespace[] = "tf-scale";

long PeakRssKib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("VmHWM:")) return std::stol(line.substr(6));
  return -1;
}

// The value of the first metric line starting with prefix, or -1.
double Metric(const std::string& text, const std::string& prefix) {
  size_t at = text.find("\n" + prefix);
  if (at == std::string::npos) return -1;
  size_t space = text.find(' ', at + 1 + prefix.size());
  return std::stod(text.substr(space + 1, text.find('\n', space) - space - 1));
}

}  // namespace

int main(int argc, char** argv) {
  const int objects = argc > 1 ? std::max(1, std::stoi(argv[1])) : 10000;
  auto world = controller::ControllerWorld::Create(kNamespace);
  if (!world) {
    std::fprintf(stderr, "%s\n", world.error().ToString().c_str());
    return 1;
  }
  auto cluster = testenv::KubeTestCluster::Shared().value();
  auto config =
      kube::KubeConfig::Parse(cluster->KubeconfigYaml(cluster->AdminTls()), "/", {}).value();
  auto fast = kube::MakeKubeClient(config, {.qps = 2000, .burst = 2000});
  const auto made_start = std::chrono::steady_clock::now();
  for (int i = 0; i < objects; ++i) {
    json object = (*world)->FileStack("stack-" + std::to_string(i), kNamespace, "/dev/null");
    object["spec"]["dependsOn"] = {{{"name", "elsewhere"}}};
    if (auto made = fast->Create(controller::kTerraforms, kNamespace, object); !made) {
      std::fprintf(stderr, "%s\n", made.error().ToString().c_str());
      return 1;
    }
  }
  std::printf("created %d objects in %.1f s\n", objects,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - made_start).count());

  sys::SpawnOptions options;
  const char* chosen = std::getenv("BERTH_CONTROLLER");
  options.argv = {chosen != nullptr ? chosen : BERTH_CONTROLLER_BIN, "--namespace=berth-system",
                  "--metrics-address=127.0.0.1", "--metrics-port=0", "--concurrency=8",
                  // the controller's own pace, not its client's rate limit
                  "--kube-api-qps=2000", "--kube-api-burst=2000", "--no-leader-elect"};
  options.env = std::vector<std::string>{"KUBECONFIG=" + (*world)->kubeconfig.string(),
                                         std::string("KUBERNETES_IMAGE=") + controller::kTestImage};
  options.pipe_output = true;
  const auto start = std::chrono::steady_clock::now();
  auto child = sys::Subprocess::Spawn(options);
  if (!child) return 1;
  std::string seen;
  const std::string marker = "serving metrics on 127.0.0.1:";
  char buffer[4096];
  while (seen.find(marker) == std::string::npos || seen.back() != '\n') {
    ssize_t n = ::read(child->OutputFd(), buffer, sizeof buffer);
    if (n <= 0) return 1;
    seen.append(buffer, static_cast<size_t>(n));
  }
  const std::string url =
      "http://127.0.0.1:" +
      std::to_string(std::stoi(seen.substr(seen.find(marker) + marker.size()))) + "/metrics";
  auto http = net::MakeCurlHttpClient({});
  std::string metrics;
  double reconciles = 0;
  while (reconciles < objects) {  // a bench, not a test: it may watch the clock
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto response = http->Send({.url = url});
    if (!response) continue;
    metrics = response->body;
    reconciles = Metric(metrics, "berth_controller_reconciles_total{result=\"ok\"}") +
                 Metric(metrics, "berth_controller_reconciles_total{result=\"error\"}");
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double requests = 0;
  for (size_t at = metrics.find("\nberth_kube_requests_total{"); at != std::string::npos;
       at = metrics.find("\nberth_kube_requests_total{", at + 1)) {
    size_t space = metrics.find(' ', metrics.find('}', at));
    requests += std::stod(metrics.substr(space + 1, metrics.find('\n', space) - space - 1));
  }
  std::printf("objects:                      %d\n", objects);
  std::printf("reconciled in:                %.1f s (%.0f reconciles/s, start-up included)\n",
              seconds, reconciles / seconds);
  std::printf("controller peak RSS:          %ld KiB\n", PeakRssKib(child->Pid()));
  std::printf("API requests per reconcile:   %.2f\n", requests / reconciles);
  std::printf("informer lists (1 = none after the first sync): %.0f\n",
              Metric(metrics, "berth_controller_informer_lists_total"));
  child->Signal(SIGTERM);
  child->Wait();
  return 0;
}
