// `berth render pod`: the exact Pod (or Job) the Kubernetes launcher would create for a runner
// configuration and a run's labels, or berth-controller for a Terraform object, printed as
// YAML, with no cluster.
#pragma once

#include <map>
#include <string>

namespace berth::cli {

struct RenderPodOptions {
  std::string runner_config;  // a YAML or JSON file
  std::string terraform;      // or a Terraform object's (berth-controller's runner Pod)
  std::map<std::string, std::string> labels;
  std::string kind = "pod";  // pod | job
  std::string op = "plan";
  std::string run_id = "example";
  std::string revision = "1";
};

// Prints the manifest to stdout and warnings to stderr; on invalid input prints every broken
// rule and returns kExitUsage.
int RenderPod(const RenderPodOptions& options);

}  // namespace berth::cli
