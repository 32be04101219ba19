// How many deployments a second berthd accepts, and how many it runs to their end on local
// runners of a trivial module (examples/hello), with N deployments spread over E environments
// (one runs at a time per environment; --max-parallel-runs at once overall). Real berthd
// (`berth up`), real runner and tofu.
//
// Usage: deploy_throughput BERTH_BIN MODULE [N (default 100)] [ENVS (default 10)]
//        (see bench/deploy_throughput.sh)
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "cli/bundle.h"
#include "net/http_client.h"
#include "sys/files.h"
#include "sys/subprocess.h"

namespace {

using namespace berth;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

int Main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: deploy_throughput BERTH_BIN MODULE [N] [ENVS]\n");
    return 2;
  }
  const std::string berth = argv[1];
  const fs::path module = argv[2];
  const int n = argc > 3 ? std::atoi(argv[3]) : 100;
  const int envs = argc > 4 ? std::atoi(argv[4]) : 10;
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
  auto bundle = call(*http, "POST", "/bundles", *cli::PackModule(module), "application/gzip");
  std::string bundle_id = json::parse(bundle.body)["id"];
  for (int e = 0; e < envs; ++e) {
    call(*http, "POST", "/projects/default/envs",
         json{{"id", "env-" + std::to_string(e)}, {"env_type_id", "default"}}.dump(),
         "application/json");
  }

  // Accepting: N creates from 4 clients at once.
  std::atomic<int> next{0}, refused{0};
  auto start = Clock::now();
  std::vector<std::thread> clients;
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

  // Running: until every deployment has ended (polled gently: the API limits a token to 100
  // requests a second).
  int succeeded = 0, ended = 0;
  while (ended < n - refused) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    succeeded = ended = 0;
    for (int e = 0; e < envs; ++e) {
      auto list =
          call(*http, "GET", "/projects/default/envs/env-" + std::to_string(e) + "/deployments", "",
               "application/json");
      const json page = json::parse(list.body);
      if (!page.contains("items")) {
        std::fprintf(stderr, "listing failed: %s\n", list.body.c_str());
        return 1;
      }
      for (const auto& d : page["items"]) {
        std::string state = d["state"];
        if (state == "succeeded") ++succeeded;
        if (state == "succeeded" || state == "failed" || state == "cancelled") ++ended;
      }
    }
  }
  auto done = Clock::now();
  up->Signal(SIGTERM);
  up->Wait();
  std::printf("%d deployments over %d environments (%d refused)\n", n, envs, refused.load());
  std::printf("accepted: %.2f s, %.0f deployments/s\n", Seconds(accepted - start),
              n / Seconds(accepted - start));
  std::printf("all ended: %.2f s after the first was sent, %.1f deployments/s, %d succeeded\n",
              Seconds(done - start), n / Seconds(done - start), succeeded);
  return succeeded == n ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
