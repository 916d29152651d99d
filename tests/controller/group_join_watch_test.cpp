// GroupJoinWatch through its test seam: what the interceptors see on the wire, without a
// broker (the source's rebalance tests drive it against the embedded broker).
#include "controller/kafka/group_join_watch.h"

#include <gtest/gtest.h>

#include <chrono>

namespace lagpilot {
namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr int16_t kJoinGroup = 11, kHeartbeat = 12, kSyncGroup = 14, kOffsetCommit = 8;

TEST(GroupJoinWatch, HoldsFromAJoinGroupWrittenUntilTheSyncGroupAnswer) {
  GroupJoinWatch watch;
  EXPECT_FALSE(watch.joining(now()));
  watch.on_request_sent(kOffsetCommit);
  watch.on_request_sent(kHeartbeat);
  EXPECT_FALSE(watch.joining(now()));
  watch.on_request_sent(kJoinGroup);
  EXPECT_TRUE(watch.joining(now()));
  EXPECT_EQ(watch.joins(), 1u);
  // The JoinGroup's own answer does not end it: the generation settles with the sync.
  watch.on_response_received(kJoinGroup, RD_KAFKA_RESP_ERR_NO_ERROR);
  watch.on_response_received(kHeartbeat, RD_KAFKA_RESP_ERR_NO_ERROR);
  EXPECT_TRUE(watch.joining(now()));
  watch.on_response_received(kSyncGroup, RD_KAFKA_RESP_ERR_NO_ERROR);
  EXPECT_FALSE(watch.joining(now()));
}

TEST(GroupJoinWatch, AJoinGroupLostOnTheWireOrAHoldPastItsLimitEndsIt) {
  GroupJoinWatch watch;
  watch.on_request_sent(kJoinGroup);
  watch.on_response_received(kJoinGroup, RD_KAFKA_RESP_ERR__TRANSPORT);
  EXPECT_FALSE(watch.joining(now()));
  watch.on_request_sent(kJoinGroup);
  EXPECT_TRUE(watch.joining(now() + GroupJoinWatch::kMaxHoldSeconds - 1));
  EXPECT_FALSE(watch.joining(now() + GroupJoinWatch::kMaxHoldSeconds + 1));
  EXPECT_EQ(watch.joins(), 2u);
  // After a revoke, the hold starts before the JoinGroup is written, and lasts through it.
  watch.rejoin_expected();
  EXPECT_TRUE(watch.joining(now()));
  watch.on_request_sent(kJoinGroup);
  watch.on_response_received(kSyncGroup, RD_KAFKA_RESP_ERR_NO_ERROR);
  EXPECT_FALSE(watch.joining(now()));
}

}  // namespace
}  // namespace lagpilot
