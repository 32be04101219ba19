// Start-up: store, first organization, API, server; then wait for the stop flag.
#include "server/daemon.h"

#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "core/base64.h"
#include "core/mutex.h"
#include "core/time_format.h"
#include "crypto/jws.h"
#include "kube/kube_config.h"
#include "launch/kubernetes/kubernetes_launcher.h"
#include "launch/local/local_launcher.h"
#include "net/http_server.h"
#include "server/api/api.h"
#include "server/change_feed.h"
#include "server/dispatch/dispatcher.h"
#include "server/gateway/run_gateway.h"
#include "server/metrics.h"
#include "server/statebackend/state_backend.h"
#include "store/store.h"
#include "sys/files.h"

namespace berth::server {

namespace fs = std::filesystem;

fs::path AdminTokenPath(const fs::path& data_dir) { return data_dir / "admin-token"; }
fs::path UrlFilePath(const fs::path& data_dir) { return data_dir / "berthd.url"; }

fs::path FindRunnerBesideSelf() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  for (const fs::path& candidate :
       {self.parent_path() / "runner", self.parent_path().parent_path() / "runner" / "runner"}) {
    if (fs::is_regular_file(candidate, ec)) return candidate;
  }
  return {};
}

namespace {

Result<std::pair<std::string, int>> SplitListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return MakeError(ErrorKind::kInvalidArgument, "--listen: must be ADDRESS:PORT", listen);
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  try {
    int port = std::stoi(listen.substr(colon + 1));
    if (port < 0 || port > 65535) throw std::out_of_range("port");
    return std::pair{host, port};
  } catch (...) {
    return MakeError(ErrorKind::kInvalidArgument, "--listen: the port must be 0 to 65535", listen);
  }
}

// The first start makes organization `default` and an admin token, written where only the
// owner can read it. Later starts change nothing.
// The admin token's secret when this start made the organization (the first start).
Result<std::optional<std::string>> Bootstrap(store::Store& store, const fs::path& data_dir) {
  auto created = store.CreateOrganization("default");
  if (!created) return created.error();
  if (!*created) return std::optional<std::string>();  // its tokens are whoever made it's
  auto secret = IssueToken(store, "default", "admin token made at the first start");
  if (!secret) return secret.error();
  if (auto written = sys::WriteFileAtomic(AdminTokenPath(data_dir), *secret + "\n"); !written)
    return written.error();
  return std::optional<std::string>(*secret);
}

// What an embedded berthd starts with, so that `berth deploy DIR --env E` works at once: a
// local runner with berth's own state, project and environment type `default`, and a rule that
// gives the runner every environment of that project (other projects choose their own). Made
// through the API, by its rules, as the admin would.
Result<void> SeedEmbeddedDefaults(const Api& api, const std::string& admin_token) {
  const std::pair<const char*, const char*> objects[] = {
      {"/orgs/default/runners",
       R"({"id":"local","runner_configuration":{"type":"local"},)"
       R"("state_storage_configuration":{"type":"berth"},"description":"runs on this machine"})"},
      {"/orgs/default/runner-rules",
       R"({"id":"default","runner_id":"local","project_id":"default"})"},
      {"/orgs/default/projects", R"({"id":"default"})"},
      {"/orgs/default/env-types", R"({"id":"default"})"},
  };
  for (const auto& [path, body] : objects) {
    net::ServerRequest request{.method = "POST", .target = path, .body = body};
    request.headers = {{"authorization", "Bearer " + admin_token},
                       {"content-type", "application/json"}};
    auto response = api.Handle(request);
    if (response.status != 201)
      return MakeError(ErrorKind::kInternal, std::string("cannot make the embedded defaults: ") +
                                                 path + ": " + response.body);
  }
  return {};
}

// The run tokens' signing key, in the database: kept across restarts (a run's token outlives
// one) and shared by every berthd on the database (a token one minted is good at the others).
// A key an older berthd left in its data folder is taken over, so its runs' tokens stay good.
Result<crypto::Ed25519Signer> LoadOrCreateRunTokenSigner(store::Store& store,
                                                         const fs::path& data_dir) {
  fs::path legacy = data_dir / "run-token.key";
  std::string candidate;
  std::error_code ec;
  if (fs::exists(legacy, ec)) {
    auto seed = sys::ReadFile(legacy);
    if (!seed) return seed.error();
    candidate = *seed;
  } else {
    auto fresh = crypto::Ed25519Signer::Generate();
    if (!fresh) return fresh.error();
    candidate = fresh->Seed();
  }
  auto stored = store.EnsureSharedSecret("run-token-seed", Base64Encode(candidate));
  if (!stored) return stored.error();
  auto seed = Base64Decode(*stored);
  if (!seed) return seed.error();
  auto signer = crypto::Ed25519Signer::FromSeed(*seed);
  if (signer) fs::remove(legacy, ec);
  return signer;
}

// One line per request: what was asked and how it ended, never a header, a query or a body (a
// token is in none of what is logged). Runners' own traffic (gateway, state backend) is
// verbose: a running deployment ships its log twice a second.
void LogRequest(sys::Logger& log, const net::ServerRequest& r, const net::ServerResponse& response,
                std::chrono::duration<double> took) {
  bool runner_traffic = StateBackend::Serves(r.target) || RunGateway::Serves(r.target);
  if (runner_traffic && response.status < 400) {
    log.V(1, "request",
          {{"method", r.method},
           {"route", response.route},
           {"status", std::to_string(response.status)}});
    return;
  }
  std::string org;
  if (r.target.starts_with("/orgs/")) {
    std::string_view rest = std::string_view(r.target).substr(6);
    org = std::string(rest.substr(0, rest.find_first_of("/?")));
  }
  log.Info("request", {{"method", r.method},
                       {"route", response.route.empty() ? "unmatched" : response.route},
                       {"status", std::to_string(response.status)},
                       {"ms", std::to_string(static_cast<int64_t>(took.count() * 1000))},
                       {"org", org},
                       {"remote", r.remote}});
}

}  // namespace

Result<void> RunDaemon(const DaemonOptions& options, const std::atomic<bool>& stop,
                       const std::function<void(const std::string&, const fs::path&)>& on_ready) {
  std::error_code ec;
  fs::create_directories(options.data_dir, ec);
  if (ec)
    return MakeError(ErrorKind::kFailedPrecondition, "--data-dir: " + ec.message(),
                     options.data_dir);
  fs::permissions(options.data_dir, fs::perms::owner_all, ec);
  std::string database = options.database.empty()
                             ? "sqlite:" + (options.data_dir / "berth.db").string()
                             : options.database;
  auto store = store::OpenStore(database, 8);
  if (!store) return store.error();
  auto first_admin_token = Bootstrap(**store, options.data_dir);
  if (!first_admin_token) return first_admin_token.error();

  auto listen = SplitListen(options.listen);
  if (!listen) return listen.error();
  auto signer = LoadOrCreateRunTokenSigner(**store, options.data_dir);
  if (!signer) return signer.error();
  StateBackend states((*store)->States(), signer->PublicKey(), UnixSecondsNow);
  ChangeFeed dispatch_feed, log_feed;  // what wakes the dispatcher; what wakes log followers
  BerthdMetrics metrics;               // before all that reports to it
  sys::Logger log(options.log_format, options.verbosity);
  RunGateway gateway(**store,
                     {.public_key = signer->PublicKey(), .now = UnixSecondsNow, .feed = &log_feed});
  // The listening port may be chosen by the kernel: the dispatcher learns berthd's URL once
  // the server is up, and is made only then.
  std::unique_ptr<Dispatcher> dispatcher;
  std::unique_ptr<launch::LocalLauncher> local;
  // What callbacks reach: set once the dispatcher is made (its own methods are thread-safe).
  // A pointer, not a lock: a launcher reports from inside Dispatcher::Tick's Launch call.
  std::atomic<Dispatcher*> live{nullptr};
  ApiOptions api_options{.requests_per_second = options.rate_limit,
                         .burst = options.rate_limit * 2,
                         .allow_server_paths = options.embedded};
  // berthd runs deployments when it has a launcher: local runners, Kubernetes, or both.
  if (!options.runner_binary.empty() || options.kubernetes) {
    api_options.cancel_run = [&](const std::string& org, const std::string& id) -> Result<void> {
      Dispatcher* d = live.load();
      if (d == nullptr) return MakeError(ErrorKind::kUnavailable, "berthd is starting");
      return d->Cancel(org, id);
    };
    api_options.approve = [&](const std::string& org, const std::string& id,
                              const std::string& hash,
                              const std::string& who) -> Result<store::Deployment> {
      Dispatcher* d = live.load();
      if (d == nullptr) return MakeError(ErrorKind::kUnavailable, "berthd is starting");
      return d->Approve(org, id, hash, who);
    };
  }
  api_options.queued = &dispatch_feed;
  api_options.logs = &log_feed;
  Api api(**store, api_options);
  if (options.embedded && *first_admin_token) {
    if (auto seeded = SeedEmbeddedDefaults(api, **first_admin_token); !seeded)
      return seeded.error();
  }
  // The cluster's client before the server: /metrics reads its request counts.
  std::unique_ptr<kube::KubeClient> kube_client;
  std::optional<launch::KubernetesSettings> kube_settings;
  if (options.kubernetes) {
    kube::Environment env = kube::CurrentEnvironment();
    auto config = kube::KubeConfig::Load(env, {});
    if (!config) return config.error();
    auto settings = launch::KubernetesSettings::FromEnvironment(env);
    if (!settings) return settings.error();
    kube_settings = std::move(*settings);
    kube_client = kube::MakeKubeClient(std::move(*config));
  }
  auto route = [&](const net::ServerRequest& r) -> net::ServerResponse {
    if (r.target == "/metrics" && r.method == "GET") {
      net::ServerResponse response;
      response.headers["Content-Type"] = "text/plain; version=0.0.4";
      response.body = metrics.Scrape(**store, kube_client ? kube_client->MetricsText() : "");
      response.route = "/metrics";
      return response;
    }
    if (StateBackend::Serves(r.target)) {
      net::ServerResponse response = states.Handle(r);
      response.route = std::string(kStatePathPrefix) + "{key}";
      return response;
    }
    if (RunGateway::Serves(r.target)) {
      net::ServerResponse response = gateway.Handle(r);
      metrics.GatewayBytes("in", r.body.size());
      metrics.GatewayBytes("out", response.body.size());
      return response;
    }
    return api.Handle(r);
  };
  net::ServerOptions server_options;
  server_options.address = listen->first;
  server_options.port = listen->second;
  server_options.tls_cert_file = options.tls_cert_file;
  server_options.tls_key_file = options.tls_key_file;
  server_options.allow_plain_http = options.allow_plain_http;
  server_options.max_body_bytes = 64 << 20;  // a state file; the API's own bodies are small
  auto server = net::StartHttpServer(server_options, [&](const net::ServerRequest& r) {
    auto started = std::chrono::steady_clock::now();
    net::ServerResponse response = route(r);
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
    metrics.Request(response.route, r.method, response.status, took);
    LogRequest(log, r, response, took);
    return response;
  });
  if (!server) return server.error();
  bool tls = !options.tls_cert_file.empty();
  std::string host =
      listen->first.find(':') != std::string::npos ? "[" + listen->first + "]" : listen->first;
  std::string url = (tls ? "https://" : "http://") + host + ":" + std::to_string((*server)->Port());
  if (auto written = sys::WriteFileAtomic(UrlFilePath(options.data_dir), url + "\n"); !written) {
    return written.error();
  }
  std::string runner_url = options.advertise_url.empty() ? url : options.advertise_url;
  auto on_run_end = [&](const std::string& run, const launch::RunOutcome& outcome) {
    if (Dispatcher* d = live.load()) d->OnRunEnd(run, outcome);
    log_feed.Notify();       // followers of its log end now
    dispatch_feed.Notify();  // its environment is free for the next deployment
  };
  auto on_run_event = [&](const std::string& run, const launch::LaunchEvent& event) {
    if (Dispatcher* d = live.load()) d->OnRunEvent(run, event);
    log_feed.Notify();  // followers see the event's line
  };
  Launchers launchers;
  std::unique_ptr<launch::KubernetesLauncher> kubernetes;
  if (kube_client) {
    kubernetes = std::make_unique<launch::KubernetesLauncher>(
        *kube_client, std::move(*kube_settings), SystemClock::Instance(), on_run_end, on_run_event);
    if (auto started = kubernetes->Start(); !started) return started.error();
    for (const char* type : {"kubernetes", "kubernetes-gke", "kubernetes-eks", "kubernetes-aks"})
      launchers[type] = kubernetes.get();
  }
  if (!options.runner_binary.empty()) {
    launch::LocalLauncherOptions local_options{.runner_binary = options.runner_binary,
                                               .runs_dir = options.data_dir / "runs",
                                               .max_parallel = options.max_parallel_runs};
    // What every local run may see of berthd's environment: where programs are, the TF CLI
    // configuration (provider mirrors), and the cluster of kubernetes state storage; nothing
    // else.
    for (const char* name :
         {"PATH", "TF_CLI_CONFIG_FILE", "TF_PLUGIN_CACHE_DIR", "KUBE_CONFIG_PATH"}) {
      if (const char* value = std::getenv(name))
        local_options.environment.push_back(std::string(name) + "=" + value);
    }
    local = std::make_unique<launch::LocalLauncher>(local_options, on_run_end, on_run_event);
    launchers["local"] = local.get();
  }
  if (!launchers.empty()) {
    dispatcher =
        std::make_unique<Dispatcher>(**store, launchers, *signer,
                                     DispatcherOptions{.url = runner_url,
                                                       .run_deadline = options.run_deadline,
                                                       .providers = options.providers,
                                                       .metrics = &metrics,
                                                       .log = &log});
    live = dispatcher.get();  // before Recover: the runs it re-attaches may end at once
    if (auto recovered = dispatcher->Recover(); !recovered) return recovered.error();
  }
  log.Info("serving", {{"url", url},
                       {"database", database.starts_with("postgres") ? "postgres" : "sqlite"},
                       {"local_runners", local ? "on" : "off"},
                       {"kubernetes", kubernetes ? "on" : "off"}});
  on_ready(url, AdminTokenPath(options.data_dir));
  // A queued deployment wakes the loop at once; the timeout bounds how late a stop, a deadline
  // or another berthd's deployment is seen.
  while (!stop.load()) {
    uint64_t seen = dispatch_feed.Generation();
    if (dispatcher) dispatcher->Tick();
    dispatch_feed.WaitPast(seen, std::chrono::milliseconds(200));
  }
  if (kubernetes) kubernetes->Stop();
  (*server)->Stop();
  fs::remove(UrlFilePath(options.data_dir), ec);
  return {};
}

}  // namespace berth::server
