// An apply's outputs from its events: taken when every output is plain, refused (so that
// `output -json` runs) when one is sensitive or the events are not what tofu writes.
#include "tf/apply_events.h"

#include <gtest/gtest.h>

namespace berth::tf {
namespace {

const std::string kVersion =
    R"({"@level":"info","@message":"OpenTofu 1.12.6","tofu":"1.12.6","type":"version"})";
std::string OutputsEvent(const std::string& outputs) {
  return R"({"@level":"info","@message":"Outputs: 1","outputs":)" + outputs +
         R"(,"type":"outputs"})";
}

TEST(ApplyEvents, PlainOutputsComeFromTheLastOutputsEvent) {
  std::string events = kVersion + "\n" +
                       OutputsEvent(R"({"a":{"sensitive":false,"type":"string","value":"old"}})") +
                       "\n" +
                       OutputsEvent(R"({"a":{"sensitive":false,"type":"string","value":"x"},)"
                                    R"("n":{"sensitive":false,"type":"number","value":2}})") +
                       "\n";
  auto outputs = PlainOutputsFromEvents(events);
  ASSERT_TRUE(outputs);
  EXPECT_EQ((*outputs)["a"]["value"], "x");
  EXPECT_EQ((*outputs)["n"]["value"], 2);
  auto none = PlainOutputsFromEvents(kVersion + "\n" + OutputsEvent("{}"));
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(ApplyEvents, ASensitiveOutputOrAnythingOddLeavesItToOutputJson) {
  for (const std::string& events : {
           kVersion + "\n",  // no outputs event (a failed apply)
           OutputsEvent(R"({"p":{"sensitive":true,"type":"string"}})"),
           OutputsEvent(R"({"p":{"sensitive":"no","type":"string","value":"x"}})"),
           OutputsEvent(R"({"p":{"type":"string","value":"x"}})"),
           OutputsEvent(R"({"p":{"sensitive":false,"type":"string"}})"),
           OutputsEvent(R"([1, 2])"),
           OutputsEvent(R"({"p":{"sensitive":false,"value":)" + std::string(100000, '[')),
           std::string(R"({"type":"outputs")") + " truncated",
       }) {
    EXPECT_FALSE(PlainOutputsFromEvents(events)) << events.substr(0, 120);
  }
}

}  // namespace
}  // namespace berth::tf
