// kubeconfig and in-cluster configuration: which server, which TLS material, which token, and
// a clear error naming the field for everything berth refuses.
#include "kube/kube_config.h"

#include <gtest/gtest.h>

#include "core/base64.h"
#include "sys/files.h"

namespace berth::kube {
namespace {

namespace fs = std::filesystem;

std::string Config(const std::string& cluster, const std::string& user,
                   const std::string& extra_contexts = "") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: main\n"
         "clusters:\n- name: c\n  cluster:\n" +
         cluster + "users:\n- name: u\n  user:\n" + user +
         "contexts:\n- name: main\n  context: {cluster: c, user: u, namespace: team}\n" +
         extra_contexts;
}

const std::string kServer = "    server: https://10.0.0.1:6443/\n";

TEST(KubeConfig, ReadsServerCaAndClientCertificateFromData) {
  std::string user = "    client-certificate-data: " + Base64Encode("CERT") +
                     "\n    client-key-data: " + Base64Encode("KEY") + "\n";
  auto config = KubeConfig::Parse(
      Config(kServer + "    certificate-authority-data: " + Base64Encode("CA") + "\n", user), "/",
      {});
  ASSERT_TRUE(config) << config.error().ToString();
  EXPECT_EQ(config->Server(), "https://10.0.0.1:6443");
  EXPECT_EQ(config->Tls().ca_pem, "CA");
  EXPECT_EQ(config->Tls().client_cert_pem, "CERT");
  EXPECT_EQ(config->Tls().client_key_pem, "KEY");
  EXPECT_EQ(config->Namespace(), "team");
  EXPECT_EQ(*config->Token(), "");
}

TEST(KubeConfig, ResolvesRelativeFilesAgainstTheConfigFolder) {
  auto dir = sys::TempDir::Create("kubeconfig");
  ASSERT_TRUE(dir);
  ASSERT_TRUE(sys::WriteFileAtomic(dir->Path() / "ca.pem", "CA FILE"));
  ASSERT_TRUE(sys::WriteFileAtomic(
      dir->Path() / "kubeconfig",
      Config(kServer + "    certificate-authority: ca.pem\n", "    token: abc\n")));
  auto config = KubeConfig::FromFiles({dir->Path() / "kubeconfig"}, {});
  ASSERT_TRUE(config) << config.error().ToString();
  EXPECT_EQ(config->Tls().ca_pem, "CA FILE");
  EXPECT_EQ(*config->Token(), "abc");
}

TEST(KubeConfig, ReReadsATokenFileWhenItRotates) {
  auto dir = sys::TempDir::Create("kubeconfig");
  ASSERT_TRUE(dir);
  ASSERT_TRUE(sys::WriteFileAtomic(dir->Path() / "token", "first\n"));
  auto config = KubeConfig::Parse(Config(kServer, "    tokenFile: token\n"), dir->Path(), {});
  ASSERT_TRUE(config) << config.error().ToString();
  EXPECT_EQ(*config->Token(), "first");
  ASSERT_TRUE(sys::WriteFileAtomic(dir->Path() / "token", "second"));
  EXPECT_EQ(*config->Token(), "second");
}

TEST(KubeConfig, PicksTheNamedContext) {
  std::string text =
      Config(kServer, "    token: t\n", "- name: other\n  context: {cluster: c2, user: u}\n");
  // A second cluster in a second file: merged, first file wins on names.
  auto dir = sys::TempDir::Create("kubeconfig");
  ASSERT_TRUE(dir);
  ASSERT_TRUE(sys::WriteFileAtomic(dir->Path() / "a", text));
  ASSERT_TRUE(sys::WriteFileAtomic(
      dir->Path() / "b",
      "current-context: ignored\nclusters:\n- name: c2\n  cluster: {server: https://second:443}\n"
      "- name: c\n  cluster: {server: https://not-the-first:1}\n"));
  auto first = KubeConfig::FromFiles({dir->Path() / "a", dir->Path() / "b"}, {});
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_EQ(first->Server(), "https://10.0.0.1:6443");
  auto second = KubeConfig::FromFiles({dir->Path() / "a", dir->Path() / "b"}, {.context = "other"});
  ASSERT_TRUE(second) << second.error().ToString();
  EXPECT_EQ(second->Server(), "https://second:443");
}

struct Refusal {
  std::string name;
  std::string document;
  std::string message;  // a fragment of the error
};

class KubeConfigRefuses : public ::testing::TestWithParam<Refusal> {};

TEST_P(KubeConfigRefuses, WithAnErrorThatNamesTheField) {
  auto config = KubeConfig::Parse(GetParam().document, "/", {});
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(config.error().message.find(GetParam().message), std::string::npos)
      << config.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Documents, KubeConfigRefuses,
    ::testing::Values(
        Refusal{"insecure",
                Config(kServer + "    insecure-skip-tls-verify: true\n", "    token: t\n"),
                "clusters[c].cluster.insecure-skip-tls-verify is refused"},
        Refusal{"exec",
                Config(kServer,
                       "    exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}\n"),
                "users[u].user.exec is not supported"},
        Refusal{"basic", Config(kServer, "    username: a\n    password: b\n"),
                "users[u].user.username is not supported"},
        Refusal{"no_server", Config("    proxy-url: http://p\n", "    token: t\n"),
                "clusters[c].cluster.server must be an http(s) URL"},
        Refusal{"bad_base64",
                Config(kServer + "    certificate-authority-data: '%%'\n", "    token: t\n"),
                "certificate-authority-data must be base64"},
        Refusal{"cert_without_key",
                Config(kServer, "    client-certificate-data: " + Base64Encode("C") + "\n"),
                "client-certificate and client-key go together"},
        Refusal{"missing_file",
                Config(kServer + "    certificate-authority: /nonexistent/ca\n", "    token: t\n"),
                "certificate-authority names a file that cannot be read"},
        Refusal{"no_context", "clusters: []\n", "no context"},
        Refusal{"unknown_context", "current-context: x\n", "context \"x\" is not defined"},
        Refusal{"not_yaml", "clusters: [", "not valid YAML"},
        Refusal{"clusters_not_list", "clusters: 3\n", "clusters must be a list"}),
    [](const auto& row) { return row.param.name; });

TEST(KubeConfig, AllowsInsecureTlsOnlyWhenAskedByName) {
  auto config =
      KubeConfig::Parse(Config(kServer + "    insecure-skip-tls-verify: true\n", "    token: t\n"),
                        "/", {.allow_insecure_tls = true});
  ASSERT_TRUE(config) << config.error().ToString();
  EXPECT_TRUE(config->Tls().insecure_skip_verify);
}

TEST(KubeConfig, InClusterReadsTheServiceAccountFolder) {
  auto dir = sys::TempDir::Create("account");
  ASSERT_TRUE(dir);
  ASSERT_TRUE(sys::WriteFileAtomic(dir->Path() / "ca.crt", "CA"));
  ASSERT_TRUE(sys::WriteFileAtomic(dir->Path() / "token", "tok\n"));
  ASSERT_TRUE(sys::WriteFileAtomic(dir->Path() / "namespace", "runners"));
  Environment env = {{"KUBERNETES_SERVICE_HOST", "fd00::1"},
                     {"KUBERNETES_SERVICE_PORT", "443"},
                     {"BERTH_SERVICE_ACCOUNT_DIR", dir->Path().string()}};
  auto config = KubeConfig::Load(env, {});
  ASSERT_TRUE(config) << config.error().ToString();
  EXPECT_EQ(config->Server(), "https://[fd00::1]:443");
  EXPECT_EQ(config->Tls().ca_pem, "CA");
  EXPECT_EQ(*config->Token(), "tok");
  EXPECT_EQ(config->Namespace(), "runners");
  ASSERT_TRUE(sys::WriteFileAtomic(dir->Path() / "token", "rotated"));
  EXPECT_EQ(*config->Token(), "rotated");
}

TEST(KubeConfig, OutsideAPodWithoutKubeconfigSaysWhatIsMissing) {
  auto config = KubeConfig::Load({}, {});
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().kind, ErrorKind::kFailedPrecondition);
  EXPECT_NE(config.error().message.find("KUBECONFIG"), std::string::npos);
}

TEST(KubeConfig, KubeconfigListsItsFilesAndSkipsEmptyEntries) {
  EXPECT_TRUE(KubeconfigFiles({}).empty());
  EXPECT_TRUE(KubeconfigFiles({{"KUBECONFIG", ""}}).empty());
  EXPECT_EQ(KubeconfigFiles({{"KUBECONFIG", "/a:/b::/c:"}}),
            (std::vector<fs::path>{"/a", "/b", "/c"}));
}

// Another cluster by its server: https and a CA certificate, or no token goes there at all; the
// token comes from its file (re-read) or its source, whichever is given.
TEST(KubeConfig, AServerIsHttpsWithACaAndItsTokenComesFromItsFileOrSource) {
  const std::string ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  auto plain = KubeConfig::ForServer({.server = "http://10.0.0.1:6443", .ca_pem = ca});
  ASSERT_FALSE(plain);
  EXPECT_NE(plain.error().message.find("https"), std::string::npos);
  auto no_ca = KubeConfig::ForServer({.server = "https://10.0.0.1:6443", .ca_pem = "MIIB"});
  ASSERT_FALSE(no_ca);
  EXPECT_NE(no_ca.error().message.find("certificate_authority"), std::string::npos);

  auto dir = sys::TempDir::Create("server-access");
  ASSERT_TRUE(dir);
  ASSERT_TRUE(sys::WriteFileAtomic(dir->Path() / "token", "from-file\n"));
  auto by_file = KubeConfig::ForServer(
      {.server = "https://10.0.0.1:6443/", .ca_pem = ca, .token_file = dir->Path() / "token"});
  ASSERT_TRUE(by_file) << by_file.error().ToString();
  EXPECT_EQ(by_file->Server(), "https://10.0.0.1:6443");
  EXPECT_EQ(by_file->Tls().ca_pem, ca);
  EXPECT_EQ(*by_file->Token(), "from-file");
  int asked = 0;
  auto by_source = KubeConfig::ForServer(
      {.server = "https://10.0.0.1:6443", .ca_pem = ca, .token_source = [&asked]() {
         return Result<std::string>("minted-" + std::to_string(++asked));
       }});
  ASSERT_TRUE(by_source) << by_source.error().ToString();
  EXPECT_EQ(*by_source->Token(), "minted-1");
  EXPECT_EQ(*by_source->Token(), "minted-2") << "asked on every request";
}

}  // namespace
}  // namespace berth::kube
