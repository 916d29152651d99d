// LaneScheduler's batch delivery (lane_scheduler.h, "Batches"; batch_run.cpp) with plain
// records, a real WorkerPool and a ManualClock: exact batch boundaries (max_messages), the
// timeout (max_wait_seconds, by the injected clock: flush_due_batches), drop_last and its
// accounting (counters, committed offsets, the drop handler), failures and abandonment of a
// batch as a whole, and incomplete batches while a partition is given up.
#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "controller/kafka/lane_scheduler.h"

namespace lagpilot {
namespace {

// A batch as the handler saw it.
struct SeenBatch {
  int32_t partition;
  std::vector<int64_t> offsets;
  bool operator==(const SeenBatch&) const = default;
};

class BatchFixture {
 public:
  explicit BatchFixture(BatchConfig config, Ordering ordering = Ordering::kKey) : config_(config) {
    config_.enabled = true;
    WorkerPoolOptions po;
    po.initial_workers = 4;
    po.max_workers = 4;
    po.queue_capacity = 1000;
    pool = std::make_unique<WorkerPool>(po, clock);
    sched = std::make_shared<LaneScheduler>(*pool, MessageHandler{}, clock, ordering, 0);
    sched->set_batching(
        config_, [this](std::span<const SourceMessage> b) { on_batch(b, delivered); },
        [this](std::span<const SourceMessage> b) { on_batch(b, dropped); });
  }
  ~BatchFixture() { pool->shutdown(std::numeric_limits<double>::infinity()); }

  void add(int32_t partition) {
    std::lock_guard<std::mutex> lock(sched->mu);
    PartitionPtr p = sched->add_partition_locked("t", partition);
    sched->start_partition_locked(*p, 0);
    parts.push_back(p);
  }
  // Offsets [from, to) of `partition`, keys cycling through three values (key mode would
  // otherwise give each key its own lane).
  void dispatch(int32_t partition, int64_t from, int64_t to) {
    std::vector<MessageRecord> records;
    for (int64_t o = from; o < to; ++o) {
      MessageRecord r;
      r.topic = topic_;
      r.partition = partition;
      r.offset = o;
      r.has_key = true;
      r.key = keys_[o % 3];
      r.value = value_;
      records.push_back(r);
    }
    std::vector<OffsetGap> gaps;
    sched->dispatch(records, gaps);
    settle();
  }
  // Lets the pool run what is queued (bounded).
  void settle() {
    pool->wait_idle();
    sched->drain_pending();
    pool->wait_idle();
  }
  int flush() {
    const int n = sched->flush_due_batches();
    settle();
    return n;
  }
  std::vector<SeenBatch> take_delivered() {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<SeenBatch> out;
    out.swap(delivered);
    sort(out);
    return out;
  }
  std::vector<SeenBatch> take_dropped() {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<SeenBatch> out;
    out.swap(dropped);
    sort(out);
    return out;
  }

  ManualClock clock;
  std::unique_ptr<WorkerPool> pool;
  std::shared_ptr<LaneScheduler> sched;
  std::vector<PartitionPtr> parts;
  std::mutex mu;  // guards delivered, dropped, throw_next
  std::vector<SeenBatch> delivered;
  std::vector<SeenBatch> dropped;
  int throw_next = 0;  // 1: std::runtime_error, 2: MessageAbandoned (once)
  int shed_next = 0;   // the next batch handler call sheds this many (count_as_shed)

 private:
  static void sort(std::vector<SeenBatch>& v) {
    std::sort(v.begin(), v.end(), [](const SeenBatch& a, const SeenBatch& b) {
      return a.partition != b.partition ? a.partition < b.partition
                                        : a.offsets.front() < b.offsets.front();
    });
  }
  void on_batch(std::span<const SourceMessage> b, std::vector<SeenBatch>& into) {
    std::lock_guard<std::mutex> lock(mu);
    SeenBatch seen{b.front().partition, {}};
    for (const SourceMessage& m : b) {
      EXPECT_EQ(m.partition, seen.partition) << "a batch mixes partitions";
      EXPECT_EQ(m.value, value_);
      seen.offsets.push_back(m.offset);
    }
    if (shed_next > 0) count_as_shed(static_cast<std::size_t>(shed_next));
    shed_next = 0;
    const int t = throw_next;
    throw_next = 0;
    if (t == 1) throw std::runtime_error("batch refused");
    if (t == 2) throw MessageAbandoned("stopping");
    into.push_back(std::move(seen));
  }

  BatchConfig config_;
  const std::string topic_ = "t";
  const std::string keys_[3] = {"a", "b", "c"};
  const std::string value_ = "v";
};

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t o = from; o < to; ++o) v.push_back(o);
  return v;
}

BatchConfig batch(int max_messages, double max_wait_seconds, bool drop_last) {
  BatchConfig c;
  c.max_messages = max_messages;
  c.max_wait_seconds = max_wait_seconds;
  c.drop_last = drop_last;
  return c;
}

TEST(BatchScheduler, FullBatchesOfMaxMessagesPerPartitionInOffsetOrderThenTheRestWhenDue) {
  BatchFixture f(batch(4, 2.0, false));
  f.add(0);
  f.add(1);
  f.dispatch(0, 0, 10);
  f.dispatch(1, 0, 6);
  EXPECT_EQ(f.take_delivered(),
            (std::vector<SeenBatch>{{0, range(0, 4)}, {0, range(4, 8)}, {1, range(0, 4)}}));
  // The incomplete batches wait: not delivered, not committed.
  EXPECT_EQ(f.sched->done_offset("t", 0), 8);
  EXPECT_EQ(f.sched->done_offset("t", 1), 4);
  EXPECT_EQ(f.sched->unfinished(), 4);
  f.clock.set(1.999);
  EXPECT_EQ(f.flush(), 0);
  EXPECT_TRUE(f.take_delivered().empty());
  f.clock.set(2.0);
  EXPECT_EQ(f.flush(), 2);
  EXPECT_EQ(f.take_delivered(), (std::vector<SeenBatch>{{0, range(8, 10)}, {1, range(4, 6)}}));
  EXPECT_EQ(f.sched->done_offset("t", 0), 10);
  EXPECT_EQ(f.sched->done_offset("t", 1), 6);
  EXPECT_EQ(f.sched->unfinished(), 0);
  const SourceCounters c = f.sched->counters_snapshot();
  EXPECT_EQ(c.processed, 16u);  // messages, not batches
  EXPECT_EQ(c.dropped_incomplete_batch, 0u);
  EXPECT_EQ(c.failed, 0u);
}

TEST(BatchScheduler, TheWaitRunsFromTheOldestWaitingMessagesArrival) {
  for (const Ordering ordering : {Ordering::kKey, Ordering::kPartition, Ordering::kUnordered}) {
    BatchFixture f(batch(3, 2.0, false), ordering);
    f.add(0);
    f.dispatch(0, 0, 4);  // t=0: [0,1,2] full; 3 waits from t=0
    EXPECT_EQ(f.take_delivered(), (std::vector<SeenBatch>{{0, range(0, 3)}}));
    f.clock.set(1.0);
    f.dispatch(0, 4, 5);  // 3 and 4 wait, 3 since t=0
    EXPECT_TRUE(f.take_delivered().empty());
    f.clock.set(2.0);
    EXPECT_EQ(f.flush(), 1);
    EXPECT_EQ(f.take_delivered(), (std::vector<SeenBatch>{{0, range(3, 5)}}));
    f.clock.set(2.5);
    f.dispatch(0, 5, 6);  // waits from t=2.5
    f.clock.set(4.4);
    EXPECT_EQ(f.flush(), 0);
    f.clock.set(4.5);
    EXPECT_EQ(f.flush(), 1);
    EXPECT_EQ(f.take_delivered(), (std::vector<SeenBatch>{{0, range(5, 6)}}));
    // Messages that fill a waiting batch send it at once.
    f.dispatch(0, 6, 8);
    EXPECT_TRUE(f.take_delivered().empty());
    f.dispatch(0, 8, 9);
    EXPECT_EQ(f.take_delivered(), (std::vector<SeenBatch>{{0, range(6, 9)}}));
    EXPECT_EQ(f.sched->done_offset("t", 0), 9);
    EXPECT_EQ(f.sched->counters_snapshot().processed, 9u);
  }
}

TEST(BatchScheduler, DropLastCountsCommitsAndHandsTheIncompleteBatchToTheDropHandler) {
  BatchFixture f(batch(4, 2.0, true));
  f.add(0);
  f.dispatch(0, 0, 6);
  EXPECT_EQ(f.take_delivered(), (std::vector<SeenBatch>{{0, range(0, 4)}}));
  f.clock.set(2.0);
  EXPECT_EQ(f.flush(), 1);
  EXPECT_TRUE(f.take_delivered().empty());
  EXPECT_EQ(f.take_dropped(), (std::vector<SeenBatch>{{0, range(4, 6)}}));
  EXPECT_EQ(f.sched->done_offset("t", 0), 6);  // committed past the dropped messages
  const SourceCounters c = f.sched->counters_snapshot();
  EXPECT_EQ(c.processed, 4u);
  EXPECT_EQ(c.dropped_incomplete_batch, 2u);
  EXPECT_EQ(c.consumed, c.processed + c.dropped_incomplete_batch);
  // Full batches are never dropped, whenever they fill.
  f.clock.set(3.0);
  f.dispatch(0, 6, 10);
  EXPECT_EQ(f.take_delivered(), (std::vector<SeenBatch>{{0, range(6, 10)}}));
  EXPECT_TRUE(f.take_dropped().empty());
}

TEST(BatchScheduler, AFailedBatchFailsAsAWholeAndAnAbandonedOneIsNotCommitted) {
  BatchFixture f(batch(4, 2.0, false));
  f.add(0);
  f.throw_next = 1;
  f.dispatch(0, 0, 4);
  SourceCounters c = f.sched->counters_snapshot();
  EXPECT_EQ(c.failed, 4u);
  EXPECT_EQ(c.processed, 0u);
  EXPECT_EQ(f.sched->done_offset("t", 0), 4);  // a failed message's offset completes
  f.throw_next = 2;
  f.dispatch(0, 4, 8);
  c = f.sched->counters_snapshot();
  EXPECT_EQ(c.dropped, 4u);                    // given up with the rest of its lane
  EXPECT_EQ(f.sched->done_offset("t", 0), 4);  // nothing of the abandoned batch
  EXPECT_EQ(f.sched->unfinished(), 0);
}

TEST(BatchScheduler, MessagesABatchHandlerShedsAreCountedAsShedNotProcessed) {
  BatchFixture f(batch(4, 2.0, false));
  f.add(0);
  f.shed_next = 3;
  f.dispatch(0, 0, 8);
  const SourceCounters c = f.sched->counters_snapshot();
  EXPECT_EQ(c.shed, 3u);
  EXPECT_EQ(c.processed, 5u);
  EXPECT_EQ(f.sched->done_offset("t", 0), 8);
}

TEST(BatchScheduler, GivingUpAPartitionDeliversItsIncompleteBatchOrWithDropLastLeavesIt) {
  {
    BatchFixture f(batch(4, 60.0, false));
    f.add(0);
    f.dispatch(0, 0, 3);
    EXPECT_TRUE(f.take_delivered().empty());
    const auto [given_up, running] = f.sched->drain_and_give_up(
        f.parts, std::chrono::steady_clock::now() + std::chrono::seconds(20));
    EXPECT_EQ(given_up, 0);
    EXPECT_EQ(running, 0);
    f.settle();
    EXPECT_EQ(f.take_delivered(), (std::vector<SeenBatch>{{0, range(0, 3)}}));
    EXPECT_EQ(f.sched->done_offset("t", 0), 3);
  }
  {
    BatchFixture f(batch(4, 60.0, true));
    f.add(0);
    f.dispatch(0, 0, 3);
    const auto start = std::chrono::steady_clock::now();
    const auto [given_up, running] =
        f.sched->drain_and_give_up(f.parts, start + std::chrono::seconds(20));
    // Not waited for (well below the deadline), not dropped: given up, delivered again.
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_EQ(given_up, 3);
    EXPECT_EQ(running, 0);
    f.settle();
    EXPECT_TRUE(f.take_delivered().empty());
    EXPECT_TRUE(f.take_dropped().empty());
    EXPECT_EQ(f.sched->done_offset("t", 0), 0);
    EXPECT_EQ(f.sched->counters_snapshot().dropped_incomplete_batch, 0u);
  }
}

}  // namespace
}  // namespace lagpilot
