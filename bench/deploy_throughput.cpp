// How many deployments a second berthd accepts, and how many it runs to their end on local
// runners of a trivial module (examples/hello), with N deployments spread over E environments
// (one runs at a time per environment; --max-parallel-runs, 4, at once overall), against the
// same TF work by hand (`tofu init && tofu plan -out && tofu apply`, 4 at once) in the same
// run. First, one deployment at a time, berth's fixed cost: from the POST to the runner
// started, and the run's time outside TF (starting the sandboxed runner, fetching its inputs,
// shipping the log and result, ending the deployment) and berthd's own CPU; and over both
// phases, the CPU the whole machine spent per deployment (on 2 cores, 4 runs at once keep
// them busy: that ratio is the throughput's). Real berthd (`berth up`), runner, tofu.
//
// Usage: deploy_throughput BERTH_BIN TOFU_BIN MODULE [N (default 100)] [ENVS (default 10)]
//        (see bench/deploy_throughput.sh)
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "cli/timings.h"
#include "core/time_format.h"
#include "net/http_client.h"
#include "sys/files.h"
#include "sys/module_bundle.h"
#include "sys/subprocess.h"

namespace {

using namespace berth;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr int kParallel = 4;  // berthd's --max-parallel-runs default
constexpr int kFixedCostSamples = 15;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

int64_t UnixMillisNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The CPU time (user and system) process pid has used so far, in seconds: /proc/PID/stat's
// utime and stime, the 14th and 15th fields (counted after the command's closing parenthesis).
double CpuSeconds(pid_t pid) {
  auto stat = sys::ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return 0;
  std::istringstream fields(stat->substr(stat->rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i)
    if (i >= 14) ticks += std::stod(field);
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The CPU time every process of the machine has used so far, in seconds (/proc/stat's first
// line: user, nice, system, irq, softirq and steal; not idle, not waiting for I/O). Over a
// phase, divided by its deployments: what one costs the machine, whoever spends it.
double MachineBusySeconds() {
  auto stat = sys::ReadFile("/proc/stat");
  if (!stat) return 0;
  std::istringstream fields(stat->substr(0, stat->find('\n')));
  std::string name;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  fields >> name >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  return (user + nice + system + irq + softirq + steal) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

// The same TF work as n deployments of module, by hand: init, plan -out, apply in a fresh
// folder each (local state), `parallel` at once. Its wall time.
Clock::duration ByHand(const std::string& tofu, const fs::path& module, const fs::path& root, int n,
                       int parallel) {
  std::atomic<int> next{0};
  auto start = Clock::now();
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(parallel));
  for (int w = 0; w < parallel; ++w) {
    workers.emplace_back([&] {
      for (int i = next++; i < n; i = next++) {
        fs::path dir = root / ("hand-" + std::to_string(i));
        fs::create_directories(dir);
        fs::copy(module, dir, fs::copy_options::recursive);
        for (std::vector<std::string> args :
             {std::vector<std::string>{"init", "-input=false"},
              std::vector<std::string>{"plan", "-input=false", "-out=p"},
              std::vector<std::string>{"apply", "-input=false", "p"}}) {
          args.insert(args.begin(), tofu);
          auto run = sys::RunToCompletion(
              {.argv = args, .working_dir = dir.string(), .output_path = (dir / "log").string()});
          if (!run || run->exit_code != 0)
            std::fprintf(stderr, "by hand failed in %s\n", dir.c_str());
        }
      }
    });
  }
  for (auto& t : workers) t.join();
  return Clock::now() - start;
}

int Main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: deploy_throughput BERTH_BIN TOFU_BIN MODULE [N] [ENVS]\n");
    return 2;
  }
  const std::string berth = argv[1];
  const std::string tofu = argv[2];
  const fs::path module = argv[3];
  const int n = argc > 4 ? std::stoi(argv[4]) : 100;
  const int envs = argc > 5 ? std::stoi(argv[5]) : 10;
  auto dir = sys::TempDir::Create("deploy-throughput");
  fs::path data = dir->Path() / "data";
  sys::SpawnOptions up_options;
  up_options.argv = {berth, "up", "--data-dir=" + data.string(), "--listen=127.0.0.1:0"};
  up_options.output_path = (dir->Path() / "up.log").string();
  auto up = sys::Subprocess::Spawn(up_options);
  if (!up) return 1;
  while (!fs::exists(data / "berthd.url"))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::string url = *sys::ReadFile(data / "berthd.url");
  url.pop_back();
  std::string token = *sys::ReadFile(data / "admin-token");
  token.pop_back();
  auto call = [&](net::HttpClient& http, const std::string& method, const std::string& path,
                  const std::string& body, const std::string& type) {
    net::HttpRequest request{.method = method, .url = url + "/orgs/default" + path, .body = body};
    request.headers = {{"Authorization", "Bearer " + token}, {"Content-Type", type}};
    auto response = http.Send(request);
    return response ? *response : net::HttpResponse{};
  };
  auto http = net::MakeCurlHttpClient();
  auto bundle = call(*http, "POST", "/bundles", *sys::PackModule(module), "application/gzip");
  std::string bundle_id = json::parse(bundle.body)["id"];
  auto make_env = [&](const std::string& id) {
    call(*http, "POST", "/projects/default/envs",
         json{{"id", id}, {"env_type_id", "default"}}.dump(), "application/json");
  };
  for (int e = 0; e < envs; ++e) make_env("env-" + std::to_string(e));

  // berth's fixed cost, one deployment at a time (nothing queued, nothing in parallel).
  std::vector<double> to_start_ms, outside_tf_ms;
  const double cpu_before = CpuSeconds(up->Pid());
  for (int k = 0; k < kFixedCostSamples; ++k) {
    std::string env = "fixed-" + std::to_string(k);
    make_env(env);
    int64_t posted_at = UnixMillisNow();
    auto created =
        call(*http, "POST", "/projects/default/envs/" + env + "/deployments",
             json{{"op", "apply"}, {"source", {{"bundle", bundle_id}}}}.dump(), "application/json");
    std::string id = json::parse(created.body).value("id", "");
    call(*http, "GET", "/deployments/" + id + "/logs?follow=true", "", "application/json");
    json d = json::parse(call(*http, "GET", "/deployments/" + id, "", "application/json").body);
    for (const auto& t : d["transitions"]) {
      if (t.value("reason", "") == "runner started")
        to_start_ms.push_back(
            static_cast<double>(*ParseRfc3339Millis(t["at"].get<std::string>()) - posted_at));
    }
    const json timings = cli::DeploymentTimings(d, UnixMillisNow());
    for (const auto& span : timings["spans"]) {
      for (const auto& step : span.value("steps", json::array()))
        if (step["name"] == "(outside TF)")
          outside_tf_ms.push_back(step["seconds"].get<double>() * 1000);
    }
  }

  const double berthd_cpu_ms = (CpuSeconds(up->Pid()) - cpu_before) * 1000 / kFixedCostSamples;

  const double busy_before = MachineBusySeconds();
  // Accepting: N creates from 4 clients at once.
  std::atomic<int> next{0}, refused{0};
  auto start = Clock::now();
  std::vector<std::thread> clients;
  clients.reserve(4);
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&] {
      auto client = net::MakeCurlHttpClient();
      for (int i = next++; i < n; i = next++) {
        json spec = {{"op", "apply"}, {"source", {{"bundle", bundle_id}}}};
        auto created =
            call(*client, "POST",
                 "/projects/default/envs/env-" + std::to_string(i % envs) + "/deployments",
                 spec.dump(), "application/json");
        if (created.status != 201) ++refused;
      }
    });
  }
  for (auto& t : clients) t.join();
  auto accepted = Clock::now();

  // Running: until every deployment has ended, seen in one request for every environment (the
  // overview) every 50 ms, which the API's 100 requests a second per token allows; then the
  // deployments are counted once. Nullopt: the overview failed (said on stderr).
  auto all_ended = [&]() -> std::optional<bool> {
    auto response = call(*http, "GET", "/overview", "", "application/json");
    const json overview = json::parse(response.body, nullptr, false);
    if (!overview.contains("environments")) {
      std::fprintf(stderr, "the overview failed: %s\n", response.body.c_str());
      return std::nullopt;
    }
    for (const auto& env : overview["environments"]) {
      if (!env.value("id", "").starts_with("env-")) continue;
      const json& last = env["last_deployment"];
      const std::string state = last.is_object() ? last.value("state", "") : "";
      if (env.value("queued", 0) > 0 || !env["holder"].is_null() ||
          (state != "succeeded" && state != "failed" && state != "cancelled"))
        return false;
    }
    return true;
  };
  std::optional<bool> ended;
  while ((ended = all_ended()) == false) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto done = Clock::now();
  const double berth_busy = MachineBusySeconds() - busy_before;
  if (!ended) return 1;
  int succeeded = 0;
  for (int e = 0; e < envs; ++e) {
    auto list =
        call(*http, "GET", "/projects/default/envs/env-" + std::to_string(e) + "/deployments", "",
             "application/json");
    const json page = json::parse(list.body, nullptr, false);
    if (!page.contains("items")) {
      std::fprintf(stderr, "listing failed: %s\n", list.body.c_str());
      return 1;
    }
    // An environment's newest 100: the default N of 100 over 10 environments fits.
    for (const auto& d : page["items"]) succeeded += d["state"] == "succeeded" ? 1 : 0;
  }
  up->Signal(SIGTERM);
  up->Wait();
  const double hand_busy_before = MachineBusySeconds();
  auto by_hand = ByHand(tofu, module, dir->Path(), n, kParallel);
  const double hand_busy = MachineBusySeconds() - hand_busy_before;
  std::printf(
      "fixed cost (%d deployments one at a time, medians): POST to runner started %.0f ms; "
      "the run outside TF %.0f ms; berthd's own CPU %.1f ms a deployment\n",
      kFixedCostSamples, Median(to_start_ms), Median(outside_tf_ms), berthd_cpu_ms);
  std::printf("%d deployments over %d environments (%d refused)\n", n, envs, refused.load());
  std::printf("accepted: %.2f s, %.0f deployments/s\n", Seconds(accepted - start),
              n / Seconds(accepted - start));
  std::printf("all ended: %.2f s after the first was sent, %.1f deployments/s, %d succeeded\n",
              Seconds(done - start), n / Seconds(done - start), succeeded);
  std::printf("the same TF work by hand, %d at once: %.2f s; ratio %.2f\n", kParallel,
              Seconds(by_hand), Seconds(done - start) / Seconds(by_hand));
  std::printf(
      "the machine's CPU per deployment: %.0f ms through berth, %.0f ms by hand; ratio %.2f\n",
      berth_busy * 1000 / n, hand_busy * 1000 / n, berth_busy / hand_busy);
  return succeeded == n ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
