// berth-controller as an operator runs it, for the end-to-end tests: it holds exactly the rights
// of deploy/kubernetes/controller-rbac.yaml (a rule missing from the shipped file fails a test),
// its output goes to a log file, and it is ready once it says where it serves its metrics.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller_world.h"
#include "core/error.h"
#include "kube/kube_api.h"
#include "sys/subprocess.h"

namespace berth::controller {

class ControllerProcess {
 public:
  // flags follow the binary (--metrics-address, --metrics-port and the world's state service
  // flags are set here); env gets KUBECONFIG, PATH and the sanitizers' LSAN_OPTIONS added. Its
  // kubeconfig and log go in dir.
  static Result<std::unique_ptr<ControllerProcess>> Start(kube::KubeApi& admin,
                                                          const std::filesystem::path& dir,
                                                          const ControllerWorld& world,
                                                          std::vector<std::string> flags,
                                                          std::vector<std::string> env);

  const std::string& MetricsUrl() const { return metrics_url_; }  // http://127.0.0.1:PORT
  std::string Metrics() const;                                    // GET /metrics, or ""
  std::string Log() const;                                        // all it printed so far
  int Stop();                                                     // SIGTERM; its exit code

 private:
  ControllerProcess(sys::Subprocess process, std::filesystem::path log, std::string metrics_url)
      : process_(std::move(process)), log_(std::move(log)), metrics_url_(std::move(metrics_url)) {}

  sys::Subprocess process_;
  std::filesystem::path log_;
  std::string metrics_url_;
};

// Watches the Terraform object ns/name until its Ready condition has this reason; the object
// as it was then, or an error that shows it as last seen.
Result<nlohmann::json> WaitForReadyReason(kube::KubeApi& api, const std::string& ns,
                                          const std::string& name, const std::string& reason,
                                          std::chrono::seconds timeout = std::chrono::minutes(2));

}  // namespace berth::controller
