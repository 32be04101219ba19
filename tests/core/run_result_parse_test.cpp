// Reading a runner's result: whatever the writer writes reads back the same, and a document a
// hostile runner shaped is refused naming the field instead of reaching berthd's store.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/run_result.h"

namespace berth {
namespace {

using nlohmann::json;

RunResult Everything() {
  RunResult r;
  r.op = "apply";
  r.binary_name = "tofu";
  r.binary_version = "1.12.6";
  r.image = "registry.example.com/m@sha256:" + std::string(64, 'c');
  r.inputs_hash = "sha256:" + std::string(64, 'a');
  r.started_at = "2026-12-01T10:00:00Z";
  r.finished_at = "2026-12-01T10:01:00Z";
  r.steps = {{"init", 0, 0.75}, {"apply", 1, 12.5}};
  r.plan = PlanSummary{"sha256:" + std::string(64, 'b'), true, 1, 2, 3, 4, 5, true};
  r.outputs = std::vector<OutputInfo>{{"url", false}, {"password", true}};
  r.drift = DriftReport{true, {"berthtest_file.a"}};
  r.error = RunError{RunErrorKind::kApply, "apply", "tofu apply failed", 1, "Error: boom\n"};
  return r;
}

TEST(ParseRunResult, WhatTheWriterWritesReadsBackTheSame) {
  RunResult r = Everything();
  auto parsed = ParseRunResult(RunResultToJson(r).dump());
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, r);

  RunResult success;
  success.op = "plan";
  auto ok = ParseRunResult(SerializeRunResult(success, 4096));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(*ok, success);
  EXPECT_FALSE(ok->error);
}

TEST(ParseRunResult, TheWholeDocumentKeepsWhatTheBudgetedOneCuts) {
  RunResult r = Everything();
  r.op = std::string(300, 'o');  // identity fields are cut at 128 bytes within a budget
  auto parsed = ParseRunResult(RunResultToJson(r).dump());
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->op.size(), 300u);
}

// A field of the wrong type, a kind that is no kind, a count below zero: each is refused with
// the field's path, never read as a default.
TEST(ParseRunResult, AHostileDocumentIsRefusedNamingTheField) {
  json base = RunResultToJson(Everything());
  struct Case {
    const char* pointer;
    json value;
    const char* path;
  };
  const Case cases[] = {
      {"/plan/hash", 7, "$.plan.hash"},
      {"/plan", "sha256:x", "$.plan"},
      {"/plan/destroy", -1, "$.plan.destroy"},
      {"/plan/add", 1.5, "$.plan.add"},
      {"/plan/keyed", "yes", "$.plan.keyed"},
      {"/error/kind", "Whatever", "$.error.kind"},
      {"/error/exitCode", 1e300, "$.error.exitCode"},
      {"/error/exitCode", uint64_t{18446744073709551615u}, "$.error.exitCode"},
      {"/steps/1", "init", "$.steps[1]"},
      {"/steps/0/seconds", "fast", "$.steps[0].seconds"},
      {"/outputs", json::object(), "$.outputs"},
      {"/drift/resources", json::array({1}), "$.drift.resources"},
      {"/kind", "Pod", "$.kind"},
      {"/op", json::array(), "$.op"},
  };
  for (const Case& c : cases) {
    json doc = base;
    doc[json::json_pointer(c.pointer)] = c.value;
    auto parsed = ParseRunResult(doc.dump());
    ASSERT_FALSE(parsed) << c.pointer;
    ASSERT_EQ(parsed.error().fields.size(), 1u) << c.pointer;
    EXPECT_EQ(parsed.error().fields[0].path, c.path) << parsed.error().message;
  }
}

TEST(ParseRunResult, ADocumentWithoutItsErrorOrNotAnObjectIsRefused) {
  json doc = RunResultToJson(Everything());
  doc.erase("error");
  EXPECT_FALSE(ParseRunResult(doc.dump()));
  EXPECT_FALSE(ParseRunResult("[]"));
  EXPECT_FALSE(ParseRunResult("{\"error\":null"));
  EXPECT_FALSE(ParseRunResult(""));
}

TEST(ParseRunResult, UnknownFieldsOfANewerRunnerAreLeftOut) {
  json doc = RunResultToJson(Everything());
  doc["somethingNew"] = {{"a", 1}};
  auto parsed = ParseRunResult(doc.dump());
  ASSERT_TRUE(parsed);
  EXPECT_EQ(RunResultToJson(*parsed).dump().find("somethingNew"), std::string::npos);
}

}  // namespace
}  // namespace berth
