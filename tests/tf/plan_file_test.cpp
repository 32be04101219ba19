// Reading tofu's plan file without tofu: counts, destructive addresses and the effect hash from
// hand-written plan files, and every malformed or hostile file refused with a reason.
#include "tf/plan_file.h"

#include <gtest/gtest.h>

#include "plan_file_builder.h"

namespace berth::tf {
namespace {

using testing::Bytes;
using testing::PlanFile;
using testing::ResourceChange;
using testing::Varint;
using testing::Zip;

// msgpack of {"v": n} and of nil.
std::string Value(int n) { return std::string("\x81\xa1v", 3) + static_cast<char>(n); }
const std::string kNil = "\xc0";

TEST(PlanFile, CountsEachKindOfActionAsTheJsonPlanDoes) {
  auto analysis = AnalysePlanFile(
      PlanFile({ResourceChange("a.new", 1, {Value(1)}),
                ResourceChange("a.changed", 3, {Value(1), Value(2)}),
                ResourceChange("a.gone", 5, {Value(1), kNil}),
                ResourceChange("a.swapped", 6, {Value(1), Value(2)}),
                ResourceChange("a.swapped2", 7, {Value(1), Value(2)}),
                ResourceChange("a.same", 0, {Value(1)}), ResourceChange("data.x", 2, {kNil})}),
      "");
  ASSERT_TRUE(analysis) << analysis.error().ToString();
  const auto& s = analysis->summary;
  EXPECT_EQ(s.add, 1);
  EXPECT_EQ(s.change, 1);
  EXPECT_EQ(s.destroy, 1);
  EXPECT_EQ(s.replace, 2);
  EXPECT_TRUE(s.has_changes);
  EXPECT_FALSE(s.keyed);
  EXPECT_EQ(analysis->destructive, (std::vector<std::string>{"a.gone", "a.swapped", "a.swapped2"}));
}

TEST(PlanFile, TheHashFollowsTheValuesAndTheKeyButNotTheOrder) {
  auto a = AnalysePlanFile(PlanFile({ResourceChange("a.x", 1, {Value(1)}),
                                     ResourceChange("a.y", 3, {Value(1), Value(2)})}),
                           "k");
  auto reordered = AnalysePlanFile(PlanFile({ResourceChange("a.y", 3, {Value(1), Value(2)}),
                                             ResourceChange("a.x", 1, {Value(1)})}),
                                   "k");
  auto other_value = AnalysePlanFile(PlanFile({ResourceChange("a.x", 1, {Value(1)}),
                                               ResourceChange("a.y", 3, {Value(1), Value(3)})}),
                                     "k");
  auto other_key = AnalysePlanFile(PlanFile({ResourceChange("a.x", 1, {Value(1)}),
                                             ResourceChange("a.y", 3, {Value(1), Value(2)})}),
                                   "k2");
  ASSERT_TRUE(a && reordered && other_value && other_key);
  EXPECT_EQ(a->summary.hash, reordered->summary.hash);
  EXPECT_NE(a->summary.hash, other_value->summary.hash);
  EXPECT_NE(a->summary.hash, other_key->summary.hash);
  EXPECT_TRUE(a->summary.keyed);
}

TEST(PlanFile, ANoOpPlanHasNoChangesAndTheEmptyHash) {
  auto none = AnalysePlanFile(PlanFile({ResourceChange("a.same", 0, {Value(1)})}), "");
  auto empty = AnalysePlanFile(PlanFile({}), "");
  ASSERT_TRUE(none && empty);
  EXPECT_FALSE(none->summary.has_changes);
  EXPECT_EQ(none->summary.hash, empty->summary.hash);
}

TEST(PlanFile, ImportsAndDeposedObjectsAreNamed) {
  std::string change = Varint(1, 0) + Bytes(2, Bytes(1, Value(1))) + Bytes(5, Bytes(1, "id-1"));
  std::string imported = Bytes(13, "a.imported") + Bytes(9, change);
  std::string deposed = ResourceChange("a.old", 5, {Value(1), kNil}) + Bytes(7, "00abc");
  auto analysis = AnalysePlanFile(PlanFile({imported, deposed}), "");
  ASSERT_TRUE(analysis) << analysis.error().ToString();
  EXPECT_EQ(analysis->summary.import, 1);
  EXPECT_EQ(analysis->destructive, (std::vector<std::string>{"a.old (deposed object 00abc)"}));
}

TEST(PlanFile, AFileInAnotherFormatIsLeftToShowJson) {
  for (const auto& file : {std::string("{\"encrypted_data\": \"...\", \"meta\": {}}"),
                           PlanFile({}, 2), Zip({{.name = "tfstate", .content = "{}"}})}) {
    auto analysis = AnalysePlanFile(file, "");
    ASSERT_FALSE(analysis);
    EXPECT_EQ(analysis.error().kind, ErrorKind::kFailedPrecondition) << analysis.error().ToString();
  }
}

TEST(PlanFile, HostileFilesAreRefusedWithAReason) {
  std::string good = PlanFile({ResourceChange("a.x", 1, {Value(1)})});
  std::string bad_crc = good;
  bad_crc[40] = static_cast<char>(bad_crc[40] ^ 0x55);  // inside the deflated tfplan
  std::string bomb_content(4 << 20, 'A');
  struct Case {
    std::string name, file, says;
  } cases[] = {
      {"empty", "", "shorter than its end record"},
      {"truncated", good.substr(0, good.size() / 2), "no end of central directory"},
      {"corrupted", bad_crc, "tfplan"},
      {"bomb", Zip({{.name = "tfplan", .content = bomb_content, .declared_size = 100}}),
       "inflates to more than 100 bytes"},
      {"stored, wrong size",
       Zip({{.name = "tfplan", .content = "abc", .deflate = false, .declared_size = 2}}),
       "not the size"},
      {"not protobuf", Zip({{.name = "tfplan", .content = "\xff\xff\xff"}}), "not valid protobuf"},
      {"a length past the end",
       Zip({{.name = "tfplan", .content = Varint(1, 3) + std::string("\x1a\x7f", 2)}}),
       "not valid protobuf"},
      {"no address", PlanFile({Bytes(9, Varint(1, 1))}), "has no address"},
      {"unknown action", PlanFile({ResourceChange("a.x", 99, {})}), "unknown action 99"},
  };
  for (const auto& c : cases) {
    auto analysis = AnalysePlanFile(c.file, "");
    ASSERT_FALSE(analysis) << c.name;
    EXPECT_NE(analysis.error().ToString().find(c.says), std::string::npos)
        << c.name << ": " << analysis.error().ToString();
  }
}

}  // namespace
}  // namespace berth::tf
