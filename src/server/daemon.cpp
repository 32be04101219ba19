// Start-up: store, first organization, API, server; then wait for the stop flag.
#include "server/daemon.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/base64.h"
#include "core/decimal.h"
#include "core/http_url.h"
#include "core/time_format.h"
#include "crypto/jws.h"
#include "crypto/key_ring.h"
#include "crypto/random.h"
#include "kube/kube_config.h"
#include "launch/kubernetes/cluster_router.h"
#include "launch/kubernetes/kubernetes_launcher.h"
#include "launch/local/local_launcher.h"
#include "net/http_server.h"
#include "server/agents/agent_gateway.h"
#include "server/agents/agent_launcher.h"
#include "server/api/api.h"
#include "server/change_feed.h"
#include "server/dispatch/dispatcher.h"
#include "server/dispatch/s3_states.h"
#include "server/gateway/run_gateway.h"
#include "server/metrics.h"
#include "server/oidc/oidc_issuer.h"
#include "server/replica.h"
#include "server/request_admission.h"
#include "server/retention.h"
#include "server/statebackend/state_backend.h"
#include "server/ui/ui_routes.h"
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

// The port of an http(s) URL (its scheme's when it names none); none for an empty or bad one.
std::optional<uint16_t> PortOf(const std::string& url) {
  auto parsed = HttpUrl::Parse(url);
  if (!parsed) return std::nullopt;
  return static_cast<uint16_t>(parsed->port);
}

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

// The admin token berthd makes has this id: a reset replaces it, whatever its secret was.
constexpr const char* kAdminTokenId = "tok-admin";

fs::path PendingAdminTokenPath(const fs::path& data_dir) {
  return data_dir / "admin-token.pending";
}

// A token file's secret, without the newline written after it.
Result<std::string> ReadSecret(const fs::path& path) {
  auto secret = sys::ReadFile(path);
  if (secret) {
    while (!secret->empty() && secret->back() == '\n') secret->pop_back();
  }
  return secret;
}

// A secret is written to admin-token.pending before the store knows it, and the store's
// transaction decides whether it is the admin token: a start that died in between left a file
// that the next start moves into place (the store took it) or removes (it did not).
Result<void> SettlePendingAdminToken(store::Store& store, const fs::path& data_dir) {
  fs::path pending = PendingAdminTokenPath(data_dir);
  std::error_code ec;
  if (!fs::exists(pending, ec)) return {};
  auto secret = ReadSecret(pending);
  if (!secret) return secret.error();
  auto found = store.FindToken(HashToken(*secret));
  if (!found && found.error().kind != ErrorKind::kNotFound) return found.error();
  if (found)
    fs::rename(pending, AdminTokenPath(data_dir), ec);
  else
    fs::remove(pending, ec);
  if (ec) return MakeError(ErrorKind::kInternal, "cannot settle the admin token: " + ec.message());
  return {};
}

// The first start makes organization `default` and its admin token, written where only the
// owner can read it; later starts change nothing, unless asked to reset the admin token (lost
// or leaked): then the token in the file, if any, is revoked and a new one takes its place.
// The admin token's secret when this start made the organization (the first start).
Result<std::optional<std::string>> Bootstrap(store::Store& store, const fs::path& data_dir,
                                             bool reset_admin_token) {
  if (auto settled = SettlePendingAdminToken(store, data_dir); !settled) return settled.error();
  std::string secret = NewTokenSecret();
  if (auto written = sys::WriteFileAtomic(PendingAdminTokenPath(data_dir), secret + "\n"); !written)
    return written.error();
  store::ApiToken admin{.id = kAdminTokenId,
                        .org_id = "default",
                        .description = "admin token made at the first start"};
  auto made = store.CreateOrganizationWithToken(admin, HashToken(secret));
  if (!made) return made.error();
  if (!*made && reset_admin_token) {
    if (auto old = ReadSecret(AdminTokenPath(data_dir))) {
      auto found = store.FindToken(HashToken(*old));
      if (found && found->id != kAdminTokenId) {
        if (auto revoked = store.DeleteToken(found->org_id, found->id); !revoked)
          return revoked.error();
      }
    }
    admin.description = "admin token reset with --reset-admin-token";
    if (auto put = store.PutToken(admin, HashToken(secret)); !put) return put.error();
  }
  if (!*made && !reset_admin_token) {
    std::error_code ec;
    fs::remove(PendingAdminTokenPath(data_dir), ec);
    return std::optional<std::string>();  // its tokens are whoever made it's
  }
  if (auto settled = SettlePendingAdminToken(store, data_dir); !settled) return settled.error();
  if (!*made) return std::optional<std::string>();
  return std::optional<std::string>(secret);
}

// An admin token whose secret the operator keeps (a Kubernetes Secret mounted as a file):
// every start makes the admin token exactly that secret, so that changing the file and
// restarting rotates it; nothing is written to the data folder. The secret when this start
// made the organization.
Result<std::optional<std::string>> AdoptAdminToken(store::Store& store, const fs::path& file) {
  auto secret = ReadSecret(file);
  if (!secret)
    return MakeError(ErrorKind::kFailedPrecondition,
                     "--admin-token-file: cannot read it: " + secret.error().message,
                     file.string());
  bool printable = std::all_of(secret->begin(), secret->end(),
                               [](unsigned char c) { return c > ' ' && c < 0x7f; });
  if (secret->size() < 32 || !printable)
    return MakeError(ErrorKind::kInvalidArgument,
                     "--admin-token-file: the token must be at least 32 printable characters, "
                     "with no space",
                     file.string());
  store::ApiToken admin{.id = kAdminTokenId,
                        .org_id = "default",
                        .description = "admin token from --admin-token-file"};
  std::string hash = HashToken(*secret);
  auto made = store.CreateOrganizationWithToken(admin, hash);
  if (!made) return made.error();
  if (*made) return std::optional<std::string>(*secret);
  auto found = store.FindToken(hash);
  if (found && found->id == kAdminTokenId) return std::optional<std::string>();
  if (found)
    return MakeError(
        ErrorKind::kInvalidArgument,
        "--admin-token-file: that secret is another token's (" + found->id + "): choose a new one",
        file.string());
  if (found.error().kind != ErrorKind::kNotFound) return found.error();
  if (auto put = store.PutToken(admin, hash); !put) return put.error();
  return std::optional<std::string>();
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
           {"status", std::to_string(response.status)},
           {"ms", std::to_string(static_cast<int64_t>(took.count() * 1000))}});
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

// What berthd needs that may fail to come up, in the order it comes up: the data folder and
// the store (which holds the first admin token and the run-token key), the listening socket
// (bound, not yet serving: its URL is what runners are told), and the cluster's client.
struct Foundations {
  ReplicaIdentity replica;
  std::unique_ptr<store::Store> store;
  std::string installation;                      // shared by every berthd on the database
  std::optional<std::string> first_admin_token;  // set on the first start only
  crypto::Ed25519Signer signer;
  std::unique_ptr<net::HttpServer> server;
  std::string url;
  std::string database_kind;                      // "sqlite" or "postgres", for the log
  std::unique_ptr<kube::KubeClient> kube_client;  // null without --kubernetes
  std::optional<launch::KubernetesSettings> kube_settings;
  std::optional<launch::ClusterMeans> cluster_means;  // with --kubernetes: for runners' clusters
  // Control groups for local runs' limits, or why there are none (with local runs only).
  std::optional<launch::CgroupHost> cgroups;
  std::string cgroups_refusal;
};

// The OpenID Connect issuer's URL (the tokens' iss): the public URL users reach berthd at, else
// the URL it serves on.
std::string IssuerUrl(const DaemonOptions& options, const std::string& served) {
  std::string url = options.public_url.empty() ? served : options.public_url;
  while (url.ends_with('/')) url.pop_back();
  return url;
}

// How long a run token opens anything: no longer than the run may last, and the little a
// stopping runner needs to save its state and send the rest of its log.
std::chrono::seconds RunTokenLifetime(const DaemonOptions& options) {
  return std::chrono::duration_cast<std::chrono::seconds>(options.run_deadline) +
         std::chrono::minutes(5);
}

std::string DatabaseUrl(const DaemonOptions& options) {
  return options.database.empty() ? "sqlite:" + (options.data_dir / "berth.db").string()
                                  : options.database;
}

fs::path EncryptionKeyFile(const DaemonOptions& options) {
  return options.encryption_key_file.empty() ? options.data_dir / "encryption-keys"
                                             : options.encryption_key_file;
}

Result<Foundations> LayFoundations(const DaemonOptions& options) {
  std::error_code ec;
  fs::create_directories(options.data_dir, ec);
  if (ec)
    return MakeError(ErrorKind::kFailedPrecondition, "--data-dir: " + ec.message(),
                     options.data_dir);
  fs::permissions(options.data_dir, fs::perms::owner_all, ec);
  auto replica = ClaimReplicaIdentity(options.data_dir);
  if (!replica) return replica.error();
  std::string database = DatabaseUrl(options);
  auto keys = crypto::KeyRing::OpenOrCreate(EncryptionKeyFile(options));
  if (!keys) return keys.error();
  auto store = store::OpenStore(database, 8, *keys);
  if (!store) return store.error();
  auto first_admin_token = options.admin_token_file.empty()
                               ? Bootstrap(**store, options.data_dir, options.reset_admin_token)
                               : AdoptAdminToken(**store, options.admin_token_file);
  if (!first_admin_token) return first_admin_token.error();
  auto signer = LoadOrCreateRunTokenSigner(**store, options.data_dir);
  if (!signer) return signer.error();
  // Names this installation's Pods (berth.dev/launcher): another installation sharing a
  // namespace never takes them for its own.
  auto installation =
      (*store)->EnsureSharedSecret("installation-id", "berth-" + crypto::RandomId(10));
  if (!installation) return installation.error();

  auto listen = SplitListen(options.listen);
  if (!listen) return listen.error();
  auto server = net::BindHttpServer(
      {.address = listen->first,
       .port = listen->second,
       .tls_cert_file = options.tls_cert_file,
       .tls_key_file = options.tls_key_file,
       .allow_plain_http = options.allow_plain_http,
       .admit = [admission = std::make_shared<RequestAdmission>(**store, signer->PublicKey(),
                                                                SystemClock::Instance())](
                    const net::ServerRequest& head) { return (*admission)(head); }});
  if (!server) return server.error();
  bool tls = !options.tls_cert_file.empty();
  std::string host =
      listen->first.find(':') != std::string::npos ? "[" + listen->first + "]" : listen->first;
  std::string url = (tls ? "https://" : "http://") + host + ":" + std::to_string((*server)->Port());

  Foundations f{.replica = std::move(*replica),
                .store = std::move(*store),
                .installation = std::move(*installation),
                .first_admin_token = std::move(*first_admin_token),
                .signer = std::move(*signer),
                .server = std::move(*server),
                .url = std::move(url),
                .database_kind = database.starts_with("postgres") ? "postgres" : "sqlite"};
  if (!options.runner_binary.empty()) {
    auto cgroups = launch::CgroupHost::Probe();
    if (cgroups) f.cgroups = std::move(*cgroups);
    if (!cgroups) f.cgroups_refusal = cgroups.error().ToString();
  }
  if (options.kubernetes) {
    kube::Environment env = kube::CurrentEnvironment();
    auto config = kube::KubeConfig::Load(env, {});
    if (!config) return config.error();
    auto settings = launch::KubernetesSettings::FromEnvironment(env);
    if (!settings) return settings.error();
    f.kube_settings = std::move(*settings);
    f.kube_client = kube::MakeKubeClient(std::move(*config));
    f.cluster_means = launch::ClusterMeans{.dir = options.clusters_dir};
  }
  return f;
}

// What every local run may see of berthd's environment: where programs are, the TF CLI
// configuration (provider mirrors), and the cluster of kubernetes state storage; nothing else.
std::vector<std::string> LocalRunEnvironment() {
  std::vector<std::string> environment;
  for (const char* name :
       {"PATH", "TF_CLI_CONFIG_FILE", "TF_PLUGIN_CACHE_DIR", "KUBE_CONFIG_PATH"}) {
    if (const char* value = std::getenv(name))
      environment.push_back(std::string(name) + "=" + value);
  }
  return environment;
}

// berthd, built in member order with plain references: the log and the metrics (everything
// reports to them), the feeds, the foundations, the state backend and the runner gateway, the
// dispatcher (the one owner of deployment state), the API, then the launchers, which report to
// the dispatcher and are registered with it before it first ticks.
class Berthd {
 public:
  Berthd(const DaemonOptions& options, Foundations foundations)
      : options_(options),
        log_(options.log_format, options.verbosity),
        base_(std::move(foundations)),
        states_(*base_.store, base_.signer.PublicKey(), SystemClock::Instance()),
        oidc_(*base_.store, SystemClock::Instance(), {.issuer = IssuerUrl(options, base_.url)}),
        gateway_(*base_.store, {.public_key = base_.signer.PublicKey(),
                                .signer = &base_.signer,
                                .token_lifetime = RunTokenLifetime(options),
                                .feed = &log_feed_,
                                .issuer = &oidc_}),
        agent_gateway_(*base_.store, {.signer = &base_.signer,
                                      .events = &dispatcher_,
                                      .commands = &agent_commands_,
                                      .ends = &agent_ends_}),
        s3_states_(
            *storage_http_,
            [this](const nlohmann::json& claims, std::chrono::seconds lifetime) {
              return oidc_.Mint(claims, lifetime);
            },
            SystemClock::Instance()),
        dispatcher_(*base_.store, launchers_, base_.signer,
                    DispatcherOptions{
                        .url = options.advertise_url.empty() ? base_.url : options.advertise_url,
                        .token_lifetime = RunTokenLifetime(options),
                        .run_deadline = options.run_deadline,
                        .providers = options.providers,
                        .replica = base_.replica.id,
                        .metrics = &metrics_,
                        .left_locks = &left_locks_,
                        .logs = &log_feed_,
                        .wake = &dispatch_feed_,
                        .log = &log_}),
        retention_(*base_.store,
                   RetentionPolicy{.ended_deployments_kept_for = options.keep_deployments_for},
                   log_, SystemClock::Instance()),
        api_(*base_.store, dispatcher_,
             ApiOptions{
                 .requests_per_second = options.rate_limit,
                 .burst = options.rate_limit * 2,
                 .allow_server_paths = options.embedded,
                 .queued = &dispatch_feed_,
                 .logs = &log_feed_,
                 .local_limits_refusal = base_.cgroups_refusal,
                 .local_network_refusal =
                     options.insecure_local_runners
                         ? "local runs have no sandbox (--insecure-local-runners)"
                         : "",
                 .clusters = ClusterMeansWithIdTokens(),
                 // clusters_ is made after the API, before the first request.
                 .check_cluster =
                     !base_.kube_client
                         ? nullptr
                         : std::function([this](const std::string& org, const std::string& runner,
                                                const nlohmann::json& configuration)
                                             -> Result<launch::ClusterCheck> {
                             auto settings = launch::ParseRunnerSettings(RunnerType::kKubernetes,
                                                                         configuration);
                             if (!settings) return settings.error();
                             return clusters_->Check(
                                 {.org_id = org, .runner_id = runner, .runner = *settings});
                           }),
                 .secure_cookies =
                     !options.tls_cert_file.empty() || options.public_url.starts_with("https://"),
                 .environment_metrics =
                     [&store = *base_.store](const std::string& org) {
                       return BerthdMetrics::ScrapeEnvironments(store, org);
                     },
                 .states_elsewhere = &s3_states_}) {
    left_locks_.Add(s3_states_);
    if (base_.kube_client) left_locks_.Add(kubernetes_locks_.emplace(*base_.kube_client));
    if (base_.kube_client) {
      launch::KubernetesSettings elsewhere = *base_.kube_settings;
      elsewhere.container_backend_url.clear();  // the router names berthd's URL there
      kubernetes_ = std::make_unique<launch::KubernetesLauncher>(
          *base_.kube_client, std::move(*base_.kube_settings), SystemClock::Instance(), dispatcher_,
          launch::KubernetesLauncherOptions{.launcher_id = base_.installation,
                                            .api_notice = ApiNotice("")});
      clusters_ = std::make_unique<launch::ClusterRouter>(
          *kubernetes_,
          launch::ClusterRouter::Options{
              .means = *ClusterMeansWithIdTokens(),
              .make = [this, elsewhere](
                          kube::KubeApi& api, const std::string& name,
                          const std::string& ns) -> Result<std::unique_ptr<launch::Launcher>> {
                launch::KubernetesSettings settings = elsewhere;
                settings.ns = ns;
                auto launcher = std::make_unique<launch::KubernetesLauncher>(
                    api, std::move(settings), SystemClock::Instance(), dispatcher_,
                    launch::KubernetesLauncherOptions{.launcher_id = base_.installation,
                                                      .api_notice = ApiNotice(name)});
                if (auto started = launcher->Start(); !started) return started.error();
                log_.Info("cluster reached", {{"cluster", name}});
                return std::unique_ptr<launch::Launcher>(std::move(launcher));
              },
              // Not KUBERNETES_CONTAINER_BACKEND_URL: often a Service of berthd's own cluster.
              .berthd_url_elsewhere =
                  options.public_url.empty() ? options.advertise_url : options.public_url,
              .observer = &dispatcher_,
              .home_api = base_.kube_client.get()});
      for (const char* type : {"kubernetes", "kubernetes-gke", "kubernetes-eks", "kubernetes-aks"})
        launchers_[type] = clusters_.get();
    }
    // kubernetes-agent runners need nothing of this berthd but its database: any berthd
    // queues their launches, and takes their agents' polls and reports.
    agents_ = std::make_unique<AgentLauncher>(
        *base_.store, dispatcher_,
        AgentLauncherOptions{.commands = &agent_commands_, .ends = &agent_ends_, .log = &log_});
    launchers_["kubernetes-agent"] = agents_.get();
    if (!options.runner_binary.empty()) {
      launch::LocalLauncherOptions local{.runner_binary = options.runner_binary,
                                         .runs_dir = options.data_dir / "runs",
                                         .max_parallel = options.max_parallel_runs,
                                         .environment = LocalRunEnvironment(),
                                         .insecure = options.insecure_local_runners,
                                         .shared_providers = options.data_dir / "providers",
                                         .on_harvest = [this](const launch::HarvestCounts& c) {
                                           metrics_.ProviderPackages("taken", c.taken);
                                           metrics_.ProviderPackages("known", c.known);
                                           metrics_.ProviderPackages("refused", c.refused);
                                         }};
      if (!local.insecure) {
        // The users of the runs a berthd before this one may have left running, first.
        const fs::path held_before = options.data_dir / "run-users";
        auto before = sys::ReadFile(held_before);
        auto sandbox = launch::Sandbox::Probe(
            {.first = options.local_runner_uid,
             .count = options.max_parallel_runs,
             .exact = options.local_runner_uid_exact,
             .preferred = before ? ParseDecimal<uid_t>(before->substr(0, before->find('\n')))
                                 : std::nullopt});
        if (sandbox && !sandbox->RunUids().empty())
          IgnoreError(
              sys::WriteFileAtomic(held_before, std::to_string(sandbox->RunUids().front()) + "\n"),
              "without it the next start looks for free users from the first");
        if (sandbox) local.sandbox = *sandbox;
        if (!sandbox) local.refusal = "local runs are refused: " + sandbox.error().message;
      }
      HoldLocalRunNetwork(local, options);
      local_isolation_ = local.sandbox ? "sandboxed" : local.insecure ? "INSECURE" : "refused";
      local_refusal_ = local.refusal;
      local.cgroups = base_.cgroups;
      local.cgroups_refusal = base_.cgroups_refusal;
      local_limits_ = base_.cgroups ? "all" : "disk only";
      local_ = std::make_unique<launch::LocalLauncher>(std::move(local), dispatcher_);
      launchers_["local"] = local_.get();
    }
  }

  Berthd(const Berthd&) = delete;
  Berthd& operator=(const Berthd&) = delete;

  // Nothing is served once this returns; the launchers stop (as members) after that.
  ~Berthd() {
    base_.server->Stop();
    for (ChangeFeed* feed : {&log_feed_, &agent_commands_}) feed->DropWaiters();
    if (kubernetes_) kubernetes_->Stop();
    agents_->Stop();
    // Runs outlive berthd, and stay held until the next start writes their rules anew.
    if (local_firewall_ && local_->Running() == 0)
      IgnoreError(local_firewall_->Remove(), "what is left is written anew at the next start");
    std::error_code ec;
    fs::remove(UrlFilePath(options_.data_dir), ec);
  }

  // The embedded defaults on the first start, the launchers' own start, the runs a previous
  // berthd left, then the URL file and serving.
  Result<void> Start() {
    // Where a local run could read them, no secret of berthd's is kept: it does not start.
    if (local_) {
      if (auto hidden = local_->KeepsOutOfRuns({options_.data_dir, options_.encryption_key_file,
                                                options_.tls_key_file, options_.admin_token_file});
          !hidden)
        return hidden.error();
    }
    if (options_.embedded && base_.first_admin_token) {
      if (auto seeded = SeedEmbeddedDefaults(api_, *base_.first_admin_token); !seeded)
        return seeded.error();
    }
    if (kubernetes_) {
      if (auto started = kubernetes_->Start(); !started) return started.error();
    }
    agents_->Start();
    // Alive in the database before it owns a run, or another replica would take it over.
    auto lease = ReplicaLeaseKeeper::Start(base_.store->Replicas(), base_.replica,
                                           options_.replica_lease, log_);
    if (!lease) return lease.error();
    lease_ = std::move(*lease);
    if (auto recovered = dispatcher_.Recover(); !recovered) return recovered.error();
    if (auto written = sys::WriteFileAtomic(UrlFilePath(options_.data_dir), base_.url + "\n");
        !written)
      return written.error();
    base_.server->Serve([this](const net::ServerRequest& r) { return Handle(r); });
    if (local_isolation_ == "INSECURE") {
      log_.Warn(
          "local runners are NOT sandboxed (--insecure-local-runners): a module can read "
          "and change everything berthd's user can, its admin token and database too");
    } else if (local_isolation_ == "refused") {
      log_.Error("local runs refused", {{"reason", local_refusal_}});
    } else if (local_isolation_ == "sandboxed" && std::getenv("TF_PLUGIN_CACHE_DIR")) {
      log_.Warn(
          "TF_PLUGIN_CACHE_DIR is not passed to sandboxed local runs: a cache every run "
          "can write is one a run can poison; each runner has its own shared cache in the data "
          "folder's providers/ instead");
    }
    log_.Info("serving", {{"url", base_.url},
                          {"replica", base_.replica.id},
                          {"database", base_.database_kind},
                          {"local_runners", local_ ? local_isolation_ : "off"},
                          {"local_run_limits", local_ ? local_limits_ : "off"},
                          {"local_run_network", local_ ? local_network_ : "off"},
                          {"kubernetes", kubernetes_ ? "on" : "off"}});
    return {};
  }

  const std::string& Url() const { return base_.url; }

  // Until stop: a queued deployment wakes the loop at once; the timeout bounds how late a stop,
  // a deadline or another berthd's deployment is seen.
  void DispatchUntil(const std::atomic<bool>& stop) {
    while (!stop.load()) {
      uint64_t seen = dispatch_feed_.Generation();
      dispatcher_.Tick();
      retention_.PruneIfDue();
      dispatch_feed_.WaitPast(seen, std::chrono::milliseconds(200));
    }
  }

 private:
  // What berthd reaches other clusters with (with --kubernetes): its kubeconfig, its token
  // folder, and ID tokens it signs itself. Uses base_ and oidc_ only (made before the API).
  std::optional<launch::ClusterMeans> ClusterMeansWithIdTokens() {
    if (!base_.cluster_means) return std::nullopt;
    launch::ClusterMeans means = *base_.cluster_means;
    means.sign_id_token = [this](const nlohmann::json& claims, std::chrono::seconds lifetime) {
      return oidc_.Mint(claims, lifetime);
    };
    means.issuer = oidc_.Issuer();
    return means;
  }

  // Logs when a cluster's API stops answering a launcher's watch and when it answers again
  // (cluster: empty for berthd's own).
  std::function<void(const std::string&, bool, const std::string&)> ApiNotice(
      const std::string& cluster) {
    return [this, cluster](const std::string& ns, bool reachable, const std::string& why) {
      sys::LogFields fields = {{"namespace", ns}};
      if (!cluster.empty()) fields.emplace_back("cluster", cluster);
      if (reachable) {
        log_.Info("kubernetes api answers again", fields);
        return;
      }
      fields.emplace_back("why", why);
      log_.Warn("kubernetes api not answering; runs go on, watching again", fields);
    };
  }

  // What local runs with network: full cannot reach: a root berthd's runs have users of their
  // own for its firewall to match (launch/local/run_firewall.h, with iptables); the runs of a
  // berthd that is not root get networks of their own (launch/local/user_mode_network.h, with
  // pasta).
  void HoldLocalRunNetwork(launch::LocalLauncherOptions& local, const DaemonOptions& options) {
    if (!local.sandbox) {
      local_network_ = "unfiltered (runs have no sandbox)";
      return;
    }
    std::vector<uint16_t> ports = {static_cast<uint16_t>(base_.server->Port())};
    if (auto advertised = PortOf(options.advertise_url)) ports.push_back(*advertised);
    // Runs whose state storage is kubernetes reach its API server with the kubeconfig berthd
    // passes them (LocalRunEnvironment), which may be this machine's.
    if (const char* kubeconfig = std::getenv("KUBE_CONFIG_PATH")) {
      if (auto config = kube::KubeConfig::FromFiles({kubeconfig}, {})) {
        if (auto api = PortOf(config->Server())) ports.push_back(*api);
      }
    }
    if (local.sandbox->RunUids().empty()) {
      const std::string runs_url =
          options.advertise_url.empty() ? base_.url : options.advertise_url;
      auto url = HttpUrl::Parse(runs_url);
      if (url && !launch::ReachableAtLoopback(url->host)) {
        local_network_ =
            "unfiltered (berthd is not root, and its runs in networks of their own "
            "could not reach it at " +
            url->host +
            ": give --advertise-url a host "
            "name)";
        return;
      }
      auto network = launch::UserModeNetwork::Probe(std::move(ports));
      if (!network) {
        local_network_ = "unfiltered (" + network.error().message + ")";
        return;
      }
      local_network_ = "filtered (a network of its own per run)";
      local.user_mode_network =
          std::make_shared<const launch::UserModeNetwork>(std::move(*network));
      return;
    }
    auto firewall = launch::RunFirewall::Install(local.sandbox->RunUids(), ports);
    if (!firewall) {
      local_network_ = "unfiltered (" + firewall.error().message + ")";
      return;
    }
    local_network_ = "filtered";
    local_firewall_ = *firewall;
    local.firewall = local_firewall_;
  }

  net::ServerResponse Handle(const net::ServerRequest& r) {
    auto started = std::chrono::steady_clock::now();
    net::ServerResponse response = Route(r);
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
    metrics_.Request(response.route, r.method, response.status, took);
    LogRequest(log_, r, response, took);
    return response;
  }

  net::ServerResponse Route(const net::ServerRequest& r) {
    if (r.target == "/metrics" && r.method == "GET") {
      net::ServerResponse response;
      response.headers["Content-Type"] = "text/plain; version=0.0.4";
      response.body =
          metrics_.Scrape(*base_.store, base_.kube_client ? base_.kube_client->MetricsText() : "");
      response.route = "/metrics";
      return response;
    }
    if (StateBackend::Serves(r.target)) {
      net::ServerResponse response = states_.Handle(r);
      response.route = std::string(kStatePathPrefix) + "{key}";
      return response;
    }
    if (OidcIssuer::Serves(r.target)) {
      net::ServerResponse response = oidc_.Handle(r);
      response.route = r.target.substr(0, r.target.find('?'));
      return response;
    }
    if (AgentGateway::Serves(r.target)) return agent_gateway_.Handle(r);
    if (UiRoutes::Serves(r.target)) return ui_.Handle(r);
    if (RunGateway::Serves(r.target)) {
      net::ServerResponse response = gateway_.Handle(r);
      metrics_.GatewayBytes("in", r.body.size());
      metrics_.GatewayBytes("out", response.body.size());
      return response;
    }
    return api_.Handle(r);
  }

  const DaemonOptions& options_;
  sys::Logger log_;
  BerthdMetrics metrics_;
  ChangeFeed dispatch_feed_;   // what wakes the dispatcher
  ChangeFeed log_feed_;        // what wakes log followers
  ChangeFeed agent_commands_;  // a command was queued: agents' long polls look again
  ChangeFeed agent_ends_;      // an agent reported a run's end: the agent launcher records it
  Foundations base_;
  StateBackend states_;
  OidcIssuer oidc_;
  UiRoutes ui_;
  RunGateway gateway_;
  AgentGateway agent_gateway_;
  Launchers launchers_;  // filled in the constructor's body, before the dispatcher's first use
  // What berthd reaches object storages with (its own requests, never a run's).
  std::unique_ptr<net::HttpClient> storage_http_ = net::MakeCurlHttpClient();
  // Object storage as berthd reaches it with its own ID token (the storage's role assumed):
  // dead runs' locks, and `berth state show|unlock`.
  S3States s3_states_;
  // The locks dead runs left: s3's lock objects, and with a cluster the kubernetes storage's
  // Leases (added in the constructor's body, before the dispatcher's first tick).
  std::optional<KubernetesStateLocks> kubernetes_locks_;
  StateLocksOfEachStorage left_locks_;
  Dispatcher dispatcher_;
  Retention retention_;
  Api api_;
  std::unique_ptr<launch::LocalLauncher> local_;
  std::string local_isolation_;  // sandboxed, INSECURE or refused
  std::string local_refusal_;
  std::string local_limits_;   // which runner limits local runs can have: all, or disk only
  std::string local_network_;  // whether runs with network: full are held by the firewall
  std::shared_ptr<const launch::RunFirewall> local_firewall_;
  std::unique_ptr<launch::KubernetesLauncher> kubernetes_;  // of berthd's own cluster
  std::unique_ptr<launch::ClusterRouter> clusters_;         // kubernetes_ and other clusters'
  std::unique_ptr<AgentLauncher> agents_;
  std::unique_ptr<ReplicaLeaseKeeper> lease_;  // renewed until berthd stops
};

}  // namespace

Result<void> RunDaemon(const DaemonOptions& options, const std::atomic<bool>& stop,
                       const std::function<void(const std::string&, const fs::path&)>& on_ready) {
  auto foundations = LayFoundations(options);
  if (!foundations) return foundations.error();
  Berthd berthd(options, std::move(*foundations));
  if (auto started = berthd.Start(); !started) return started.error();
  on_ready(berthd.Url(), options.admin_token_file.empty() ? AdminTokenPath(options.data_dir)
                                                          : options.admin_token_file);
  berthd.DispatchUntil(stop);
  return {};
}

std::string RotationReport::Summary() const {
  std::string text =
      fmt::format("sealed {} values with the new key {} (was {})\n", resealed, new_key, old_key);
  if (left_in_clear > 0)
    text += fmt::format(
        "{} values are in clear and refused when read: if a berthd without encryption at rest "
        "wrote them, run rotate-keys --seal-plaintext\n",
        left_in_clear);
  if (kept_old_keys)
    text +=
        "a running berthd wrote meanwhile: the old keys stay in the key file; run rotate-keys "
        "again once every berthd has restarted\n";
  return text;
}

Result<RotationReport> RotateKeys(const DaemonOptions& options, bool seal_plaintext) {
  auto keys = crypto::KeyRing::OpenOrCreate(EncryptionKeyFile(options));
  if (!keys) return keys.error();
  auto store = store::OpenStore(DatabaseUrl(options), 1, *keys);
  if (!store) return store.error();
  RotationReport report{.old_key = (*keys)->CurrentKeyId()};
  if (auto added = (*keys)->AddCurrentKey(); !added) return added.error();
  report.new_key = (*keys)->CurrentKeyId();
  auto resealed = (*store)->Reseal(**keys, seal_plaintext);
  if (!resealed) return resealed.error();
  report.resealed = resealed->resealed;
  report.left_in_clear = resealed->left_in_clear;
  report.kept_old_keys = resealed->changed_meanwhile;
  if (!report.kept_old_keys) {
    if (auto kept = (*keys)->KeepOnly(resealed->keys_in_use); !kept) return kept.error();
  }
  return report;
}

}  // namespace berth::server
