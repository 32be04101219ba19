// deploy/helm/berth without a node: `helm lint`, what `helm template` renders for each value,
// the schema's refusals, and every rendered object created with a server-side dry run by the
// real test apiserver (admission included: the berthd Pod passes Pod Security `restricted`; the
// ServiceMonitor meets the Prometheus Operator's own CRD).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli/body.h"
#include "kube/resource.h"
#include "kube_test_cluster.h"
#include "net/http_client.h"
#include "sys/files.h"
#include "sys/subprocess.h"
#include "test_tools.h"

namespace berth {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path Chart() { return testenv::SourceDir() / "deploy/helm/berth"; }

sys::Completed Helm(std::vector<std::string> args) {
  auto helm = testenv::TestTool("BERTH_TEST_HELM");
  EXPECT_TRUE(helm) << helm.error().message;
  if (!helm) return {.exit_code = -1};
  args.insert(args.begin(), helm->string());
  auto done = sys::RunToCompletion({.argv = std::move(args)});
  EXPECT_TRUE(done);
  return done ? *done : sys::Completed{.exit_code = -1};
}

// The chart's objects for these --set values, in the order helm prints them.
std::vector<json> Render(const std::vector<std::string>& sets, const std::string& ns = "berth") {
  std::vector<std::string> args = {"template", "t", Chart().string(), "--namespace", ns};
  for (const std::string& set : sets) {
    args.push_back("--set");
    args.push_back(set);
  }
  sys::Completed rendered = Helm(args);
  EXPECT_EQ(rendered.exit_code, 0) << rendered.output;
  std::vector<json> objects;
  std::string text = "\n" + rendered.output;
  for (size_t at = 0; at != std::string::npos;) {
    size_t next = text.find("\n---", at + 1);
    std::string document = text.substr(at, next == std::string::npos ? next : next - at);
    if (document.starts_with("\n---")) document.erase(0, 4);
    auto object = cli::YamlToJson(document);
    EXPECT_TRUE(object) << document;
    if (object && object->is_object() && object->contains("kind")) objects.push_back(*object);
    at = next;
  }
  return objects;
}

json Find(const std::vector<json>& objects, const std::string& kind) {
  for (const json& o : objects) {
    if (o["kind"] == kind) return o;
  }
  ADD_FAILURE() << "no " << kind << " rendered";
  return json::object();
}

json BerthdContainer(const std::vector<json>& objects) {
  for (const json& o : objects) {
    if (o["kind"] == "Deployment" && o["metadata"]["name"] == "t-berth")
      return o["spec"]["template"]["spec"]["containers"][0];
  }
  ADD_FAILURE() << "no berthd Deployment rendered";
  return json::object();
}

std::string EnvValue(const json& container, const std::string& name) {
  for (const json& e : container.value("env", json::array())) {
    if (e["name"] == name) return e.value("value", "");
  }
  return "<unset>";
}

TEST(HelmChart, LintsCleanAndItsSchemaRefusesWhatItWouldIgnore) {
  sys::Completed lint = Helm({"lint", "--strict", Chart().string()});
  EXPECT_EQ(lint.exit_code, 0) << lint.output;
  for (const auto& [set, named] : std::vector<std::pair<std::string, std::string>>{
           {"unknownValue=1", "unknownValue"},
           {"ephemeralRunner.memory=lots", "/ephemeralRunner/memory"},
           {"ephemeralRunner.pullPolicy=Sometimes", "/ephemeralRunner/pullPolicy"},
           {"networkPolicy.allowMetadata=true", "allowMetadata"},
           {"replicaCount=2", "replicaCount"},
           {"controller.concurrency=0", "/controller/concurrency"},
           {"controller.watchNamespaces=a", "watchNamespaces"},
           {"controller.runnerNamespaces={Bad_Name}", "/controller/runnerNamespaces/0"},
           {"service.nodePort=30001", "service.nodePort"}}) {
    sys::Completed refused = Helm({"template", "t", Chart().string(), "--set", set});
    EXPECT_NE(refused.exit_code, 0) << set;
    EXPECT_NE(refused.output.find(named), std::string::npos) << set << ": " << refused.output;
  }
}

TEST(HelmChart, EveryLauncherValueBecomesItsKubernetesSetting) {
  json container = BerthdContainer(Render({
      "ephemeralRunner.image.repository=registry.example.com/berth/runner",
      "ephemeralRunner.image.tag=1.2.3",
      "ephemeralRunner.pullPolicy=IfNotPresent",
      "ephemeralRunner.namespace=runs",
      "ephemeralRunner.serviceAccount=runner-sa",
      "ephemeralRunner.cpu=500m",
      "ephemeralRunner.memory=1Gi",
      "ephemeralRunner.startupGracePeriod=2m",
      "ephemeralRunner.imagePullSecrets={pull-a,pull-b}",
      "ephemeralRunner.backendUrl=http://berth.example:8080",
      "ephemeralRunner.allowStackImageOverride=true",
  }));
  EXPECT_EQ(EnvValue(container, "KUBERNETES_IMAGE"), "registry.example.com/berth/runner:1.2.3");
  EXPECT_EQ(EnvValue(container, "KUBERNETES_IMAGE_PULL_POLICY"), "IfNotPresent");
  EXPECT_EQ(EnvValue(container, "KUBERNETES_NAMESPACE"), "runs");
  EXPECT_EQ(EnvValue(container, "KUBERNETES_SERVICE_ACCOUNT"), "runner-sa");
  EXPECT_EQ(EnvValue(container, "KUBERNETES_CPU"), "500m");
  EXPECT_EQ(EnvValue(container, "KUBERNETES_MEMORY"), "1Gi");
  EXPECT_EQ(EnvValue(container, "KUBERNETES_STARTUP_GRACE_PERIOD"), "2m");
  EXPECT_EQ(EnvValue(container, "KUBERNETES_IMAGE_PULL_SECRETS"), "pull-a,pull-b");
  EXPECT_EQ(EnvValue(container, "KUBERNETES_CONTAINER_BACKEND_URL"), "http://berth.example:8080");
  EXPECT_EQ(EnvValue(container, "KUBERNETES_ALLOW_STACK_IMAGE_OVERRIDE"), "true");

  // The seed's defaults: a tag image is pulled Always, in the release's namespace.
  json defaults = BerthdContainer(Render({}));
  EXPECT_EQ(EnvValue(defaults, "KUBERNETES_IMAGE_PULL_POLICY"), "Always");
  EXPECT_EQ(EnvValue(defaults, "KUBERNETES_NAMESPACE"), "berth");
  EXPECT_EQ(EnvValue(defaults, "KUBERNETES_IMAGE"), "berth/runner:0.1.0");
  EXPECT_EQ(EnvValue(defaults, "KUBERNETES_SERVICE_ACCOUNT"), "<unset>");
  EXPECT_EQ(EnvValue(defaults, "KUBERNETES_ALLOW_STACK_IMAGE_OVERRIDE"), "false");
  // The key's old place (top level) is still read, deprecated.
  EXPECT_EQ(EnvValue(BerthdContainer(Render({"allowStackImageOverride=true"})),
                     "KUBERNETES_ALLOW_STACK_IMAGE_OVERRIDE"),
            "true");
}

bool HasArg(const json& container, const std::string& arg) {
  for (const json& a : container["args"]) {
    if (a == arg) return true;
  }
  return false;
}

// Nothing accepted and ignored: every other value lands where it says it does.
TEST(HelmChart, EveryOtherValueReachesItsObject) {
  const std::string anti_affinity_topology =
      std::string("affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]") +
      ".podAffinityTerm.topologyKey=kubernetes.io/hostname";
  std::vector<json> objects = Render(
      {"image.repository=registry.example.com/berthd",
       "image.tag=9.9.9",
       "image.pullPolicy=Always",
       "imagePullSecrets[0].name=pull",
       "persistence.size=5Gi",
       "persistence.storageClass=fast",
       "persistence.accessModes={ReadWriteOncePod}",
       "service.type=NodePort",
       "service.port=9090",
       "service.nodePort=30001",
       "tls.secretName=berth-tls",
       "advertiseUrl=https://berth.example",
       "runDeadlineSeconds=600",
       "keepDeploymentsFor=48h",
       "logFormat=text",
       "resources.limits.memory=2Gi",
       "probes.liveness.periodSeconds=7",
       "probes.readiness.failureThreshold=9",
       "podAnnotations.team=platform",
       "nodeSelector.pool=infra",
       "tolerations[0].key=infra",
       "tolerations[0].operator=Exists",
       "affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight=1",
       anti_affinity_topology,
       "adminToken.existingSecret=my-admin",
       "serviceMonitor.enabled=true",
       "serviceMonitor.interval=15s",
       "serviceMonitor.labels.release=prom"});
  json pod = Find(objects, "Deployment")["spec"]["template"];
  json container = pod["spec"]["containers"][0];
  EXPECT_EQ(container["image"], "registry.example.com/berthd:9.9.9");
  EXPECT_EQ(container["imagePullPolicy"], "Always");
  EXPECT_EQ(pod["spec"]["imagePullSecrets"], json::parse(R"([{"name": "pull"}])"));
  for (const char* arg : {"--tls-cert=/etc/berth/tls/tls.crt", "--tls-key=/etc/berth/tls/tls.key",
                          "--advertise-url=https://berth.example", "--run-deadline-seconds=600",
                          "--keep-deployments-for=48h", "--log-format=text"})
    EXPECT_TRUE(HasArg(container, arg)) << arg << " in " << container["args"].dump();
  EXPECT_FALSE(HasArg(container, "--allow-plain-http")) << "with TLS";
  EXPECT_EQ(container["livenessProbe"]["httpGet"]["scheme"], "HTTPS");
  EXPECT_EQ(container["livenessProbe"]["periodSeconds"], 7);
  EXPECT_EQ(container["readinessProbe"]["failureThreshold"], 9);
  EXPECT_EQ(container["resources"]["limits"]["memory"], "2Gi");
  EXPECT_EQ(pod["metadata"]["annotations"]["team"], "platform");
  EXPECT_EQ(pod["spec"]["nodeSelector"]["pool"], "infra");
  EXPECT_EQ(pod["spec"]["tolerations"][0]["key"], "infra");
  EXPECT_EQ(pod["spec"]["affinity"]["podAntiAffinity"]
               ["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"],
            1);
  bool token_from_mine = false;
  for (const json& volume : pod["spec"]["volumes"]) {
    if (volume["name"] == "admin-token")
      token_from_mine = volume["secret"]["secretName"] == "my-admin";
  }
  EXPECT_TRUE(token_from_mine) << pod["spec"]["volumes"].dump();
  for (const json& o : objects) EXPECT_NE(o["kind"], "Secret") << "the chart made a token anyway";
  json claim = Find(objects, "PersistentVolumeClaim")["spec"];
  EXPECT_EQ(claim["resources"]["requests"]["storage"], "5Gi");
  EXPECT_EQ(claim["storageClassName"], "fast");
  EXPECT_EQ(claim["accessModes"], json::array({"ReadWriteOncePod"}));
  json service = Find(objects, "Service")["spec"];
  EXPECT_EQ(service["type"], "NodePort");
  EXPECT_EQ(service["ports"][0]["port"], 9090);
  EXPECT_EQ(service["ports"][0]["nodePort"], 30001);
  json monitor = Find(objects, "ServiceMonitor");
  EXPECT_EQ(monitor["metadata"]["labels"]["release"], "prom");
  EXPECT_EQ(monitor["spec"]["endpoints"][0]["interval"], "15s");
  EXPECT_EQ(monitor["spec"]["endpoints"][0]["scheme"], "https");

  // Without a claim the data folder is an emptyDir, and no claim is made.
  std::vector<json> ephemeral = Render({"persistence.enabled=false"});
  for (const json& o : ephemeral) EXPECT_NE(o["kind"], "PersistentVolumeClaim");
  json ephemeral_pod = Find(ephemeral, "Deployment")["spec"]["template"]["spec"];
  for (const json& volume : ephemeral_pod["volumes"]) {
    if (volume["name"] == "data") {
      EXPECT_TRUE(volume.contains("emptyDir")) << volume.dump();
    }
  }
}

TEST(HelmChart, ADatabaseUrlComesFromItsSecretAndNeverAppearsInThePodSpec) {
  std::vector<json> objects =
      Render({"database.existingSecret=berth-db", "replicaCount=3", "persistence.enabled=false"});
  json container = BerthdContainer(objects);
  for (const json& arg : container["args"])
    EXPECT_EQ(arg.get<std::string>().find("--database"), std::string::npos) << arg;
  bool from_secret = false;
  for (const json& e : container["env"]) {
    if (e["name"] == "BERTH_DATABASE")
      from_secret = e["valueFrom"]["secretKeyRef"] == json{{"name", "berth-db"}, {"key", "url"}};
  }
  EXPECT_TRUE(from_secret) << container["env"].dump();
  json deployment = Find(objects, "Deployment");
  EXPECT_EQ(deployment["spec"]["replicas"], 3);
  EXPECT_FALSE(deployment["spec"].contains("strategy")) << "rolling when berthds share PostgreSQL";
}

// The chart's Role is the one deploy/kubernetes documents and the launcher tests bind: they
// must not drift apart.
TEST(HelmChart, TheLauncherRoleIsDeployKubernetesRole) {
  auto text = sys::ReadFile(testenv::SourceDir() / "deploy/kubernetes/launcher-rbac.yaml");
  ASSERT_TRUE(text);
  auto documented = cli::YamlToJson(text->substr(0, text->find("\n---\n")));
  ASSERT_TRUE(documented);
  json role = Find(Render({"ephemeralRunner.namespace=runs"}), "Role");
  EXPECT_EQ(role["rules"], (*documented)["rules"]);
  EXPECT_EQ(role["metadata"]["namespace"], "runs");
}

// The first document of a file under deploy/kubernetes, as JSON.
json ShippedManifest(const std::string& file) {
  auto text = sys::ReadFile(testenv::SourceDir() / "deploy/kubernetes" / file);
  EXPECT_TRUE(text) << file;
  if (!text) return json();
  auto parsed = cli::YamlToJson(text->substr(0, text->find("\n---\n")));
  EXPECT_TRUE(parsed) << file;
  return parsed ? *parsed : json();
}

TEST(HelmChart, TheControllerIsOffByDefaultAndBringsTheShippedCrdAndRole) {
  for (const json& object : Render({})) {
    EXPECT_NE(object["kind"], "CustomResourceDefinition");
    EXPECT_NE(object["kind"], "ClusterRole");
  }
  std::vector<json> objects = Render({"controller.enabled=true"});
  const json crd = Find(objects, "CustomResourceDefinition");
  EXPECT_EQ(crd["spec"], ShippedManifest("crds/terraforms.berth.dev.yaml")["spec"]);
  EXPECT_EQ(crd["metadata"]["annotations"]["helm.sh/resource-policy"], "keep")
      << "uninstalling must not delete every Terraform object";
  EXPECT_EQ(Find(objects, "ClusterRole")["rules"],
            ShippedManifest("controller-rbac.yaml")["rules"]);
  const json binding = Find(objects, "ClusterRoleBinding");
  EXPECT_EQ(binding["subjects"][0]["name"], "t-berth-controller");
  EXPECT_EQ(binding["subjects"][0]["namespace"], "berth");
}

TEST(HelmChart, EveryControllerValueReachesItsFlagOrSetting) {
  std::vector<json> objects = Render(
      {"controller.enabled=true", "controller.replicaCount=2", "controller.watchNamespace=infra",
       "controller.concurrency=8", "controller.runnerCreationTimeout=60",
       "controller.destroyTimeout=0", "controller.resources.limits.memory=300Mi",
       "image.repository=registry.example.com/berthd", "image.tag=9.9.9",
       "ephemeralRunner.image.repository=registry.example.com/runner",
       "ephemeralRunner.image.tag=1.2.3", "ephemeralRunner.pullPolicy=IfNotPresent",
       "ephemeralRunner.serviceAccount=tf", "ephemeralRunner.cpu=500m",
       "ephemeralRunner.memory=1Gi", "ephemeralRunner.imagePullSecrets={pull}"});
  json deployment;
  for (const json& object : objects)
    if (object["kind"] == "Deployment" && object["metadata"]["name"] == "t-berth-controller")
      deployment = object;
  ASSERT_TRUE(deployment.is_object());
  EXPECT_EQ(deployment["spec"]["replicas"], 2);
  const json container = deployment["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["image"], "registry.example.com/berthd:9.9.9");
  EXPECT_EQ(container["command"], json::array({"/usr/bin/berth-controller"}));
  for (const char* flag : {"--watch-namespace=infra", "--concurrency=8",
                           "--runner-creation-timeout=60", "--destroy-timeout=0"})
    EXPECT_TRUE(HasArg(container, flag)) << flag << " in " << container["args"].dump();
  // The runner Pods' settings it shares with berthd's launcher, and not the launcher's namespace
  // nor its ServiceAccount (the controller's runners keep their state in the Kubernetes API).
  for (const char* name : {"KUBERNETES_IMAGE", "KUBERNETES_IMAGE_PULL_POLICY", "KUBERNETES_CPU",
                           "KUBERNETES_MEMORY", "KUBERNETES_IMAGE_PULL_SECRETS"})
    EXPECT_EQ(EnvValue(container, name), EnvValue(BerthdContainer(objects), name)) << name;
  EXPECT_EQ(EnvValue(container, "KUBERNETES_SERVICE_ACCOUNT"), "tf-runner");
  EXPECT_EQ(EnvValue(container, "KUBERNETES_IMAGE"), "registry.example.com/runner:1.2.3");
  EXPECT_EQ(EnvValue(container, "KUBERNETES_NAMESPACE"), "<unset>")
      << "each runner Pod lives beside its object";
  EXPECT_EQ(container["resources"]["limits"]["memory"], "300Mi");
}

// Runner Pods keep state through the controller's state service: their account holds no rights
// and mounts no token, and the controller serves state on the Service name its certificate
// carries.
TEST(HelmChart, EachRunnerNamespaceGetsTheRunnersAccountWithNoRights) {
  for (const json& object : Render({"controller.enabled=true"}))
    EXPECT_NE(object["metadata"]["name"], "stacks") << "no runner namespace listed";
  std::vector<json> objects =
      Render({"controller.enabled=true", "controller.runnerNamespaces={infra,apps}",
              "controller.runnerServiceAccount=stacks"});
  std::vector<std::string> seen;
  for (const json& object : objects) {
    const std::string kind = object["kind"];
    if (kind != "ServiceAccount" && kind != "Role" && kind != "RoleBinding") continue;
    const std::string ns = object["metadata"]["namespace"];
    if (ns == "berth") continue;  // berthd's and the controller's own
    seen.push_back(kind + "/" + ns);
    if (kind == "ServiceAccount") {
      EXPECT_EQ(object["metadata"]["name"], "stacks");
      EXPECT_EQ(object.value("automountServiceAccountToken", true), false);
    }
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"ServiceAccount/apps", "ServiceAccount/infra"}));
  json controller;
  json service;
  for (const json& object : objects) {
    if (object["kind"] == "Deployment" && object["metadata"]["name"] == "t-berth-controller")
      controller = object["spec"]["template"]["spec"]["containers"][0];
    if (object["kind"] == "Service" && object["metadata"]["name"] == "t-berth-controller")
      service = object["spec"];
  }
  EXPECT_EQ(EnvValue(controller, "KUBERNETES_SERVICE_ACCOUNT"), "stacks");
  const json args = controller["args"];
  EXPECT_NE(std::find(args.begin(), args.end(), "--state-host=t-berth-controller.berth.svc"),
            args.end())
      << args.dump();
  EXPECT_NE(std::find(args.begin(), args.end(), "--state-port=9443"), args.end());
  ASSERT_TRUE(service.is_object()) << "the state service's Service";
  EXPECT_EQ(service["ports"][0]["port"], 9443);
  EXPECT_EQ(service["selector"]["app.kubernetes.io/component"], "controller");
}

// On by default: runner Pods, berthd's and the controller's in each of its runner namespaces,
// reach no cloud metadata address (IPv4 or IPv6) unless allowed, nor the cluster ranges they
// are given; the controller's runners take the controller's connection alone.
TEST(HelmChart, NetworkPoliciesKeepRunnersOffTheMetadataAddressesUnlessAllowed) {
  auto runner_policies = [](const std::vector<json>& objects) {
    std::map<std::string, json> policies;  // namespace -> spec
    for (const json& o : objects) {
      if (o["kind"] == "NetworkPolicy" && o["metadata"]["name"] == "t-berth-runners")
        policies[o["metadata"]["namespace"]] = o["spec"];
    }
    return policies;
  };
  auto blocks = [](const json& spec) {
    std::map<std::string, json> excepted;  // cidr -> its except list
    for (const json& rule : spec["egress"]) {
      for (const json& to : rule["to"]) {
        if (to.contains("ipBlock"))
          excepted[to["ipBlock"]["cidr"]] = to["ipBlock"].value("except", json::array());
      }
    }
    return excepted;
  };
  auto defaults = runner_policies(Render({}));
  ASSERT_EQ(defaults.size(), 1u) << "on by default, for berthd's runner namespace";
  auto blocked = blocks(defaults.begin()->second);
  EXPECT_EQ(blocked["0.0.0.0/0"],
            json::parse(R"(["169.254.169.254/32","169.254.170.2/32","100.100.100.200/32"])"));
  EXPECT_EQ(blocked["::/0"], json::parse(R"(["fd00:ec2::254/128"])"));
  EXPECT_EQ(defaults.begin()->second["ingress"], json::array()) << "berthd's runners take none";

  auto allowed = runner_policies(Render({"networkPolicy.allowMetadataAddress=true"}));
  EXPECT_EQ(allowed.begin()->second.dump().find("169.254"), std::string::npos);
  EXPECT_EQ(allowed.begin()->second.dump().find("fd00:ec2"), std::string::npos);

  auto ranges =
      runner_policies(Render({"networkPolicy.clusterCidrs={10.0.0.0/8,fd00:10::/64}",
                              "controller.enabled=true", "controller.runnerNamespaces={stacks}"}));
  ASSERT_EQ(ranges.size(), 2u) << "berthd's runner namespace and the controller's";
  for (const auto& [ns, spec] : ranges) {
    SCOPED_TRACE(ns);
    auto excepted = blocks(spec);
    EXPECT_EQ(excepted["0.0.0.0/0"].back(), "10.0.0.0/8");
    EXPECT_EQ(excepted["::/0"].back(), "fd00:10::/64");
  }
  bool reaches_state = false;
  for (const json& rule : ranges.at("stacks")["egress"]) {
    const json ports = rule.value("ports", json::array());
    if (!ports.empty() && ports[0].value("port", json()) == 9443)
      reaches_state = rule["to"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] ==
                      "controller";
  }
  EXPECT_TRUE(reaches_state) << "the controller's runners reach its state service";
  const json& controllers = ranges.at("stacks")["ingress"];
  ASSERT_EQ(controllers.size(), 1u);
  EXPECT_EQ(controllers[0]["ports"][0]["port"], 30000);
  EXPECT_EQ(controllers[0]["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"],
            "controller");

  EXPECT_TRUE(runner_policies(Render({"networkPolicy.enabled=false"})).empty());
  sys::Completed refused =
      Helm({"template", "t", Chart().string(), "--set", "networkPolicy.clusterCidrs={everything}"});
  EXPECT_NE(refused.exit_code, 0) << "a range that is not a CIDR";
}

// Every object the chart renders, with every optional part on, is accepted by the real
// apiserver (server-side dry run: validation and admission, nothing stored); the berthd Pod is
// admitted where Pod Security `restricted` is enforced.
TEST(HelmChart, EveryRenderedObjectPassesTheApiserversDryRun) {
  auto cluster = testenv::KubeTestCluster::Shared();
  ASSERT_TRUE(cluster) << cluster.error().ToString();
  const std::string ns = "helm-dry-run";
  ASSERT_TRUE((*cluster)->CreateNamespace(ns));
  auto http = net::MakeCurlHttpClient((*cluster)->AdminTls());
  auto send = [&](const std::string& method, const std::string& path, const json& body) {
    net::HttpRequest request{.method = method, .url = (*cluster)->Url() + path};
    request.headers = {
        {"Content-Type", method == "PATCH" ? "application/merge-patch+json" : "application/json"}};
    if (!body.is_null()) request.body = body.dump();
    auto response = http->Send(request);
    EXPECT_TRUE(response);
    return response ? *response : net::HttpResponse{};
  };
  send("PATCH", "/api/v1/namespaces/" + ns,
       {{"metadata", {{"labels", {{"pod-security.kubernetes.io/enforce", "restricted"}}}}}});

  // The Prometheus Operator's own CRD, so that the ServiceMonitor meets its real schema.
  auto crd_file = testenv::TestTool("BERTH_TEST_SERVICEMONITOR_CRD");
  ASSERT_TRUE(crd_file) << crd_file.error().message;
  auto crd_text = sys::ReadFile(*crd_file);
  ASSERT_TRUE(crd_text);
  auto crd = cli::YamlToJson(*crd_text);
  ASSERT_TRUE(crd) << crd.error().ToString();
  const kube::ResourceKind crds{"apiextensions.k8s.io/v1", "CustomResourceDefinition",
                                "customresourcedefinitions", false};
  auto made = send("POST", crds.CollectionPath(""), *crd);
  ASSERT_TRUE(made.status == 201 || made.status == 409) << made.body;
  bool established = false;
  for (int i = 0; i < 100 && !established; ++i) {
    auto got = send("GET", crds.ObjectPath("", "servicemonitors.monitoring.coreos.com"), {});
    json conditions = json::parse(got.body, nullptr, false)["status"].value("conditions", json());
    for (const json& c : conditions.is_array() ? conditions : json::array())
      established = established || (c["type"] == "Established" && c["status"] == "True");
    if (!established) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(established);

  const std::vector<kube::ResourceKind> kinds = {
      kube::kServiceAccounts,
      kube::kSecrets,
      kube::kRoles,
      kube::kRoleBindings,
      {"v1", "PersistentVolumeClaim", "persistentvolumeclaims"},
      {"v1", "Service", "services"},
      {"apps/v1", "Deployment", "deployments"},
      {"networking.k8s.io/v1", "NetworkPolicy", "networkpolicies"},
      {"monitoring.coreos.com/v1", "ServiceMonitor", "servicemonitors"},
      crds,
      kube::kClusterRoles,
      kube::kClusterRoleBindings};
  std::vector<json> objects =
      Render({"networkPolicy.clusterCidrs={10.0.0.0/8,fd00:10::/64}", "tls.secretName=berth-tls",
              "serviceMonitor.enabled=true", "controller.enabled=true",
              "controller.runnerNamespaces={" + ns + "}"},
             ns);
  ASSERT_GE(objects.size(), 10U);
  for (const json& object : objects) {
    const kube::ResourceKind* kind = nullptr;
    for (const auto& k : kinds) {
      if (object["kind"] == k.kind && object["apiVersion"] == k.api_version) kind = &k;
    }
    ASSERT_NE(kind, nullptr) << "no dry run for " << object["kind"];
    auto created = send("POST", kind->CollectionPath(ns) + "?dryRun=All", object);
    EXPECT_EQ(created.status, 201) << object["kind"] << ": " << created.body;
  }
  // A Pod's admission looks its service account up: those are created for real. Then the Pods
  // of berthd and of berth-controller are admitted.
  int pods = 0;
  for (const json& object : objects) {
    if (object["kind"] == "ServiceAccount") {
      ASSERT_EQ(send("POST", kube::kServiceAccounts.CollectionPath(ns), object).status, 201);
    }
  }
  for (const json& object : objects) {
    if (object["kind"] != "Deployment") continue;
    json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", object["metadata"]["name"].get<std::string>() + "-admission"}}},
        {"spec", object["spec"]["template"]["spec"]}};
    auto admitted = send("POST", kube::kPods.CollectionPath(ns) + "?dryRun=All", pod);
    EXPECT_EQ(admitted.status, 201) << admitted.body;
    ++pods;
  }
  EXPECT_EQ(pods, 2);
}

}  // namespace
}  // namespace berth
