// go-cty's msgpack as tofu writes a plan's values, decoded without a schema: every shape a
// plan holds, and hostile bytes refused rather than trusted.
#include "tf/cty_msgpack.h"

#include <gtest/gtest.h>

#include <string>

namespace berth::tf {
namespace {

using nlohmann::json;
using namespace std::string_literals;

json Decoded(const std::string& bytes) {
  auto value = DecodeCtyMsgpack(bytes);
  EXPECT_TRUE(value) << value.error().ToString();
  return value ? *value : json();
}

std::string Refusal(const std::string& bytes) {
  auto value = DecodeCtyMsgpack(bytes);
  EXPECT_FALSE(value) << value->dump();
  return value ? "" : value.error().message;
}

TEST(CtyMsgpack, ObjectsListsNumbersAndStringsDecodeAsTheirJson) {
  // {"n": 300, "neg": -2, "f": 1.5, "s": "x", "l": [true, nil], "big": 2^40}
  const std::string bytes =
      "\x86\xa1n\xcd\x01\x2c\xa3neg\xfe\xa1\x66\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00\xa1s\xa1x"
      "\xa1l\x92\xc3\xc0\xa3\x62ig\xcf\x00\x00\x01\x00\x00\x00\x00\x00"s;
  EXPECT_EQ(Decoded(bytes), json::parse(R"({"n":300,"neg":-2,"f":1.5,"s":"x","l":[true,null],
                                           "big":1099511627776})"));
  EXPECT_EQ(Decoded("\xd1\xff\x38"s), json(-200));  // int16
}

TEST(CtyMsgpack, ADynamicValueIsItsValueAndAnUnknownIsMarked) {
  // A dynamic value: [its type as JSON bytes, the value].
  EXPECT_EQ(Decoded("\x92\xc4\x08\"number\"\x03"), json(3));
  EXPECT_TRUE(IsUnknownMarker(Decoded("\xd4\x00\x00"s)));
  EXPECT_TRUE(IsUnknownMarker(Decoded("\xc7\x02\x0c\x81\x01"s)));  // refined
  json object = Decoded("\x81\xa2id\xd4\x00\x00"s);
  EXPECT_TRUE(IsUnknownMarker(object["id"]));
  EXPECT_FALSE(IsSensitiveMarker(object["id"]));
  // A real two-element list of strings is not taken for a dynamic value.
  EXPECT_EQ(Decoded("\x92\xa1\x61\xa1\x62"), json::parse(R"(["a","b"])"));
}

TEST(CtyMsgpack, HostileBytesAreRefusedNamingWhy) {
  EXPECT_NE(Refusal("\xdd\xff\xff\xff\xff").find("more elements than bytes left"),
            std::string::npos);
  EXPECT_NE(Refusal("\xdf\x7f\xff\xff\xff").find("more entries than bytes left"),
            std::string::npos);
  EXPECT_NE(Refusal("\xdb\xff\xff\xff\xffx").find("longer than what is left"), std::string::npos);
  EXPECT_NE(Refusal(std::string(200, '\x91') + "\xc0").find("nested deeper"), std::string::npos);
  EXPECT_NE(Refusal("\xd4\x05\x00"s).find("is not cty's"), std::string::npos);
  EXPECT_NE(Refusal("\x81\x01\x02").find("key that is not a string"), std::string::npos);
  EXPECT_NE(Refusal("\xc1").find("unknown type byte"), std::string::npos);
  EXPECT_NE(Refusal("\xc0\xc0"s).find("bytes after the value"), std::string::npos);
  EXPECT_NE(Refusal("").find("ends early"), std::string::npos);
}

}  // namespace
}  // namespace berth::tf
