#include "controller_world.h"

#include <thread>

#include "cli/body.h"
#include "kube_test_cluster.h"
#include "role_bound_client.h"
#include "test_tools.h"

namespace berth::controller {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr kube::ResourceKind kCrds{"apiextensions.k8s.io/v1", "CustomResourceDefinition",
                                   "customresourcedefinitions", false};

}  // namespace

Result<void> InstallCrd(kube::KubeApi& api, const fs::path& file) {
  auto text = sys::ReadFile(file);
  if (!text) return text.error();
  auto crd = cli::YamlToJson(*text);
  if (!crd) return crd.error();
  auto made = api.Create(kCrds, "", *crd);
  if (!made && made.error().kind != ErrorKind::kAlreadyExists) return made.error();
  const std::string name = (*crd)["metadata"]["name"];
  for (int i = 0; i < 100; ++i) {  // test setup: a CRD is served once Established
    auto got = api.Get(kCrds, "", name);
    if (got) {
      for (const json& c : (*got)["status"].value("conditions", json::array()))
        if (c["type"] == "Established" && c["status"] == "True") return {};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return MakeError(ErrorKind::kDeadlineExceeded, "CRD " + name + " was not established");
}

namespace {

// An image folder for the node agent: the runner, the pinned tofu and the provider mirror (the
// node agent's Pods see paths inside their image). No kubeconfig: runners need no API access.
Result<void> BuildImage(const fs::path& root) {
  auto tofu = testenv::TestTool("BERTH_TEST_TOFU");
  if (!tofu) return tofu.error();
  auto mirror = testenv::TestTool("BERTH_TEST_PROVIDER_MIRROR");
  if (!mirror) return mirror.error();
  fs::create_directories(root / "usr/local/bin");
  fs::create_symlink(*tofu, root / "usr/local/bin/tofu");
  fs::create_symlink(BERTH_RUNNER_BIN, root / "runner");
  fs::create_symlink(*mirror, root / "mirror");
  return {};
}

// The real node's runner image: scripts/images' runner with the test provider's mirror under
// /berth/providers (the runner's --providers is $BERTH_PROVIDERS).
Result<std::string> PushRunnerWithProviders(const testenv::RealNode& node) {
  auto mirror = testenv::TestTool("BERTH_TEST_PROVIDER_MIRROR");
  if (!mirror) return mirror.error();
  auto layer = sys::TempDir::Create("runner-providers");
  if (!layer) return layer.error();
  const fs::path provider = "registry.opentofu.org/berth/berthtest";
  fs::create_directories(layer->Path() / "providers" / provider);
  fs::copy(fs::path(*mirror) / provider, layer->Path() / "providers" / provider,
           fs::copy_options::recursive);
  auto pushed = node.PushRunnerWith(layer->Path(), "controller");
  if (!pushed) return pushed.error();
  return pushed->reference;
}

Result<void> PrepareRealNode(ControllerWorld& world, const std::string& ns) {
  auto node = testenv::RealNode::Shared();
  if (!node) return node.error();
  world.real_node = *node;
  for (const std::string& name : {ns, std::string("berth-system")})
    if (auto ok = world.real_node->PrepareNamespace(*world.api, name); !ok) return ok;
  auto restricted = world.api->Patch(
      kube::kNamespaces, "", ns, kube::PatchType::kMerge,
      {{"metadata", {{"labels", {{"pod-security.kubernetes.io/enforce", "restricted"}}}}}},
      "berth-test");
  if (!restricted) return restricted.error();
  auto image = PushRunnerWithProviders(*world.real_node);
  if (!image) return image.error();
  world.image_ref = *image;
  return {};
}

// The stack's repository: examples/file under stacks/file, as a bare repository to serve.
Result<void> MakeRepository(const fs::path& root) {
  const fs::path work = root / "repo";
  fs::create_directories(work / "stacks");
  fs::copy(testenv::SourceDir() / "examples/file", work / "stacks/file",
           fs::copy_options::recursive);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-q", "-m", "file stack"}}) {
    if (auto ok = testenv::Git(work, args); !ok) return ok.error();
  }
  if (auto ok = testenv::Git(root, {"clone", "-q", "--bare", "repo", "srv/infra.git"}); !ok)
    return ok.error();
  return {};
}

}  // namespace

Result<std::unique_ptr<ControllerWorld>> ControllerWorld::Create(const std::string& ns, Node node) {
  auto world = std::make_unique<ControllerWorld>();
  auto cluster = testenv::KubeTestCluster::Shared();
  if (!cluster) return cluster.error();
  auto admin = (*cluster)->AdminClient();
  if (!admin) return admin.error();
  world->api = std::move(*admin);
  if (auto ok = InstallCrd(
          *world->api, testenv::SourceDir() / "deploy/kubernetes/crds/terraforms.berth.dev.yaml");
      !ok)
    return ok.error();
  auto dir = sys::TempDir::Create("controller-world");
  if (!dir) return dir.error();
  world->dir.emplace(std::move(*dir));
  const fs::path root = world->dir->Path();
  world->kubeconfig = (*cluster)->AdminKubeconfig();
  if (node == Node::kReal) {
    if (auto ok = PrepareRealNode(*world, ns); !ok) return ok.error();
  } else {
    for (const std::string& name : {ns, std::string("berth-system")})
      if (auto ok = (*cluster)->CreateNamespace(name); !ok) return ok.error();
    world->image = root / "image";
    if (auto ok = BuildImage(world->image); !ok) return ok.error();
    fs::create_directories(root / "pods");
    auto agent = testenv::TestNodeAgent::Start(
        *world->api, {.images = {{kTestImage, world->image}}, .work_dir = root / "pods"});
    if (!agent) return agent.error();
    world->agent = std::move(*agent);
  }
  if (auto ok = MakeRepository(root); !ok) return ok.error();
  auto git = testenv::GitHttpServer::Start({.root = root / "srv"});
  if (!git) return git.error();
  world->git = std::move(*git);
  auto pki = RunnerPki::LoadOrCreate(*world->api, SystemClock::Instance(), {.ns = "berth-system"});
  if (!pki) return pki.error();
  world->pki = std::move(*pki);
  auto state = StateServer::Start(*world->api, *world->pki, SystemClock::Instance(),
                                  {.address = world->real_node ? "0.0.0.0" : "127.0.0.1",
                                   .port = 0,
                                   .host = world->StateHost()});
  if (!state) return state.error();
  world->state = std::move(*state);
  auto settings = launch::ControllerRunnerSettings({{"KUBERNETES_IMAGE", world->image_ref}});
  if (!settings) return settings.error();
  world->settings = *settings;
  return world;
}

std::string ControllerWorld::StateHost() const {
  return real_node != nullptr ? testenv::RealNode::kPodGateway : "127.0.0.1";
}

std::vector<std::string> ControllerWorld::StateFlags() const {
  return {real_node != nullptr ? "--state-address=0.0.0.0" : "--state-address=127.0.0.1",
          "--state-port=0", "--state-host=" + StateHost()};
}

json ControllerWorld::FileStack(const std::string& name, const std::string& ns,
                                const fs::path& world, json runner) const {
  runner["podTemplate"]["spec"]["env"] = {
      {{"name", "BERTH_PROVIDERS"}, {"value", real_node ? "/berth/providers" : "/mirror"}}};
  return {{"apiVersion", "berth.dev/v1alpha1"},
          {"kind", "Terraform"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"git", {{"url", git->Url("infra.git")}, {"ref", {{"branch", "main"}}}}},
            {"path", "stacks/file"},
            {"vars",
             {{{"name", "path"}, {"value", world.string()}},
              {{"name", "content"}, {"value", "from git"}}}},
            {"writeOutputsToSecret", {{"name", name + "-outputs"}}},
            {"runner", runner}}}};
}

}  // namespace berth::controller
