// libFuzzer target: hostile bodies through berthd's API routes, as berthd builds them (SQLite,
// a dispatcher with no launchers). Whatever the body, the answer is a client error or a
// success, never a crash or a 5xx.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api_without_runners.h"
#include "store/store.h"
#include "sys/files.h"

namespace {

using berth::server::ApiWithoutRunners;

struct Api {
  Api() : dir(berth::sys::TempDir::Create("api-fuzz").value()) {
    store = berth::store::OpenStore("sqlite:" + (dir.Path() / "db").string(), 1).value();
    if (!store->CreateOrganization("acme")) std::abort();
    token = berth::server::IssueToken(*store, "acme", "fuzz").value();
    api = std::make_unique<ApiWithoutRunners>(*store);
  }
  berth::sys::TempDir dir;
  std::unique_ptr<berth::store::Store> store;
  std::string token;
  std::unique_ptr<ApiWithoutRunners> api;
};

constexpr std::pair<const char*, const char*> kRoutes[] = {
    {"POST", "/orgs/acme/runners"},
    {"POST", "/orgs/acme/projects"},
    {"POST", "/orgs/acme/env-types"},
    {"POST", "/orgs/acme/runner-rules"},
    {"POST", "/orgs/acme/projects/web/envs"},
    {"PATCH", "/orgs/acme/runners/here"},
    {"POST", "/orgs/acme/deployments"},
    {"PATCH", "/orgs/acme/projects/web"},
    {"POST", "/orgs/acme/tokens"},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Api api;
  if (size == 0) return 0;
  const auto& [method, target] = kRoutes[data[0] % std::size(kRoutes)];
  auto response =
      api.api->Handle({.method = method,
                       .target = target,
                       .headers = {{"authorization", "Bearer " + api.token},
                                   {"content-type", data[0] & 0x80 ? "application/merge-patch+json"
                                                                   : "application/json"}},
                       .body = std::string(reinterpret_cast<const char*>(data + 1), size - 1)});
  if (response.status >= 500) std::abort();
  return 0;
}
