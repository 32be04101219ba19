// Starting the real node: the registry first (the pause image comes from it), then containerd,
// kube-scheduler and kubelet, each with its files in one temporary folder; the recipe and its
// traps are ../shared/realnode/README.md's (cgroup v1, restrict_oom_score_adj, teardown).
#include "real_node.h"

#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "kube_test_cluster.h"
#include "loopback.h"
#include "net/http_client.h"
#include "oci_layout.h"
#include "test_tools.h"

namespace berth::testenv {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr auto kStartTimeout = std::chrono::seconds(120);
constexpr const char* kRunc = "/usr/sbin/runc";
constexpr const char* kPodSubnet = "10.244.0.0/24";

Result<void> Run(std::vector<std::string> argv) {
  std::string line = fmt::format("{}", fmt::join(argv, " "));
  auto done = sys::RunToCompletion({.argv = std::move(argv)});
  if (!done) return done.error();
  if (done->exit_code != 0)
    return MakeError(ErrorKind::kInternal, line + " failed: " + done->output);
  return {};
}

Result<void> Write(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  return sys::WriteFileAtomic(path, content);
}

// A folder of its own for a fixed path some tool insists on, private to this mount namespace.
Result<void> MountPrivateTmpfs(const fs::path& at) {
  fs::create_directories(at);
  if (mount("tmpfs", at.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0)
    return MakeError(ErrorKind::kInternal, "cannot mount a tmpfs on " + at.string());
  return {};
}

// Unmounts whatever containerd and kubelet left mounted under dir, deepest first, so that the
// folder can be removed while this process (and so its mount namespace) still lives.
void UnmountUnder(const fs::path& dir) {
  std::ifstream mounts("/proc/self/mounts");
  std::set<std::string, std::greater<>> points;
  std::string device, point, rest;
  while (mounts >> device >> point && std::getline(mounts, rest)) {
    if (point.starts_with(dir.string())) points.insert(point);
  }
  for (const std::string& p : points) umount2(p.c_str(), MNT_DETACH);
}

// kubelet's cgroups (kubepods under every v1 controller) outlive it: remove them deepest first.
void RemoveKubepodsCgroups() {
  std::error_code ec;
  for (const auto& controller : fs::directory_iterator("/sys/fs/cgroup", ec)) {
    fs::path root = controller.path() / "kubepods";
    if (!fs::exists(root, ec)) continue;
    std::vector<fs::path> dirs;
    for (const auto& entry : fs::recursive_directory_iterator(root, ec)) {
      if (entry.is_directory(ec)) dirs.push_back(entry.path());
    }
    std::sort(dirs.rbegin(), dirs.rend());
    for (const fs::path& d : dirs) rmdir(d.c_str());
    rmdir(root.c_str());
  }
}

std::string ContainerdConfig(const fs::path& dir, const std::string& pause_image) {
  return fmt::format(R"(version = 3
root = "{0}/containerd/root"
state = "{0}/containerd/state"
[grpc]
  address = "{0}/containerd.sock"
[ttrpc]
  address = "{0}/containerd.sock.ttrpc"
[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '{1}'
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = '{0}/certs.d'
  [plugins.'io.containerd.cri.v1.runtime']
    # CAP_SYS_RESOURCE is not in this machine's bounding set: runc cannot lower oom_score_adj.
    restrict_oom_score_adj = true
    enable_selinux = false
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = '{2}'
          SystemdCgroup = false
          Root = '{0}/runc'
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['/usr/lib/cni']
      conf_dir = '{0}/cni'
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'
    stream_server_port = '0'
)",
                     dir.string(), pause_image, kRunc);
}

std::string CniConfig(const fs::path& dir) {
  json bridge = {{"type", "bridge"},
                 {"bridge", "berth-pods0"},
                 {"isGateway", true},
                 {"ipMasq", false},
                 {"hairpinMode", true},
                 {"ipam",
                  {{"type", "host-local"},
                   {"ranges", {{{{"subnet", kPodSubnet}}}}},
                   {"routes", {{{"dst", "0.0.0.0/0"}}}},
                   {"dataDir", (dir / "cni-ipam").string()}}}};
  return json{{"cniVersion", "0.4.0"}, {"name", "berth-pods"}, {"plugins", {bridge}}}.dump(1);
}

// The node shares the machine's disk with the builds and the other tests: a percentage of a
// large disk (1% of 250 GiB) can be more than a busy CI machine has free, and a node under disk
// pressure taints itself and evicts every Pod. Only a disk that is truly full stops it.
std::string KubeletConfig(const fs::path& dir) {
  return fmt::format(R"(apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://{0}/containerd.sock
address: {1}
port: 10250
readOnlyPort: 0
healthzPort: 10248
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {{enabled: false}}
  webhook: {{enabled: false}}
  x509: {{clientCAFile: {0}/ca.crt}}
authorization:
  mode: AlwaysAllow
clusterDNS: []
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
podCIDR: {2}
maxPods: 30
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "50Mi"
  nodefs.available: "256Mi"
  imagefs.available: "256Mi"
  nodefs.inodesFree: "1%"
serializeImagePulls: false
registerNode: true
nodeStatusUpdateFrequency: 2s
podLogsDir: {0}/pod-logs
)",
                     dir.string(), RealNode::kIp, kPodSubnet);
}

// Every container a node's kubelet left (runc's own list).
void StopContainersUnder(const fs::path& node_dir) {
  fs::path root = node_dir / "runc/k8s.io";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    std::string id = entry.path().filename();
    IgnoreError(Run({kRunc, "--root", root.string(), "kill", "--all", id, "KILL"}),
                "a container that is gone already");
    IgnoreError(Run({kRunc, "--root", root.string(), "delete", "--force", id}),
                "a container that is gone already");
  }
}

// containerd's shims whose socket lies in a node folder that abandoned() names, with every
// process under them (the containers' own): a shim double-forks away from containerd and
// outlives it, so it is found by its command line.
void KillShims(const std::function<bool(const fs::path& node_dir)>& abandoned) {
  std::map<pid_t, std::vector<pid_t>> children;
  std::vector<pid_t> doomed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t pid = std::stoi(name);
    auto stat = sys::ReadFile(entry.path() / "stat");
    if (stat && stat->rfind(')') != std::string::npos) {
      std::istringstream fields(stat->substr(stat->rfind(')') + 2));
      std::string state;
      pid_t parent = 0;
      fields >> state >> parent;
      children[parent].push_back(pid);
    }
    auto cmdline = sys::ReadFile(entry.path() / "cmdline");
    if (!cmdline || cmdline->find("containerd-shim-runc-v2") == std::string::npos) continue;
    size_t flag = cmdline->find(std::string("-address\0", 9));
    if (flag == std::string::npos) continue;
    std::string socket = cmdline->substr(flag + 9, cmdline->find('\0', flag + 9) - flag - 9);
    if (abandoned(fs::path(socket).parent_path())) doomed.push_back(pid);
  }
  for (size_t i = 0; i < doomed.size(); ++i) {
    for (pid_t child : children[doomed[i]]) doomed.push_back(child);
  }
  for (pid_t pid : doomed) kill(pid, SIGKILL);
}

// "PID START": this process, by its pid and its start time (field 22 of /proc/PID/stat), so
// that a pid the kernel gave to another process since is not taken for it.
std::string ProcessIdentity(const std::string& pid) {
  auto stat = sys::ReadFile("/proc/" + pid + "/stat");
  if (!stat) return "";
  std::istringstream fields(stat->substr(stat->rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
  }
  return pid + " " + field;
}

// A test binary killed outright (a ctest timeout) leaves its node's shims and containers
// behind, holding the host's kubepods cgroups: the next node clears what such a node left.
void ReapAbandonedNodes() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    if (!entry.path().filename().string().starts_with("berth-node-")) continue;
    auto owner = sys::ReadFile(entry.path() / "owner");
    if (owner && !owner->empty() && ProcessIdentity(owner->substr(0, owner->find(' '))) == *owner)
      continue;
    StopContainersUnder(entry.path());
    fs::remove_all(entry.path(), ec);
  }
  // Shims of nodes whose folder is gone or whose owner is: their containers go with them.
  KillShims([](const fs::path& node_dir) {
    auto owner = sys::ReadFile(node_dir / "owner");
    return !owner || ProcessIdentity(owner->substr(0, owner->find(' '))) != *owner;
  });
  RemoveKubepodsCgroups();
}

}  // namespace

Result<void> EnterOwnNamespaces() {
  if (unshare(CLONE_NEWNET | CLONE_NEWNS) != 0)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "cannot unshare the network and mount namespaces (run as root)");
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return MakeError(ErrorKind::kInternal, "cannot make mounts private");
  // Fixed paths that CNI (netns files) and containerd 2 (shim sockets) use.
  for (const char* at : {"/run/netns", "/run/containerd"}) {
    if (auto r = MountPrivateTmpfs(at); !r) return r;
  }
  const std::string ip = "/usr/sbin/ip";
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {ip, "link", "set", "lo", "up"},
           {ip, "link", "add", "berth-node0", "type", "bridge"},
           {ip, "addr", "add", std::string(RealNode::kIp) + "/24", "dev", "berth-node0"},
           {ip, "link", "set", "berth-node0", "up"}}) {
    if (auto r = Run(argv); !r) return r;
  }
  AdvertiseApiserverOn(RealNode::kIp);
  return {};
}

Result<RealNode*> RealNode::Shared() {
  static Result<std::unique_ptr<RealNode>> node = Start();
  if (!node) return node.error();
  return node->get();
}

Result<std::unique_ptr<RealNode>> RealNode::Start() {
  auto cluster = KubeTestCluster::Shared();
  if (!cluster) return cluster.error();
  ReapAbandonedNodes();
  auto dir = sys::TempDir::Create("berth-node");
  if (!dir) return dir.error();
  if (auto owned = Write(dir->Path() / "owner", ProcessIdentity(std::to_string(getpid()))); !owned)
    return owned.error();
  std::unique_ptr<RealNode> node(new RealNode(std::move(*dir), *cluster));
  if (auto r = node->StartRegistry(); !r) return r.error();
  if (auto r = node->PushPauseImage(); !r) return r.error();
  if (auto r = node->StartContainerd(); !r) return r.error();
  if (auto r = node->StartScheduler(); !r) return r.error();
  // What a node's workloads need of the controller manager: the node-lifecycle controller lifts
  // the not-ready taint kubelet registers its node with; Deployments roll out; Services get
  // their endpoints; claims bind to volumes.
  auto lifecycle = (*cluster)->StartControllers(
      "node-lifecycle-controller,deployment-controller,replicaset-controller,"
      "endpointslice-controller,persistentvolume-binder-controller",
      node->dir_.Path());
  if (!lifecycle) return lifecycle.error();
  node->node_lifecycle_ = std::move(*lifecycle);
  if (auto r = node->StartKubelet(); !r) return r.error();
  if (auto r = node->StartProxy(); !r) return r.error();
  if (auto r = node->WaitUntilNodeReady(); !r) return r.error();
  return node;
}

RealNode::~RealNode() {
  proxy_.reset();
  scheduler_.reset();
  node_lifecycle_.reset();
  if (kubelet_) kubelet_->Signal(SIGTERM);
  kubelet_.reset();
  StopContainers();
  containerd_.reset();
  registry_process_.reset();
  RemoveKubepodsCgroups();
  UnmountUnder(dir_.Path());
}

void RealNode::StopContainers() {
  StopContainersUnder(dir_.Path());
  KillShims([this](const fs::path& node_dir) { return node_dir == dir_.Path(); });
}

Result<void> RealNode::StartRegistry() {
  auto port = FreeLoopbackPort();
  if (!port) return port.error();
  registry_ = fmt::format("127.0.0.1:{}", *port);
  fs::path config = dir_.Path() / "registry.yaml";
  if (auto r = Write(config, fmt::format("version: 0.1\nlog: {{level: warn}}\nstorage:\n"
                                         "  filesystem: {{rootdirectory: {}}}\n"
                                         "  delete: {{enabled: true}}\nhttp: {{addr: {}}}\n",
                                         (dir_.Path() / "registry").string(), registry_));
      !r)
    return r;
  auto process = StartServing("docker-registry",
                              {.argv = {"/usr/bin/docker-registry", "serve", config.string()},
                               .output_path = (dir_.Path() / "registry.log").string()},
                              "http://" + registry_ + "/v2/", kStartTimeout);
  if (!process) return process.error();
  registry_process_ = std::move(*process);
  return {};
}

Result<std::string> RealNode::Push(const fs::path& layout, const std::string& tag,
                                   const std::string& repository, const std::string& as_tag) const {
  std::string reference = registry_ + "/" + repository + ":" + as_tag;
  if (auto r =
          Run({"/usr/bin/skopeo", "--insecure-policy", "copy", "--quiet", "--dest-tls-verify=false",
               "oci:" + layout.string() + ":" + tag, "docker://" + reference});
      !r)
    return r.error();
  return reference;
}

Result<PushedImage> RealNode::PushRunnerWith(const fs::path& layer, const std::string& tag) const {
  const fs::path images = ImagesDir();
  auto base = ReadLayoutManifest(images / "runner");
  if (!base) return base.error();
  auto work = sys::TempDir::Create("runner-image-derived");
  if (!work) return work.error();
  const fs::path layout = work->Path() / "layout";
  fs::copy(images / "runner", layout, fs::copy_options::recursive);
  // The folder becomes /berth, which the Pod's user must traverse (a temporary folder is 0700).
  fs::permissions(layer, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec);
  if (auto r = Run({"/usr/bin/umoci", "insert", "--image", layout.string() + ":" + base->tag,
                    layer.string(), "/berth"});
      !r)
    return r.error();
  auto derived = ReadLayoutManifest(layout);
  if (!derived) return derived.error();
  auto pushed = Push(layout, derived->tag, "berth/runner-test", tag);
  if (!pushed) return pushed.error();
  return PushedImage{.reference = *pushed, .digest = derived->digest};
}

fs::path RealNode::EmptyDirOf(const std::string& pod_uid, const std::string& volume) const {
  return dir_.Path() / "kubelet/pods" / pod_uid / "volumes/kubernetes.io~empty-dir" / volume;
}

// The Pod sandbox image: kubernetes' own pause, built by scripts/testenv, as a one-file image.
Result<void> RealNode::PushPauseImage() {
  auto pause = TestTool("BERTH_TEST_PAUSE");
  if (!pause) return pause.error();
  fs::path layout = dir_.Path() / "pause-image", bundle = dir_.Path() / "pause-bundle";
  std::string ref = layout.string() + ":3.10";
  const std::string umoci = "/usr/bin/umoci";
  if (auto r = Run({umoci, "init", "--layout", layout.string()}); !r) return r;
  if (auto r = Run({umoci, "new", "--image", ref}); !r) return r;
  fs::create_directories(bundle);
  fs::copy_file(*pause, bundle / "pause");
  if (auto r = Run({umoci, "insert", "--image", ref, (bundle / "pause").string(), "/pause"}); !r)
    return r;
  if (auto r = Run({umoci, "config", "--image", ref, "--config.entrypoint", "/pause",
                    "--config.user", "65535:65535", "--architecture", "amd64", "--os", "linux"});
      !r)
    return r;
  auto pushed = Push(layout, "3.10", "pause", "3.10");
  if (!pushed) return pushed.error();
  pause_image_ = *pushed;
  return {};
}

Result<void> RealNode::StartContainerd() {
  auto dir = TestTool("BERTH_TEST_CONTAINERD_DIR");
  if (!dir) return dir.error();
  const fs::path& root = dir_.Path();
  std::string registry_host = fmt::format(
      "server = \"http://{0}\"\n[host.\"http://{0}\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
      registry_);
  if (auto r = Write(root / "certs.d" / registry_ / "hosts.toml", registry_host); !r) return r;
  if (auto r = Write(root / "containerd.toml", ContainerdConfig(root, pause_image_)); !r) return r;
  if (auto r = Write(root / "cni/10-berth-pods.conflist", CniConfig(root)); !r) return r;
  sys::SpawnOptions options{
      .argv = {(*dir / "containerd").string(), "--config", (root / "containerd.toml").string()},
      // The shim is found on PATH, beside containerd.
      .env = std::vector<std::string>{"PATH=" + dir->string() + ":/usr/sbin:/usr/bin:/sbin:/bin"},
      .output_path = (root / "containerd.log").string()};
  auto process = sys::Subprocess::Spawn(options);
  if (!process) return process.error();
  containerd_ = std::make_unique<sys::Subprocess>(std::move(*process));
  fs::path socket = root / "containerd.sock";
  return WaitUntilReady(
      "containerd", *containerd_, [&] { return fs::exists(socket); }, kStartTimeout,
      options.output_path);
}

Result<void> RealNode::StartScheduler() {
  auto binary = TestTool("BERTH_TEST_KUBE_SCHEDULER");
  if (!binary) return binary.error();
  auto port = FreeLoopbackPort();
  if (!port) return port.error();
  auto process = StartServing(
      "kube-scheduler",
      {.argv = {binary->string(), "--kubeconfig=" + cluster_->AdminKubeconfig().string(),
                "--leader-elect=false", "--bind-address=127.0.0.1",
                fmt::format("--secure-port={}", *port),
                "--cert-dir=" + (dir_.Path() / "scheduler-certs").string()},
       .output_path = (dir_.Path() / "kube-scheduler.log").string()},
      fmt::format("https://127.0.0.1:{}/healthz", *port), kStartTimeout);
  if (!process) return process.error();
  scheduler_ = std::move(*process);
  return {};
}

// kube-proxy (iptables, in this namespace): ClusterIPs and NodePorts route, the `kubernetes`
// Service to the apiserver; every Service connection is masqueraded, since a Pod that reaches
// a Pod on the same bridge through a Service would otherwise get its answer from the wrong
// address.
Result<void> RealNode::StartProxy() {
  auto binary = TestTool("BERTH_TEST_KUBE_PROXY");
  if (!binary) return binary.error();
  auto process = StartServing(
      "kube-proxy",
      {.argv = {binary->string(), "--kubeconfig=" + cluster_->AdminKubeconfig().string(),
                std::string("--hostname-override=") + kName, "--proxy-mode=iptables",
                std::string("--cluster-cidr=") + kPodSubnet, "--masquerade-all",
                "--conntrack-max-per-core=0", "--metrics-bind-address=127.0.0.1:10249",
                "--healthz-bind-address=127.0.0.1:10256"},
       .output_path = (dir_.Path() / "kube-proxy.log").string()},
      "http://127.0.0.1:10256/healthz", kStartTimeout);
  if (!process) return process.error();
  proxy_ = std::move(*process);
  return {};
}

Result<void> RealNode::StartKubelet() {
  auto binary = TestTool("BERTH_TEST_KUBELET");
  if (!binary) return binary.error();
  const fs::path& root = dir_.Path();
  // The node's own identity, which the Node authorizer confines to its node and its Pods.
  auto tls = cluster_->UserTls(std::string("system:node:") + kName, {"system:nodes"});
  if (!tls) return tls.error();
  if (auto r = Write(root / "node.kubeconfig", cluster_->KubeconfigYaml(*tls)); !r) return r;
  if (auto r = Write(root / "ca.crt", cluster_->CaPem()); !r) return r;
  if (auto r = Write(root / "kubelet.yaml", KubeletConfig(root)); !r) return r;
  auto process =
      StartServing("kubelet",
                   {.argv = {binary->string(), "--config=" + (root / "kubelet.yaml").string(),
                             "--kubeconfig=" + (root / "node.kubeconfig").string(),
                             "--root-dir=" + (root / "kubelet").string(),
                             "--cert-dir=" + (root / "kubelet-pki").string(),
                             std::string("--hostname-override=") + kName,
                             std::string("--node-ip=") + kIp, "--v=1"},
                    .output_path = (root / "kubelet.log").string()},
                   "http://127.0.0.1:10248/healthz", kStartTimeout);
  if (!process) return process.error();
  kubelet_ = std::move(*process);
  return {};
}

Result<void> RealNode::WaitUntilNodeReady() {
  auto http = net::MakeCurlHttpClient(cluster_->AdminTls());
  // What kept it from ready, last seen: a node under disk or memory pressure says so here.
  json taints, conditions;
  auto ready = WaitUntilReady(
      "the node's Ready condition and no taint", *kubelet_,
      [&] {
        auto r = http->Send({.url = cluster_->Url() + "/api/v1/nodes/" + kName});
        if (!r || r->status != 200) return false;
        json node = json::parse(r->body);
        taints = node["spec"].value("taints", json::array());
        conditions = node["status"].value("conditions", json::array());
        if (!taints.empty()) return false;
        for (const json& c : conditions) {
          if (c["type"] == "Ready") return c["status"] == "True";
        }
        return false;
      },
      kStartTimeout, (dir_.Path() / "kubelet.log").string());
  if (!ready) {
    Error error = ready.error();
    error.message += "\n--- the node's taints: " + taints.dump() + "\n--- its conditions: ";
    for (const json& c : conditions)
      error.message +=
          c.value("type", "") + "=" + c.value("status", "") + " (" + c.value("message", "") + ") ";
    return error;
  }
  return {};
}

Result<void> RealNode::PrepareNamespace(kube::KubeApi& admin, const std::string& ns) const {
  if (auto r = cluster_->CreateNamespace(ns); !r) return r;
  json ca = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "kube-root-ca.crt"}}},
             {"data", {{"ca.crt", cluster_->CaPem()}}}};
  auto created = admin.Create(kube::kConfigMaps, ns, ca);
  if (!created && created.error().kind != ErrorKind::kAlreadyExists) return created.error();
  return {};
}

}  // namespace berth::testenv
