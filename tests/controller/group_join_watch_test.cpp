// GroupJoinWatch through its test seam: what the interceptors see on the wire, without a
// broker (the source's rebalance tests drive it against the embedded broker).
#include "controller/kafka/group_join_watch.h"

#include <gtest/gtest.h>

namespace lagpilot {
namespace {

constexpr int16_t kJoinGroup = 11, kHeartbeat = 12, kSyncGroup = 14, kOffsetCommit = 8;

TEST(GroupJoinWatch, HoldsFromAJoinGroupWrittenUntilTheSyncGroupAnswer) {
  GroupJoinWatch watch;
  EXPECT_FALSE(watch.joining());
  watch.on_request_sent(kOffsetCommit);
  watch.on_request_sent(kHeartbeat);
  EXPECT_FALSE(watch.joining());
  watch.on_request_sent(kJoinGroup);
  EXPECT_TRUE(watch.joining());
  EXPECT_EQ(watch.joins(), 1u);
  // The JoinGroup's own answer does not end it: the generation settles with the sync.
  watch.on_response_received(kJoinGroup, RD_KAFKA_RESP_ERR_NO_ERROR);
  watch.on_response_received(kHeartbeat, RD_KAFKA_RESP_ERR_NO_ERROR);
  EXPECT_TRUE(watch.joining());
  watch.on_response_received(kSyncGroup, RD_KAFKA_RESP_ERR_NO_ERROR);
  EXPECT_FALSE(watch.joining());
}

TEST(GroupJoinWatch, AJoinGroupLostOnTheWireOrARebalanceCallbackEndsIt) {
  GroupJoinWatch watch;
  watch.on_request_sent(kJoinGroup);
  watch.on_response_received(kJoinGroup, RD_KAFKA_RESP_ERR__TRANSPORT);
  EXPECT_FALSE(watch.joining());
  watch.on_request_sent(kJoinGroup);
  watch.rebalanced();
  EXPECT_FALSE(watch.joining());
  EXPECT_EQ(watch.joins(), 2u);
}

}  // namespace
}  // namespace lagpilot
