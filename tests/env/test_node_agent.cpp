#include "test_node_agent.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <thread>

#include "core/base64.h"
#include "core/duration.h"
#include "core/mutex.h"
#include "core/time_format.h"
#include "crypto/digest.h"
#include "kube/informer.h"
#include "loopback.h"
#include "sys/fd.h"
#include "sys/files.h"
#include "sys/subprocess.h"

namespace berth::testenv {
namespace {

namespace fs = std::filesystem;
using kube::kPods;
using nlohmann::json;

constexpr size_t kTerminationMessageBytes = 4096;
constexpr const char* kFieldManager = "berth-test-node-agent";

std::string Now() { return FormatRfc3339(std::chrono::system_clock::now()); }

// Each Pod gets an address of its own on loopback (all of 127/8 is local), so that two Pods
// may listen on the same port, as in their own network namespaces. Test binaries run side by
// side: an address is this process's while it holds a socket bound to its reservation port,
// so another binary's node agent moves on to the next one.
std::string NextPodIp() {
  constexpr uint16_t kReservationPort = 39999;
  static Mutex mutex;
  static int next = 0;
  static std::vector<sys::Fd> reserved;
  MutexLock lock(mutex);
  for (int tries = 0; tries < 250 * 250; ++tries) {
    const int n = next++ % (250 * 250);
    std::string ip = "127.77." + std::to_string(1 + n / 250) + "." + std::to_string(1 + n % 250);
    sys::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(kReservationPort);
    ::inet_pton(AF_INET, ip.c_str(), &address.sin_addr);
    if (fd && ::bind(fd.Get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
      reserved.push_back(std::move(fd));
      return ip;
    }
  }
  return "127.77.255.255";  // every address is taken: the Pod's listen fails and says so
}

// Kubernetes' expansion of $(VAR) in command and args from the container's env: a defined
// variable is replaced, $$ is a literal $, anything else stays as written.
std::string ExpandVariables(const std::string& text,
                            const std::map<std::string, std::string>& env) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '(') {
      size_t close = text.find(')', i + 2);
      if (close != std::string::npos) {
        auto found = env.find(text.substr(i + 2, close - i - 2));
        if (found != env.end()) {
          out += found->second;
          i = close;
          continue;
        }
      }
    }
    out += text[i];
  }
  return out;
}

// One Pod on this node: its folders, its processes, its status.
class PodWorker {
 public:
  PodWorker(kube::KubeApi& api, const TestNodeAgentOptions& options, json pod)
      : api_(api), options_(options), pod_(std::move(pod)) {
    const json& metadata = pod_["metadata"];
    ns_ = metadata.value("namespace", "");
    name_ = metadata.value("name", "");
    uid_ = metadata.value("uid", "");
    fault_ = metadata.value("labels", json::object()).value("berth.test/fault", "");
    dir_ = options_.work_dir / (ns_ + "_" + name_ + "_" + uid_);
    ip_ = NextPodIp();
  }

  void Run() {
    std::error_code ignored;
    fs::create_directories(dir_, ignored);
    auto delay =
        pod_["metadata"].value("annotations", json::object()).value("berth.test/start-delay", "");
    if (!delay.empty()) {
      if (auto d = ParseDuration(delay)) WaitUntil(std::chrono::steady_clock::now() + *d);
    }
    if (fault_ == "never-start") WaitUntil(std::chrono::steady_clock::time_point::max());
    if (!Stopping() && PrepareVolumes() && ImagesPresent() && RunInitContainers()) RunMain();
    FinishDeletion();
  }

  // The Pod was deleted gracefully (grace) or is gone (hard).
  void RequestStop(int grace_seconds) {
    grace_seconds_ = grace_seconds;
    stop_ = true;
  }
  void ForceStop() {
    grace_seconds_ = 0;
    stop_ = true;
    gone_ = true;
  }
  bool Started() const { return started_; }

 private:
  bool Stopping() const { return stop_.load(); }

  void WaitUntil(std::chrono::steady_clock::time_point until) {
    while (!Stopping() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  // As the kubelet's status manager: made again while the apiserver is away; a Pod deleted
  // meanwhile leaves nothing to report to.
  void PatchStatus(const json& status) {
    for (;;) {
      auto patched = api_.Patch(kPods, ns_, name_, kube::PatchType::kMerge, {{"status", status}},
                                kFieldManager, "status");
      if (patched || patched.error().kind != ErrorKind::kUnavailable || Stopping()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  fs::path VolumeDir(const std::string& name) const { return dir_ / "volumes" / name; }

  bool PrepareVolumes() {
    for (const json& volume : pod_["spec"].value("volumes", json::array())) {
      fs::path target = VolumeDir(volume.value("name", ""));
      fs::create_directories(target);
      if (!volume.contains("secret") && !volume.contains("configMap")) continue;
      bool secret = volume.contains("secret");
      const json& source = secret ? volume["secret"] : volume["configMap"];
      std::string object_name = source.value(secret ? "secretName" : "name", "");
      // The kubelet waits for a volume's object to appear (berth creates the Secret after the
      // Pod, owned by it).
      Result<json> object = MakeError(ErrorKind::kNotFound, "not yet");
      for (int i = 0; i < 600 && !Stopping(); ++i) {
        object = api_.Get(secret ? kube::kSecrets : kube::kConfigMaps, ns_, object_name);
        if (object) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (!object) return false;
      const json data = object->value("data", json::object());
      for (const auto& [key, value] : data.items()) {
        std::string bytes = value.get<std::string>();
        if (secret) bytes = Base64Decode(bytes).value();
        if (!sys::WriteFileAtomic(target / key, bytes)) return false;
      }
    }
    return true;
  }

  fs::path ImageRoot(const json& container) const {
    auto it = options_.images.find(container.value("image", ""));
    return it == options_.images.end() ? fs::path() : it->second;
  }

  bool ImagesPresent() {
    for (const char* list : {"initContainers", "containers"}) {
      for (const json& container : pod_["spec"].value(list, json::array())) {
        if (!ImageRoot(container).empty()) continue;
        std::string image = container.value("image", "");
        json waiting = {{"name", container.value("name", "")},
                        {"image", image},
                        {"ready", false},
                        {"restartCount", 0},
                        {"state",
                         {{"waiting",
                           {{"reason", "ImagePullBackOff"},
                            {"message", "Back-off pulling image \"" + image + "\""}}}}}};
        std::string statuses =
            std::string(list) == "initContainers" ? "initContainerStatuses" : "containerStatuses";
        PatchStatus({{"phase", "Pending"}, {statuses, {waiting}}});
        WaitUntil(std::chrono::steady_clock::time_point::max());
        return false;
      }
    }
    return true;
  }

  // Container paths to host paths: volume mounts (longest first), the termination message
  // file, and otherwise the image's folder.
  class PathMap {
   public:
    PathMap(const PodWorker& worker, const json& container, const fs::path& termination_host)
        : image_(worker.ImageRoot(container)) {
      for (const json& mount : container.value("volumeMounts", json::array())) {
        fs::path host = worker.VolumeDir(mount.value("name", ""));
        if (mount.contains("subPath")) host /= mount["subPath"].get<std::string>();
        mounts_.emplace_back(mount.value("mountPath", ""), host);
      }
      mounts_.emplace_back(container.value("terminationMessagePath", "/dev/termination-log"),
                           termination_host);
      std::sort(mounts_.begin(), mounts_.end(),
                [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    }
    std::string Map(const std::string& path) const {
      if (path.empty() || path[0] != '/') return path;
      for (const auto& [container_path, host] : mounts_) {
        if (path == container_path) return host.string();
        if (path.rfind(container_path + "/", 0) == 0)
          return (host / path.substr(container_path.size() + 1)).string();
      }
      return (image_ / path.substr(1)).string();
    }
    // "--flag=/path" and "/path" arguments.
    std::string MapArgument(const std::string& arg) const {
      auto eq = arg.find("=/");
      if (arg.rfind("--", 0) == 0 && eq != std::string::npos)
        return arg.substr(0, eq + 1) + Map(arg.substr(eq + 1));
      return Map(arg);
    }
    const fs::path& Image() const { return image_; }

   private:
    fs::path image_;
    std::vector<std::pair<std::string, fs::path>> mounts_;
  };

  std::string EnvValue(const json& entry) {
    if (entry.contains("value")) return entry["value"].get<std::string>();
    const json from = entry.value("valueFrom", json::object());
    if (from.contains("fieldRef")) {
      std::string field = from["fieldRef"].value("fieldPath", "");
      if (field == "metadata.name") return name_;
      if (field == "metadata.namespace") return ns_;
      if (field == "status.podIP") return ip_;
    }
    return "";
  }

  Result<sys::Subprocess> Spawn(const json& container, const fs::path& termination_host) {
    PathMap paths(*this, container, termination_host);
    std::map<std::string, std::string> variables;
    for (const json& entry : container.value("env", json::array()))
      variables[entry.value("name", "")] = EnvValue(entry);
    std::vector<std::string> argv;
    for (const char* part : {"command", "args"}) {
      for (const json& arg : container.value(part, json::array()))
        argv.push_back(paths.MapArgument(ExpandVariables(arg.get<std::string>(), variables)));
    }
    if (argv.empty())
      return MakeError(ErrorKind::kInvalidArgument, "no command: images here have no entrypoint");
    std::vector<std::string> env = {"PATH=" + (paths.Image() / "usr/local/bin").string() + ":" +
                                    (paths.Image() / "usr/bin").string() + ":" +
                                    (paths.Image() / "bin").string() + ":/usr/bin:/bin"};
    // The last entry of a name wins, as the kubelet has it.
    for (const auto& [name, value] : variables)
      env.push_back(name + "=" + paths.MapArgument(value));
    sys::SpawnOptions options;
    options.argv = std::move(argv);
    options.env = std::move(env);
    options.working_dir = paths.Map(container.value("workingDir", "/"));
    if (!fs::exists(options.working_dir)) options.working_dir = dir_.string();
    options.output_path = (dir_ / (container.value("name", "") + ".log")).string();
    return sys::Subprocess::Spawn(options);
  }

  struct Exit {
    int code = 0;
    std::string reason;
  };

  // Runs until the process ends or the Pod is deleted (SIGTERM, then SIGKILL after the grace
  // period) or a fault strikes.
  Exit Supervise(sys::Subprocess& process, bool main) {
    std::optional<std::chrono::steady_clock::time_point> kill_at;
    for (;;) {
      if (auto code = process.TryWait()) return {*code, *code == 0 ? "Completed" : "Error"};
      if (main && (fault_ == "oom" || fault_ == "evict" || fault_ == "node-lost")) {
        process.Signal(SIGKILL);
        process.Wait();
        return {137, fault_ == "oom" ? "OOMKilled" : "Error"};
      }
      if (Stopping() && !kill_at) {
        process.Signal(SIGTERM);
        kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(grace_seconds_.load());
      }
      if (kill_at && std::chrono::steady_clock::now() >= *kill_at) process.Signal(SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // What a kubelet reports as the image it ran, resolved to a digest: here, of the image's name.
  static std::string ImageId(const json& container) {
    std::string image = container.value("image", "");
    return "berth-test-node://" + image + "@sha256:" + crypto::Sha256Hex(image);
  }

  static json Terminated(const json& container, const Exit& exit, const std::string& message,
                         const std::string& started) {
    json terminated = {{"exitCode", exit.code},
                       {"reason", exit.reason},
                       {"startedAt", started},
                       {"finishedAt", Now()}};
    if (!message.empty()) terminated["message"] = message;
    return {{"name", container.value("name", "")},
            {"image", container.value("image", "")},
            {"imageID", ImageId(container)},
            {"ready", false},
            {"restartCount", 0},
            {"state", {{"terminated", terminated}}}};
  }

  std::string TerminationMessage(const fs::path& file) {
    auto text = sys::ReadFile(file);
    if (!text) return "";
    if (text->size() > kTerminationMessageBytes) text->resize(kTerminationMessageBytes);
    return *text;
  }

  static json Waiting(const json& container, const char* reason) {
    return {{"name", container.value("name", "")},
            {"image", container.value("image", "")},
            {"ready", false},
            {"restartCount", 0},
            {"state", {{"waiting", {{"reason", reason}}}}}};
  }

  bool RunInitContainers() {
    json inits = pod_["spec"].value("initContainers", json::array());
    json containers = pod_["spec"].value("containers", json::array());
    json init_statuses = json::array(), main_statuses = json::array();
    for (const json& c : inits) init_statuses.push_back(Waiting(c, "PodInitializing"));
    for (const json& c : containers) main_statuses.push_back(Waiting(c, "PodInitializing"));
    PatchStatus({{"phase", "Pending"},
                 {"hostIP", "127.0.0.1"},
                 {"podIP", ip_},
                 {"startTime", Now()},
                 {"conditions",
                  {{{"type", "PodScheduled"}, {"status", "True"}},
                   {{"type", "Initialized"}, {"status", "False"}}}},
                 {"initContainerStatuses", init_statuses},
                 {"containerStatuses", main_statuses}});
    for (size_t i = 0; i < inits.size(); ++i) {
      std::string started = Now();
      fs::path termination = dir_ / (inits[i].value("name", "") + ".termination-log");
      auto process = Spawn(inits[i], termination);
      Exit exit = process ? Supervise(*process, false) : Exit{128, "StartError"};
      init_statuses[i] =
          Terminated(inits[i], exit,
                     process ? TerminationMessage(termination) : process.error().message, started);
      if (exit.code != 0) {
        PatchStatus({{"phase", "Failed"}, {"initContainerStatuses", init_statuses}});
        return false;
      }
      PatchStatus({{"initContainerStatuses", init_statuses}});
      if (Stopping()) return false;
    }
    return true;
  }

  void RunMain() {
    json containers = pod_["spec"].value("containers", json::array());
    const json& main = containers[0];  // berth's Pods have one; more are not played here
    fs::path termination = dir_ / (main.value("name", "") + ".termination-log");
    std::string started = Now();
    auto process = Spawn(main, termination);
    if (!process) {
      PatchStatus({{"phase", "Failed"},
                   {"containerStatuses",
                    {Terminated(main, {128, "StartError"}, process.error().message, started)}}});
      return;
    }
    started_ = true;
    // A TCP readiness probe is played as the kubelet does: Ready once the port accepts.
    const int probe_port = main.value("readinessProbe", json::object())
                               .value("tcpSocket", json::object())
                               .value("port", 0);
    auto running = [&](bool ready) {
      const char* status = ready ? "True" : "False";
      PatchStatus({{"phase", "Running"},
                   {"conditions",
                    {{{"type", "PodScheduled"}, {"status", "True"}},
                     {{"type", "Initialized"}, {"status", "True"}},
                     {{"type", "ContainersReady"}, {"status", status}},
                     {{"type", "Ready"}, {"status", status}}}},
                   {"containerStatuses",
                    {{{"name", main.value("name", "")},
                      {"image", main.value("image", "")},
                      {"ready", ready},
                      {"started", true},
                      {"restartCount", 0},
                      {"state", {{"running", {{"startedAt", started}}}}}}}}});
    };
    if (probe_port != 0) {
      running(false);
      while (!Stopping() && process->Running() && !AcceptsTcp(ip_, probe_port))
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    running(true);
    Exit exit = Supervise(*process, true);
    if (fault_ == "node-lost") {
      // What the node lifecycle controller and the taint manager do to a Pod of a lost node.
      PatchStatus({{"conditions",
                    {{{"type", "Ready"}, {"status", "False"}, {"reason", "NodeLost"}},
                     {{"type", "DisruptionTarget"},
                      {"status", "True"},
                      {"reason", "DeletionByTaintManager"}}}}});
      auto deleted = api_.Delete(kPods, ns_, name_, {.grace_period_seconds = 0});
      (void)deleted;
      gone_ = true;
      return;
    }
    json status = {
        {"phase", exit.code == 0 ? "Succeeded" : "Failed"},
        {"containerStatuses", {Terminated(main, exit, TerminationMessage(termination), started)}}};
    if (fault_ == "evict") {
      status["reason"] = "Evicted";
      status["message"] = "The node was low on resource: memory.";
    }
    PatchStatus(status);
  }

  // The kubelet's last word on a Pod deleted gracefully: remove it for good.
  void FinishDeletion() {
    if (!Stopping() || gone_) return;
    auto deleted =
        api_.Delete(kPods, ns_, name_, {.grace_period_seconds = 0, .precondition_uid = uid_});
    (void)deleted;
  }

  kube::KubeApi& api_;
  const TestNodeAgentOptions& options_;
  json pod_;
  std::string ns_, name_, uid_, fault_;
  std::string ip_;  // the Pod's own loopback address
  fs::path dir_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> gone_{false};
  std::atomic<int> grace_seconds_{30};
  std::atomic<bool> started_{false};
};

class TestNodeAgentImpl final : public TestNodeAgent {
 public:
  TestNodeAgentImpl(kube::KubeApi& api, TestNodeAgentOptions options)
      : api_(api), options_(std::move(options)), informer_(api_, kPods, {}) {
    informer_.AddHandler([this](const std::string& type, const json& pod) { OnPod(type, pod); });
  }

  ~TestNodeAgentImpl() override {
    informer_.Stop();
    std::map<std::string, Worker> workers;
    {
      MutexLock lock(mutex_);
      workers.swap(workers_);
    }
    for (auto& [uid, worker] : workers) worker.pod->ForceStop();
    for (auto& [uid, worker] : workers) worker.thread.join();
  }

  Result<void> Begin() {
    informer_.Start();
    if (!informer_.WaitForSync(std::chrono::seconds(60)))
      return MakeError(ErrorKind::kUnavailable, "the test node agent cannot list Pods");
    return {};
  }

  int PodsStarted() const override {
    MutexLock lock(mutex_);
    int started = 0;
    for (const auto& [uid, worker] : workers_) started += worker.pod->Started() ? 1 : 0;
    return started;
  }

 private:
  struct Worker {
    std::unique_ptr<PodWorker> pod;
    std::thread thread;
  };

  void OnPod(const std::string& type, const json& pod) {
    const json& metadata = pod["metadata"];
    std::string uid = metadata.value("uid", "");
    std::string node = pod["spec"].value("nodeName", "");
    if (type == "DELETED") {
      MutexLock lock(mutex_);
      if (auto it = workers_.find(uid); it != workers_.end()) it->second.pod->ForceStop();
      return;
    }
    if (node.empty()) {
      json binding = {
          {"apiVersion", "v1"},
          {"kind", "Binding"},
          {"metadata", {{"name", metadata.value("name", "")}}},
          {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", options_.node_name}}}};
      auto bound = api_.CreateSubresource(kPods, metadata.value("namespace", ""),
                                          metadata.value("name", ""), "binding", binding);
      (void)bound;  // bound meanwhile, or deleted: the next event says
      return;
    }
    if (node != options_.node_name) return;
    MutexLock lock(mutex_);
    auto it = workers_.find(uid);
    if (it == workers_.end()) {
      if (pod["status"].value("phase", "") == "Succeeded" ||
          pod["status"].value("phase", "") == "Failed")
        return;  // finished before this agent started
      Worker worker{std::make_unique<PodWorker>(api_, options_, pod), {}};
      PodWorker* raw = worker.pod.get();
      worker.thread = std::thread([raw] { raw->Run(); });
      it = workers_.emplace(uid, std::move(worker)).first;
    }
    if (metadata.contains("deletionTimestamp"))
      it->second.pod->RequestStop(metadata.value("deletionGracePeriodSeconds", 30));
  }

  kube::KubeApi& api_;
  TestNodeAgentOptions options_;
  mutable Mutex mutex_;
  std::map<std::string, Worker> workers_ GUARDED_BY(mutex_);
  kube::Informer informer_;
};

}  // namespace

Result<std::unique_ptr<TestNodeAgent>> TestNodeAgent::Start(kube::KubeApi& api,
                                                            TestNodeAgentOptions options) {
  auto agent = std::make_unique<TestNodeAgentImpl>(api, std::move(options));
  if (auto begun = agent->Begin(); !begun) return begun.error();
  return std::unique_ptr<TestNodeAgent>(std::move(agent));
}

}  // namespace berth::testenv
