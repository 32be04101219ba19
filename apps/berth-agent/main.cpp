// berth-agent: a kubernetes-agent runner's agent (docs/agents.md). `berth-agent run` polls
// berthd and launches its runs as Jobs in this cluster; `berth-agent keygen` makes its key.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>

#include "agent/agent.h"
#include "core/ed25519_key.h"
#include "kube/kube_config.h"
#include "sys/files.h"
#include "sys/logger.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

int Fail(const std::string& message) {
  berth::sys::Logger().Error("berth-agent stopped", {{"why", message}});
  return 1;
}

// A new key pair: the private half to a file only its owner reads, the public half printed as
// the runner configuration takes it.
int Keygen(const std::string& out) {
  auto signer = berth::crypto::Ed25519Signer::Generate();
  if (!signer) return Fail(signer.error().ToString());
  if (auto written = berth::sys::WriteFileAtomic(out, berth::Ed25519PrivateKeyPem(signer->Seed()),
                                                 std::filesystem::perms::owner_read);
      !written)
    return Fail(written.error().ToString());
  std::string pem = berth::Ed25519PublicKeyPem(signer->PublicKey());
  std::printf("%s", pem.c_str());
  std::fprintf(stderr,
               "berth-agent: private key written to %s; give the runner the public key above:\n"
               "  berth create runner ID --set-yaml runner_configuration.key='<the PEM above>'\n",
               out.c_str());
  return 0;
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "berth-agent";
  return name;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"berth-agent: launches a kubernetes-agent runner's runs as Jobs in this cluster"};
  app.require_subcommand(1);
  auto* keygen = app.add_subcommand("keygen", "make a key pair for a kubernetes-agent runner");
  std::string key_out = "berth-agent.key";
  keygen->add_option("--out", key_out, "where the private key (PKCS#8 PEM) goes");

  auto* run = app.add_subcommand("run", "poll berthd and launch the runner's runs");
  berth::agent::AgentIdentity identity{.org = "default"};
  std::string key_file, ca_file, client_cert, client_key;
  berth::agent::AgentOptions options{.name = HostName(), .version = BERTH_VERSION};
  run->add_option("--url", identity.url, "berthd's URL")->envname("BERTH_URL")->required();
  run->add_option("--org", identity.org, "the runner's organization")->envname("BERTH_ORG");
  run->add_option("--runner", identity.runner, "the kubernetes-agent runner's id")
      ->envname("BERTH_RUNNER")
      ->required();
  run->add_option("--key-file", key_file, "the agent's Ed25519 private key (PKCS#8 PEM)")
      ->envname("BERTH_AGENT_KEY_FILE")
      ->required();
  run->add_option("--name", options.name, "this agent's name, shown by berth get runner")
      ->envname("POD_NAME");
  run->add_option("--ca-file", ca_file, "trust only this CA (PEM) for berthd")
      ->envname("BERTH_CA_FILE");
  run->add_option("--client-cert", client_cert, "a client certificate (PEM) for a proxy")
      ->envname("BERTH_CLIENT_CERT_FILE");
  auto* key_flag = run->add_option("--client-key", client_key, "its private key (PEM)")
                       ->envname("BERTH_CLIENT_KEY_FILE");
  run->get_option("--client-cert")->needs(key_flag);
  key_flag->needs(run->get_option("--client-cert"));
  CLI11_PARSE(app, argc, argv);
  if (keygen->parsed()) return Keygen(key_out);

  auto pem = berth::sys::ReadFile(key_file);
  if (!pem) return Fail("--key-file: " + pem.error().ToString());
  auto seed = berth::ParseEd25519PrivateKeyPem(*pem);
  if (!seed) return Fail("--key-file: " + seed.error().message);
  auto signer = berth::crypto::Ed25519Signer::FromSeed(*seed);
  if (!signer) return Fail("--key-file: " + signer.error().ToString());
  berth::net::TlsConfig tls;
  for (auto [file, pem_out, flag] :
       {std::tuple{&ca_file, &tls.ca_pem, "--ca-file"},
        std::tuple{&client_cert, &tls.client_cert_pem, "--client-cert"},
        std::tuple{&client_key, &tls.client_key_pem, "--client-key"}}) {
    if (file->empty()) continue;
    auto text = berth::sys::ReadFile(*file);
    if (!text) return Fail(std::string(flag) + ": " + text.error().ToString());
    *pem_out = *text;
  }
  while (identity.url.ends_with('/')) identity.url.pop_back();
  berth::agent::AgentClient client(identity, std::move(*signer),
                                   berth::net::MakeCurlHttpClient(tls));

  berth::kube::Environment env = berth::kube::CurrentEnvironment();
  auto settings = berth::launch::KubernetesSettings::FromEnvironment(env);
  if (!settings) return Fail(settings.error().ToString());
  auto config = berth::kube::KubeConfig::Load(env, {});
  if (!config) return Fail(config.error().ToString());
  auto kube = berth::kube::MakeKubeClient(std::move(*config));

  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  berth::agent::Agent agent(client, *kube, std::move(*settings), identity.runner, options);
  if (auto started = agent.Start(g_stop); !started)
    return g_stop.load() ? 0 : Fail(started.error().ToString());
  berth::sys::Logger().Info("polling", {{"agent", options.name},
                                        {"url", identity.url},
                                        {"runner", identity.org + "/" + identity.runner}});
  agent.RunUntil(g_stop);
  return 0;
}
