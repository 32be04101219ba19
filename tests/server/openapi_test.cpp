// docs/openapi.json and the router agree: every route in the document exists, every route
// exists in the document, and berthd serves the document as it is.
#include "server/api/openapi.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "api_without_runners.h"
#include "server/api/openapi_runner_schemas.h"
#include "store/store.h"
#include "sys/files.h"

namespace berth::server {
namespace {

TEST(OpenApi, TheDocumentAndTheRoutesAgree) {
  auto doc = nlohmann::json::parse(OpenApiDocument(), nullptr, false);
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc["openapi"], "3.1.0");
  std::set<std::string> documented;
  for (const auto& [path, methods] : doc["paths"].items()) {
    for (const auto& [method, _] : methods.items()) {
      std::string upper = method;
      for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      documented.insert(upper + " " + path);
    }
  }
  auto dir = sys::TempDir::Create("openapi");
  ASSERT_TRUE(dir);
  auto store = store::OpenStore("sqlite:" + (dir->Path() / "db").string(), 1);
  ASSERT_TRUE(store);
  ApiWithoutRunners api(**store);
  std::set<std::string> routed;
  for (const auto& r : api.Served().Routes()) routed.insert(r);
  for (const auto& r : routed)
    EXPECT_TRUE(documented.count(r)) << r << " is not in docs/openapi.json";
  for (const auto& d : documented)
    EXPECT_TRUE(routed.count(d)) << d << " is documented but not routed";

  net::ServerRequest request{.method = "GET", .target = "/openapi.json"};
  auto served = api.Handle(request);
  EXPECT_EQ(served.status, 200);
  EXPECT_EQ(served.body, *sys::ReadFile(BERTH_OPENAPI_FILE));
}

// What every route of an organization can answer, whatever it does: a malformed path or query,
// no or a bad token, another organization's token, nothing there, the rate limit; and with a
// body, one too large or not JSON. A client generated from the document must know them all.
TEST(OpenApi, EveryRouteDocumentsTheStatusesEveryRouteCanReturn) {
  auto doc = nlohmann::json::parse(OpenApiDocument());
  for (const auto& [path, methods] : doc["paths"].items()) {
    for (const auto& [method, operation] : methods.items()) {
      std::vector<std::string> expected = {"400"};
      if (path.starts_with("/orgs/")) {
        expected.insert(expected.end(), {"401", "403", "404", "429"});
        if (operation.contains("requestBody")) expected.insert(expected.end(), {"413", "415"});
      }
      for (const std::string& status : expected)
        EXPECT_TRUE(operation["responses"].contains(status))
            << method << " " << path << " " << status;
    }
  }
}

// The integers in a request, followed through every $ref, with where they are.
void CollectUnboundedIntegers(const nlohmann::json& doc, const nlohmann::json& node,
                              const std::string& where, std::set<std::string>& seen_refs,
                              std::vector<std::string>& out) {
  if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i)
      CollectUnboundedIntegers(doc, node[i], where + "/" + std::to_string(i), seen_refs, out);
    return;
  }
  if (!node.is_object()) return;
  if (node.contains("$ref") && seen_refs.insert(node["$ref"]).second) {
    auto pointer = nlohmann::json::json_pointer(node["$ref"].get<std::string>().substr(1));
    CollectUnboundedIntegers(doc, doc.at(pointer), node["$ref"], seen_refs, out);
  }
  if (node.value("type", nlohmann::json()) == "integer" && !node.contains("maximum"))
    out.push_back(where);
  for (const auto& [key, child] : node.items())
    CollectUnboundedIntegers(doc, child, where + "/" + key, seen_refs, out);
}

// berthd keeps whole numbers as 64-bit integers and refuses larger ones, so every integer a
// request may carry states its maximum: a client (or schemathesis) must not take a number
// berthd refuses for a valid one.
TEST(OpenApi, EveryIntegerARequestCarriesStatesItsRange) {
  auto doc = nlohmann::json::parse(OpenApiDocument());
  std::vector<std::string> unbounded;
  std::set<std::string> seen_refs;
  for (const auto& [path, methods] : doc["paths"].items()) {
    for (const auto& [method, operation] : methods.items()) {
      for (const char* part : {"requestBody", "parameters"}) {
        if (operation.contains(part))
          CollectUnboundedIntegers(doc, operation[part], method + " " + path, seen_refs, unbounded);
      }
    }
  }
  EXPECT_EQ(unbounded, std::vector<std::string>{});
}

// The runner schemas of the document are the ones berthd validates with. When they change:
// BERTH_UPDATE_DOCS=1 ctest -R openapi
TEST(OpenApi, RunnerSchemasAreTheOnesBerthdValidatesWith) {
  auto committed = sys::ReadFile(BERTH_OPENAPI_FILE);
  ASSERT_TRUE(committed);
  std::string generated =
      WithRunnerSchemas(nlohmann::ordered_json::parse(*committed)).dump(2) + "\n";
  if (const char* update = std::getenv("BERTH_UPDATE_DOCS"); update && *update == '1') {
    ASSERT_TRUE(sys::WriteFileAtomic(
        BERTH_OPENAPI_FILE, generated,
        std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
            std::filesystem::perms::group_read | std::filesystem::perms::others_read));
    committed = generated;
  }
  EXPECT_EQ(*committed, generated)
      << "docs/openapi.json's runner schemas are out of date: BERTH_UPDATE_DOCS=1 ctest -R openapi";
  auto doc = nlohmann::json::parse(*committed);
  const auto& schemas = doc["components"]["schemas"];
  const auto& gke = schemas["RunnerConfiguration.kubernetes-gke"];
  EXPECT_EQ(gke["properties"]["cluster"]["properties"]["auth"]["required"],
            (nlohmann::json{"gcp_audience", "gcp_service_account"}));
  EXPECT_EQ(gke["properties"]["job"]["properties"]["pod_template"]["properties"]["spec"]
               ["properties"]["containers"]["items"]["properties"]["name"]["enum"],
            nlohmann::json{"main"});
  EXPECT_EQ(schemas["RunnerInputCreate"]["properties"]["runner_configuration"]["oneOf"].size(), 8U);
}

}  // namespace
}  // namespace berth::server
