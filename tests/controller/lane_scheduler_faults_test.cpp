// LaneScheduler under faults, without librdkafka (runs under ThreadSanitizer too): an exception
// that escapes a lane run (outside the handler) is recorded by the pool and leaves no lane
// listed as running; offsets below the next expected one are reported as one backward gap per
// partition and poll (the consumer side tells a truncation from re-deliveries).
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "controller/kafka/lane_scheduler.h"

namespace lagpilot {
namespace {

struct FaultFixture {
  explicit FaultFixture(Ordering ordering, MessageHandler handler) {
    WorkerPoolOptions po;
    po.initial_workers = 2;
    po.max_workers = 2;
    po.queue_capacity = 1000;
    pool = std::make_unique<WorkerPool>(po, clock);
    sched = std::make_shared<LaneScheduler>(*pool, std::move(handler), clock, ordering, 0);
  }
  ~FaultFixture() { pool->shutdown(std::numeric_limits<double>::infinity()); }

  PartitionPtr add(int32_t partition, int64_t start = 0) {
    std::lock_guard<std::mutex> lock(sched->mu);
    PartitionPtr p = sched->add_partition_locked("t", partition);
    sched->start_partition_locked(*p, start);
    return p;
  }
  std::vector<OffsetGap> dispatch(int32_t partition, int64_t from, int64_t to) {
    std::vector<MessageRecord> records;
    for (int64_t o = from; o < to; ++o) {
      MessageRecord r;
      r.topic = topic;
      r.partition = partition;
      r.offset = o;
      r.value = value;
      records.push_back(r);
    }
    std::vector<OffsetGap> gaps;
    sched->dispatch(records, gaps);
    return gaps;
  }

  const std::string topic = "t";
  const std::string value = "v";
  ManualClock clock;
  std::unique_ptr<WorkerPool> pool;
  std::shared_ptr<LaneScheduler> sched;
};

TEST(LaneSchedulerFaults, ExceptionEscapingARunIsRecordedAndLeavesNoRunningLane) {
  std::mutex mu;  // guards handled
  std::vector<int64_t> handled;
  FaultFixture f(Ordering::kPartition, [&](const SourceMessage& m) {
    std::lock_guard<std::mutex> lock(mu);
    handled.push_back(m.offset);
  });
  int calls = 0;  // only the one worker running the partition's lane touches it
  f.sched->run_fault_for_testing = [&calls] {
    if (++calls == 4) throw std::runtime_error("injected run fault");
  };
  f.add(0);
  f.dispatch(0, 0, 10);
  f.pool->wait_idle();
  EXPECT_EQ(f.pool->task_failures(), 1u);
  EXPECT_EQ(f.pool->task_failure(), "injected run fault");
  {
    std::lock_guard<std::mutex> lock(f.sched->mu);
    EXPECT_EQ(f.sched->running_lanes_locked(), 0u) << "a failed run stayed listed as running";
    f.sched->flush_running_locked();  // would touch a dangling lane pointer
  }
  // Offsets 0..2 ran and are committable; the rest of the lane was dropped (not committed, so
  // delivered again), and nothing stays unfinished.
  EXPECT_EQ(f.sched->done_offset("t", 0), 3);
  EXPECT_EQ(f.sched->unfinished(), 0);
  const SourceCounters c = f.sched->counters_snapshot();
  EXPECT_EQ(c.processed, 3u);
  EXPECT_EQ(c.dropped, 7u);
  // The partition goes on: later messages are scheduled again (a new lane).
  f.sched->run_fault_for_testing = nullptr;
  f.dispatch(0, 10, 12);
  f.pool->wait_idle();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(handled.size(), 5u);
}

TEST(LaneSchedulerFaults, OffsetsBelowTheNextOneAreReportedAsOneBackwardGap) {
  FaultFixture f(Ordering::kUnordered, [](const SourceMessage&) {});
  f.add(0);
  ASSERT_TRUE(f.dispatch(0, 0, 100).empty());
  f.pool->wait_idle();
  // The log restarted at 0 (truncated or recreated): 0..29 again.
  const std::vector<OffsetGap> gaps = f.dispatch(0, 0, 30);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].expected, 100);
  EXPECT_EQ(gaps[0].offset, 0);
  EXPECT_EQ(gaps[0].count, 30u);
  EXPECT_EQ(f.sched->counters_snapshot().duplicates_skipped, 30u);
  // A forward jump is a forward gap (count unused).
  const std::vector<OffsetGap> forward = f.dispatch(0, 105, 106);
  ASSERT_EQ(forward.size(), 1u);
  EXPECT_EQ(forward[0].expected, 100);
  EXPECT_EQ(forward[0].offset, 105);
}

}  // namespace
}  // namespace lagpilot
