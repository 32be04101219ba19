// The test node agent: it plays the kubelet, since none can run here. It binds unscheduled Pods
// to its node, maps image references to local folders (an unknown image is ImagePullBackOff),
// runs init containers then the main containers as local processes with the Pod's env, args,
// working folder and volumes mapped to temporary folders, honours the termination message path
// (4096 bytes kept), handles graceful deletion, and writes Pod status as a kubelet would.
//
// Faults, asked for by Pod label berth.test/fault: `oom` (the main container is OOMKilled once
// it runs), `evict` (the Pod is evicted once it runs), `node-lost` (the node vanishes while it
// runs: its processes die, and the Pod is deleted as the taint manager would), `never-start`
// (the Pod stays Pending). Annotation berth.test/start-delay (a duration) delays the start.
// Each Pod has an address of its own on loopback (127.77.x.y, its status.podIP); `$(VAR)` in
// command and args is expanded from the container's env; a tcpSocket readiness probe holds
// Ready back until the port accepts.
//
// Test infrastructure, named so: processes run as the test's user, without namespaces or
// cgroups; the security context is not enforced.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "kube/kube_api.h"

namespace berth::testenv {

struct TestNodeAgentOptions {
  std::string node_name = "berth-test-node";
  // Image reference -> the folder that plays its root filesystem.
  std::map<std::string, std::filesystem::path> images;
  std::filesystem::path work_dir;  // Pod folders go here
};

class TestNodeAgent {
 public:
  static Result<std::unique_ptr<TestNodeAgent>> Start(kube::KubeApi& api,
                                                      TestNodeAgentOptions options);
  virtual ~TestNodeAgent() = default;
  // Pods whose main containers this agent started.
  virtual int PodsStarted() const = 0;
};

}  // namespace berth::testenv
