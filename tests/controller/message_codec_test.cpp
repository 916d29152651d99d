#include "controller/loadgen/message_codec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace lagpilot {
namespace {

TEST(MessageCodec, EncodesReadableText) {
  EXPECT_EQ(encode_message(42, 1700000000123456), "seq=42 sent_us=1700000000123456");
  EXPECT_EQ(encode_message(7, -5, 3), "seq=7 sent_us=-5 xxx");
}

TEST(MessageCodec, RoundTripsExtremes) {
  const uint64_t seqs[] = {0, 1, 999, std::numeric_limits<uint64_t>::max()};
  const int64_t times[] = {0, 1700000000123456, -1, std::numeric_limits<int64_t>::min(),
                           std::numeric_limits<int64_t>::max()};
  for (uint64_t seq : seqs) {
    for (int64_t t : times) {
      for (std::size_t pad : {std::size_t{0}, std::size_t{1}, std::size_t{1000}}) {
        const std::string v = encode_message(seq, t, pad);
        auto d = decode_message(v);
        ASSERT_TRUE(d.has_value()) << v;
        EXPECT_EQ(d->seq, seq);
        EXPECT_EQ(d->sent_us, t);
      }
    }
  }
}

TEST(MessageCodec, PaddingAddsExactlyThatManyBytesPlusSeparator) {
  const std::size_t base = encode_message(5, 6).size();
  EXPECT_EQ(encode_message(5, 6, 100).size(), base + 1 + 100);
  EXPECT_EQ(encode_message(5, 6, 0).size(), base);
}

TEST(MessageCodec, EncodeIntoReusesBuffer) {
  std::string out = "old contents that must go away";
  encode_message_into(out, 3, 4);
  EXPECT_EQ(out, "seq=3 sent_us=4");
  encode_message_into(out, 12345, 678, 2);
  EXPECT_EQ(out, "seq=12345 sent_us=678 xx");
}

TEST(MessageCodec, AcceptsAnyTailAfterSpace) {
  auto d = decode_message("seq=1 sent_us=2 anything goes here");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, (DecodedMessage{1, 2}));
}

TEST(MessageCodec, RejectsMalformedValues) {
  const char* bad[] = {
      "",
      "seq=",
      "seq=1",
      "seq=1 ",
      "seq=1 sent_us=",
      "seq=1 sent_us=x",
      "seq=abc sent_us=1",
      "seq=-1 sent_us=1",  // seq is unsigned
      "seq=+1 sent_us=1",
      "seq= 1 sent_us=1",
      "seq=1  sent_us=1",   // two spaces
      "seq=1 sent_us=12x",  // garbage glued to the number
      "seq=1x sent_us=12",
      "seq=18446744073709551616 sent_us=1",  // u64 overflow
      "seq=1 sent_us=9223372036854775808",   // i64 overflow
      "SEQ=1 sent_us=2",
      " seq=1 sent_us=2",
      "sent_us=2 seq=1",
      "seq=1,sent_us=2",
  };
  for (const char* v : bad) {
    EXPECT_FALSE(decode_message(v).has_value()) << "'" << v << "'";
  }
}

TEST(MessageCodec, DecodesNonTerminatedView) {
  const std::string buf = "seq=77 sent_us=88123";
  // A view that ends in the middle of sent_us: must not read past its end.
  auto d = decode_message(std::string_view(buf).substr(0, buf.size() - 3));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->sent_us, 88);
}

TEST(MessageCodec, EpochMicrosIsPlausible) {
  const int64_t now = epoch_micros_now();
  EXPECT_GT(now, int64_t{1600000000} * 1000000);  // after Sep 2020
  EXPECT_LT(now, int64_t{4100000000} * 1000000);  // before 2100
}

}  // namespace
}  // namespace lagpilot
