// The controller's world (controller_world.h) and a Reconciler, started once per test binary,
// and what its tests do to Terraform objects in their one namespace.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "controller/reconciler.h"
#include "controller_world.h"

namespace berth::controller {

class ReconcilerFixture : public ::testing::Test {
 protected:
  using json = nlohmann::json;

  static void StartWorld(const std::string& ns) {
    object_namespace = ns;
    auto world = ControllerWorld::Create(ns);
    ASSERT_TRUE(world) << world.error().ToString();
    shared = world->release();
    reconciler = new Reconciler(*shared->api, *shared->pki,
                                {.settings = shared->settings,
                                 .state = shared->state->Endpoint(),
                                 .runner_creation_timeout = std::chrono::seconds(60)});
  }
  static void TearDownTestSuite() {
    delete reconciler;
    delete shared;
  }

  static json Object(const std::string& name, const std::filesystem::path& world,
                     json runner = json::object()) {
    return shared->FileStack(name, object_namespace, world, std::move(runner));
  }

  static json Create(const json& object) {
    auto made = shared->api->Create(kTerraforms, object_namespace, object);
    EXPECT_TRUE(made) << made.error().ToString();
    return made ? *made : json();
  }

  static json Get(const std::string& name) {
    auto got = shared->api->Get(kTerraforms, object_namespace, name);
    EXPECT_TRUE(got) << got.error().ToString();
    return got ? *got : json();
  }

  // Reconciles the object as it is now and returns it as it is after.
  static json Reconcile(const std::string& name) {
    auto done = reconciler->Reconcile(Get(name));
    EXPECT_TRUE(done) << done.error().ToString();
    return Get(name);
  }

  static json ConditionOf(const json& object, const std::string& type) {
    for (const json& c : object["status"].value("conditions", json::array()))
      if (c["type"] == type) return c;
    return json();
  }

  static void PatchSpec(const std::string& name, const json& spec) {
    auto patched = shared->api->Patch(kTerraforms, object_namespace, name, kube::PatchType::kMerge,
                                      {{"spec", spec}}, "test");
    ASSERT_TRUE(patched) << patched.error().ToString();
  }

  static void Approve(const std::string& name, const std::string& plan) {
    PatchSpec(name, {{"approvePlan", plan}});
  }

  static std::filesystem::path WorldFile(const std::string& name) {
    return shared->dir->Path() / ("world-" + name + ".txt");
  }

  static inline std::string object_namespace;
  static inline ControllerWorld* shared = nullptr;
  static inline Reconciler* reconciler = nullptr;
};

}  // namespace berth::controller
