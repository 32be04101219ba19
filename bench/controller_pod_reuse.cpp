// A Terraform object's reconcile in a fresh runner Pod (alwaysCleanup: true, the default)
// against one in a kept Pod (alwaysCleanup: false), on the test cluster with the test node
// agent, the real tofu and a Git server on loopback: N reconciles of each, alternating, each a
// no-change plan of examples/file after a first apply. Prints both medians and the ratio.
// Usage: controller_pod_reuse [N]   (after `source "$(scripts/testenv --env-file)"`)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "controller_world.h"

using namespace berth;
using namespace berth::controller;
using nlohmann::json;

namespace {

constexpr char kNamespace[] = "tf-bench";

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// One reconcile of the object as it is now, in milliseconds; exits on a failure.
double TimedReconcile(ControllerWorld& world, Reconciler& reconciler, const std::string& name) {
  auto object = world.api->Get(kTerraforms, kNamespace, name);
  if (!object) {
    std::fprintf(stderr, "%s\n", object.error().ToString().c_str());
    std::exit(1);
  }
  const auto start = std::chrono::steady_clock::now();
  auto done = reconciler.Reconcile(*object);
  const auto end = std::chrono::steady_clock::now();
  if (!done) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), done.error().ToString().c_str());
    std::exit(1);
  }
  return std::chrono::duration<double, std::milli>(end - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::stoi(argv[1])) : 7;
  auto world = ControllerWorld::Create(kNamespace);
  if (!world) {
    std::fprintf(stderr, "%s\n", world.error().ToString().c_str());
    return 1;
  }
  Reconciler reconciler(*(*world)->api, *(*world)->pki,
                        {.settings = (*world)->settings,
                         .state = (*world)->state->Endpoint(),
                         .runner_creation_timeout = std::chrono::seconds(60)});
  for (const auto& [name, keep] : {std::pair{"fresh", false}, {"kept", true}}) {
    json object =
        (*world)->FileStack(name, kNamespace, (*world)->dir->Path() / (std::string(name) + ".txt"),
                            {{"alwaysCleanup", !keep}});
    object["spec"]["approvePlan"] = "auto";
    if (!(*world)->api->Create(kTerraforms, kNamespace, object)) return 1;
    TimedReconcile(**world, reconciler, name);  // the first apply, and the kept Pod's start
  }
  std::vector<double> fresh, kept;
  for (int i = 0; i < runs; ++i) {
    fresh.push_back(TimedReconcile(**world, reconciler, "fresh"));
    kept.push_back(TimedReconcile(**world, reconciler, "kept"));
  }
  std::printf("reconcile (no-change plan of examples/file), %d each, alternating\n", runs);
  std::printf("fresh runner Pod (alwaysCleanup: true):  median %.0f ms\n", Median(fresh));
  std::printf("kept runner Pod (alwaysCleanup: false):  median %.0f ms\n", Median(kept));
  std::printf("ratio kept/fresh:                        %.2f\n", Median(kept) / Median(fresh));
  return 0;
}
