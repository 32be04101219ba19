// The result document: its shape, and that it always fits its budget as valid JSON.
#include "core/run_result.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace berth {
namespace {

using nlohmann::json;

RunResult Failed(std::string tail, std::string message = "tofu apply failed") {
  RunResult r;
  r.op = "apply";
  r.binary_name = "tofu";
  r.binary_version = "1.12.6";
  r.image = "registry.example.com/acme/module:v1";
  r.inputs_hash = "sha256:" + std::string(64, 'a');
  r.started_at = "2026-11-29T10:00:00Z";
  r.finished_at = "2026-11-29T10:01:00Z";
  for (int i = 0; i < 6; ++i) r.steps.push_back({"step" + std::to_string(i), 0, 1.5});
  r.outputs = std::vector<OutputInfo>{{"a", false}, {"b", true}};
  r.drift = DriftReport{true, std::vector<std::string>(50, "module.x.berthtest_file.this")};
  r.error = RunError{RunErrorKind::kApply, "apply", std::move(message), 1, std::move(tail)};
  return r;
}

TEST(RunResult, ASuccessHasAllFieldsAndANullError) {
  RunResult r;
  r.op = "plan";
  r.binary_name = "tofu";
  r.plan = PlanSummary{"sha256:" + std::string(64, 'b'), true, 1, 2, 3, 4, 5, true};
  auto doc = json::parse(SerializeRunResult(r, 4096));
  EXPECT_EQ(doc["apiVersion"], "berth.dev/v1");
  EXPECT_EQ(doc["kind"], "RunResult");
  EXPECT_TRUE(doc["error"].is_null());
  EXPECT_EQ(doc["plan"]["replace"], 4);
  EXPECT_EQ(doc["plan"]["keyed"], true);
  EXPECT_EQ(doc["plan"]["hasChanges"], true);
}

TEST(RunResult, AnErrorCarriesKindStepMessageExitCodeAndTail) {
  auto doc = json::parse(SerializeRunResult(Failed("the end of it"), 4096));
  EXPECT_EQ(doc["error"]["kind"], "Apply");
  EXPECT_EQ(doc["error"]["step"], "apply");
  EXPECT_EQ(doc["error"]["exitCode"], 1);
  EXPECT_EQ(doc["error"]["tail"], "the end of it");
}

TEST(RunResult, AHugeTailShrinksFromItsStartAndTheDocumentStaysValid) {
  std::string tail(10 << 20, 'x');
  tail += "THE LAST LINE";
  std::string out = SerializeRunResult(Failed(tail), 4096);
  ASSERT_LE(out.size(), 4096u);
  auto doc = json::parse(out);
  std::string kept = doc["error"]["tail"];
  EXPECT_TRUE(kept.ends_with("THE LAST LINE"));
  EXPECT_GT(kept.size(), 1000u) << "the tail shrank more than it had to";
  EXPECT_EQ(doc["outputs"].size(), 2u) << "optional fields went before the tail was used up";
}

TEST(RunResult, EveryBudgetIsKeptWithValidJson) {
  // Escaping makes some bytes cost six: a tail of control characters is the worst case.
  std::string tail;
  for (int i = 0; i < 20000; ++i) tail += static_cast<char>(i % 32);
  std::string message(20000, '"');
  for (size_t budget = kMinResultBytes; budget <= 12288; budget += 97) {
    std::string out = SerializeRunResult(Failed(tail, message), budget);
    ASSERT_LE(out.size(), budget);
    auto doc = json::parse(out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << "invalid JSON at budget " << budget;
    EXPECT_EQ(doc["error"]["kind"], "Apply");
    EXPECT_EQ(doc["op"], "apply");
  }
}

TEST(RunResult, EvenTheShortFieldsGiveWayWhenEscapingBloatsThem) {
  // Found by run_result_fuzz: control characters cost six bytes each once escaped.
  std::string bloat(300, '\x01');
  RunResult r = Failed(bloat, bloat);
  r.op = r.binary_name = r.binary_version = r.started_at = r.finished_at = bloat;
  r.plan = PlanSummary{bloat, false, 0, 0, 0, 0, 0, false};
  r.error->step = bloat;
  std::string out = SerializeRunResult(r, kMinResultBytes);
  EXPECT_LE(out.size(), kMinResultBytes);
  EXPECT_FALSE(json::parse(out, nullptr, false).is_discarded());
}

TEST(RunResult, OptionalFieldsGoInTheDocumentedOrder) {
  std::string out = SerializeRunResult(Failed(std::string(100, 't'), std::string(3000, 'm')), 1024);
  auto doc = json::parse(out);
  EXPECT_FALSE(doc["drift"].contains("resources"));
  EXPECT_TRUE(doc["drift"].contains("drifted"));
  EXPECT_EQ(doc["error"]["tail"], "");
}

TEST(RunResult, InvalidUtf8FromAToolCannotBreakTheDocument) {
  std::string out = SerializeRunResult(Failed("bad \xff\xfe bytes"), 4096);
  auto doc = json::parse(out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
}

TEST(RunResult, ATailIsNeverCutInsideAUtf8Sequence) {
  std::string tail;
  for (int i = 0; i < 5000; ++i) tail += "\xc3\xa9";  // é
  auto doc = json::parse(SerializeRunResult(Failed(tail), 1500));
  std::string kept = doc["error"]["tail"];
  EXPECT_EQ(kept.find("\xef\xbf\xbd"), std::string::npos) << "a sequence was split";
}

TEST(RunResult, ErrorKindsRoundTripByName) {
  for (int k = 0; k <= static_cast<int>(RunErrorKind::kInternal); ++k) {
    auto kind = static_cast<RunErrorKind>(k);
    EXPECT_EQ(ParseRunErrorKind(RunErrorKindName(kind)), kind);
  }
  EXPECT_FALSE(ParseRunErrorKind("Nope"));
}

}  // namespace
}  // namespace berth
