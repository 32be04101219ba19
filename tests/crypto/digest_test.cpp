// SHA-256 in one piece and in many agree with each other and with FIPS 180-2's vector.
#include "crypto/digest.h"

#include <gtest/gtest.h>

namespace berth::crypto {
namespace {

TEST(Sha256, InPiecesIsTheSameAsWhole) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string text(100000, 'x');
  Sha256 pieces;
  for (size_t at = 0; at < text.size(); at += 7777)
    pieces.Update(std::string_view(text).substr(at, 7777));
  EXPECT_EQ(pieces.HexDigest(), Sha256Hex(text));
  Sha256 empty;
  EXPECT_EQ(empty.HexDigest(), Sha256Hex(""));
}

TEST(Sha256, TheBytesAreWhatTheHexSpells) {
  EXPECT_EQ(Sha256Bytes("abc").size(), 32u);
  EXPECT_EQ(HexEncode(Sha256Bytes("abc")), Sha256Hex("abc"));
  EXPECT_EQ(HexEncode(std::string("\x00\x7f\x80\xff", 4)), "007f80ff");
}

}  // namespace
}  // namespace berth::crypto
