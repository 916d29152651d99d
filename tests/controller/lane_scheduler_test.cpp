// LaneScheduler (the Kafka source's scheduling core) driven with plain records and a real
// WorkerPool, without librdkafka: key ordering, unordered chunks, the commit offset under
// out-of-order completion, failing handlers, giving a partition up, the pending buffer, and
// the unfinished count. The clock is a ManualClock that never moves (runs are bounded by
// message count only); waits on worker threads are bounded waits on conditions.
#include "controller/kafka/lane_scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/common/wait.h"

namespace lagpilot {
namespace {

constexpr auto kWaitLimit = std::chrono::seconds(20);  // a bound, never reached when passing

// A condition that worker threads change; wait() blocks until it holds (bounded).
class Signal {
 public:
  template <typename F>
  void update(F f) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      f();
    }
    cv_.notify_all();
  }
  template <typename P>
  bool wait(P pred) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWaitLimit, pred);
  }
  std::mutex& mutex() { return mu_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

// Holds handlers until opened.
class Gate {
 public:
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, kWaitLimit, [&] { return open_; });
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

struct Fixture {
  explicit Fixture(Ordering ordering, int workers = 4, std::size_t queue_capacity = 1000,
                   MessageHandler handler = {}) {
    WorkerPoolOptions po;
    po.initial_workers = workers;
    po.max_workers = workers;
    po.queue_capacity = queue_capacity;
    pool = std::make_unique<WorkerPool>(po, clock);
    sched = std::make_shared<LaneScheduler>(*pool, std::move(handler), clock, ordering, 0);
  }
  ~Fixture() { pool->shutdown(std::numeric_limits<double>::infinity()); }

  PartitionPtr add(const std::string& topic, int32_t partition, int64_t start = 0) {
    std::lock_guard<std::mutex> lock(sched->mu);
    PartitionPtr p = sched->add_partition_locked(topic, partition);
    sched->start_partition_locked(*p, start);
    return p;
  }
  void dispatch(const std::vector<MessageRecord>& records) {
    gaps.clear();
    sched->dispatch(records, gaps);
  }
  // Until nothing is unfinished: the pool runs dry, then the pending buffer is retried.
  bool drain() {
    const auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
    while (std::chrono::steady_clock::now() < deadline) {
      pool->wait_idle();
      sched->drain_pending();
      if (sched->unfinished() == 0 && sched->pending_lanes() == 0) return true;
    }
    return false;
  }

  ManualClock clock;
  std::unique_ptr<WorkerPool> pool;
  std::shared_ptr<LaneScheduler> sched;
  std::vector<OffsetGap> gaps;
};

// Records with views into `keys` / `values` (which must outlive the dispatch).
MessageRecord record(const std::string& topic, int32_t partition, int64_t offset,
                     const std::string* key, const std::string& value) {
  MessageRecord r;
  r.topic = topic;
  r.partition = partition;
  r.offset = offset;
  r.has_key = key != nullptr;
  if (key != nullptr) r.key = *key;
  r.value = value;
  return r;
}

const std::string kTopic = "t";
const std::string kValue = "v";

TEST(LaneScheduler, SameKeyRunsInOffsetOrderOneAtATime) {
  constexpr int kMessages = 3000;
  const std::vector<std::string> keys = {"a", "b", "c", "d", "e"};
  std::mutex mu;  // guards seen, in_flight
  std::map<std::string, std::vector<int64_t>> seen;
  std::map<std::string, int> in_flight;
  std::atomic<int> overlaps{0};
  Fixture f(Ordering::kKey, 4, 1000, [&](const SourceMessage& m) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (++in_flight[m.key] > 1) ++overlaps;
      seen[m.key].push_back(m.offset);
    }
    std::lock_guard<std::mutex> lock(mu);
    --in_flight[m.key];
  });
  f.add(kTopic, 0);
  std::vector<MessageRecord> batch;
  for (int i = 0; i < kMessages; ++i) {
    batch.push_back(record(kTopic, 0, i, &keys[i % keys.size()], kValue));
    if (batch.size() == 97) {  // several dispatches, so that lanes are refilled while running
      f.dispatch(batch);
      batch.clear();
    }
  }
  f.dispatch(batch);
  ASSERT_TRUE(f.drain());
  EXPECT_EQ(overlaps.load(), 0);
  std::size_t total = 0;
  for (const auto& [key, offsets] : seen) {
    total += offsets.size();
    for (std::size_t i = 1; i < offsets.size(); ++i) {
      ASSERT_LT(offsets[i - 1], offsets[i]) << "key " << key;
    }
  }
  EXPECT_EQ(total, static_cast<std::size_t>(kMessages));
  EXPECT_EQ(f.sched->done_offset(kTopic, 0), kMessages);
  const SourceCounters c = f.sched->counters_snapshot();
  EXPECT_EQ(c.consumed, static_cast<uint64_t>(kMessages));
  EXPECT_EQ(c.processed, static_cast<uint64_t>(kMessages));
  EXPECT_EQ(f.sched->unfinished(), 0);
}

TEST(LaneScheduler, UnorderedChunksOfOnePartitionRunInParallel) {
  // Two messages with the same key, unordered, two workers: one chunk each, so both handlers
  // are in flight at once (each waits for the other). In key mode this would never happen.
  Signal in_flight_changed;
  int in_flight = 0, max_in_flight = 0;  // guarded by in_flight_changed's mutex
  Fixture f(Ordering::kUnordered, 2, 1000, [&](const SourceMessage&) {
    in_flight_changed.update([&] { max_in_flight = std::max(max_in_flight, ++in_flight); });
    in_flight_changed.wait([&] { return max_in_flight >= 2; });
    in_flight_changed.update([&] { --in_flight; });
  });
  f.add(kTopic, 0);
  const std::string key = "same";
  f.dispatch({record(kTopic, 0, 0, &key, kValue), record(kTopic, 0, 1, &key, kValue)});
  ASSERT_TRUE(f.drain());
  std::lock_guard<std::mutex> lock(in_flight_changed.mutex());
  EXPECT_EQ(max_in_flight, 2);
  EXPECT_EQ(f.sched->done_offset(kTopic, 0), 2);
}

TEST(LaneScheduler, ARunCutByItsTimeBudgetKeepsItsPlaceInLine) {
  // One worker, three polls of 50 unkeyed messages (three one-off lanes), 5 ms a message by the
  // injected clock: each run stops after 2 messages (the 10 ms budget). The rest of a run goes
  // on before the lanes queued after it, so the messages run in offset order and the commit
  // offset keeps up with what was processed. (Requeued at the back, the three lanes took
  // turns, 2 messages each: 0, 1, 50, 51, 100, 101, 2, ...)
  Gate gate;
  std::mutex mu;  // guards order, behind
  std::vector<int64_t> order;
  int64_t behind = 0;  // the most messages processed but not yet committable, seen at a start
  ManualClock* clock = nullptr;
  std::shared_ptr<LaneScheduler>* sched = nullptr;
  Fixture f(Ordering::kUnordered, 1, 1000, [&](const SourceMessage& m) {
    gate.wait();
    {
      std::lock_guard<std::mutex> lock(mu);
      behind = std::max<int64_t>(
          behind, static_cast<int64_t>(order.size()) - (*sched)->done_offset(kTopic, 0));
      order.push_back(m.offset);
    }
    clock->advance(0.005);
  });
  clock = &f.clock;
  sched = &f.sched;
  f.add(kTopic, 0);
  for (int poll = 0; poll < 3; ++poll) {
    std::vector<MessageRecord> batch;
    for (int i = 0; i < 50; ++i) batch.push_back(record(kTopic, 0, poll * 50 + i, nullptr, kValue));
    f.dispatch(batch);
  }
  gate.open();
  ASSERT_TRUE(f.drain());
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(order.size(), 150u);
  for (int64_t i = 0; i < 150; ++i) ASSERT_EQ(order[i], i) << "message " << i << " out of line";
  EXPECT_LE(behind, 2) << "processed but not committable: at most the run in progress";
  EXPECT_EQ(f.sched->done_offset(kTopic, 0), 150);
}

TEST(LaneScheduler, CommitOffsetIsTheDonePrefixUnderOutOfOrderCompletion) {
  // Keys a (offsets 0, 2, 4) and b (1, 3, 5). Offset 2 blocks: everything of b finishes, and
  // a's run has finished 0. The commit offset must be 2, never past the unfinished 2.
  Gate gate;
  Signal progress;
  int finished_b = 0;  // guarded by progress's mutex
  std::atomic<bool> at_offset_2{false};
  Fixture f(Ordering::kKey, 2, 1000, [&](const SourceMessage& m) {
    if (m.offset == 2) {
      progress.update([&] { at_offset_2 = true; });
      gate.wait();
    }
    if (m.key == "b") progress.update([&] { ++finished_b; });
  });
  f.add(kTopic, 0);
  const std::string a = "a", b = "b";
  std::vector<MessageRecord> batch;
  for (int i = 0; i < 6; ++i) batch.push_back(record(kTopic, 0, i, i % 2 == 0 ? &a : &b, kValue));
  f.dispatch(batch);
  ASSERT_TRUE(progress.wait([&] { return finished_b == 3 && at_offset_2; }));
  // b's run ends on its worker a moment after its last handler returns: wait until only a's
  // blocked worker is busy, so that b's task has returned.
  ASSERT_TRUE(lagpilot::testing::wait_until(
      [&] { return f.pool->busy() == 1 && f.pool->queue_depth() == 0; }, kWaitLimit.count()));
  EXPECT_EQ(f.sched->done_offset(kTopic, 0), 2);
  // 0, 2 and 4: a run releases its messages from the unfinished count when it ends.
  EXPECT_EQ(f.sched->unfinished(), 3);
  gate.open();
  ASSERT_TRUE(f.drain());
  EXPECT_EQ(f.sched->done_offset(kTopic, 0), 6);
  EXPECT_EQ(f.sched->unfinished(), 0);
}

TEST(LaneScheduler, HandlerThatThrowsCountsFailedAndItsOffsetCompletes) {
  Fixture f(Ordering::kPartition, 2, 1000, [](const SourceMessage& m) {
    if (m.offset % 2 == 1) throw std::runtime_error("odd offset");
  });
  f.add(kTopic, 0, 100);
  std::vector<MessageRecord> batch;
  for (int i = 100; i < 110; ++i) batch.push_back(record(kTopic, 0, i, nullptr, kValue));
  f.dispatch(batch);
  ASSERT_TRUE(f.drain());
  const SourceCounters c = f.sched->counters_snapshot();
  EXPECT_EQ(c.failed, 5u);
  EXPECT_EQ(c.processed, 5u);
  EXPECT_EQ(f.pool->failed(), 5u);
  EXPECT_EQ(f.sched->done_offset(kTopic, 0), 110);
  EXPECT_EQ(f.sched->unfinished(), 0);
}

TEST(LaneScheduler, AnAbandonedMessageIsNeverCommittedPast) {
  Fixture f(Ordering::kPartition, 2, 1000, [](const SourceMessage& m) {
    if (m.offset == 104) throw MessageAbandoned("shutting down while 104 waits for a retry");
  });
  f.add(kTopic, 0, 100);
  std::vector<MessageRecord> batch;
  for (int i = 100; i < 110; ++i) batch.push_back(record(kTopic, 0, i, nullptr, kValue));
  f.dispatch(batch);
  ASSERT_TRUE(f.drain());
  const SourceCounters c = f.sched->counters_snapshot();
  EXPECT_EQ(c.processed, 4u);  // 100..103
  EXPECT_EQ(c.failed, 0u);
  EXPECT_EQ(c.dropped, 6u);  // 104 and the rest of its lane
  EXPECT_EQ(f.sched->done_offset(kTopic, 0), 104);
  EXPECT_EQ(f.sched->unfinished(), 0);
}

TEST(LaneScheduler, GivingUpAPartitionDropsWhatIsLeftAndStopsItsRuns) {
  // One worker. Partition 0: key a's run blocks in its first message (offset 0, the rest of a
  // waits in its running batch), key b's lane waits in the pool queue. Partition 1 goes on.
  Gate gate;
  Signal started;
  bool blocked = false;  // guarded by started's mutex
  std::atomic<int> handled_p0{0};
  Fixture f(Ordering::kKey, 1, 1000, [&](const SourceMessage& m) {
    if (m.partition != 0) return;
    ++handled_p0;
    if (m.offset == 0) {
      started.update([&] { blocked = true; });
      gate.wait();
    }
  });
  PartitionPtr p0 = f.add(kTopic, 0);
  f.add(kTopic, 1);
  const std::string a = "a", b = "b";
  std::vector<MessageRecord> batch;
  for (int i = 0; i < 10; ++i) batch.push_back(record(kTopic, 0, i, i < 5 ? &a : &b, kValue));
  f.dispatch(batch);
  ASSERT_TRUE(started.wait([&] { return blocked; }));
  // A zero deadline: nothing more may finish. b's 5 messages are dropped at once; a's run
  // holds its 5 until it stops.
  const auto [given_up, still_running] = f.sched->drain_and_give_up({p0}, steady_now());
  EXPECT_EQ(given_up, 5);
  EXPECT_EQ(still_running, 5);
  // A dispatch for the given-up partition is ignored.
  f.dispatch({record(kTopic, 0, 10, &a, kValue)});
  gate.open();
  f.dispatch({record(kTopic, 1, 0, &a, kValue)});
  ASSERT_TRUE(f.drain());
  EXPECT_EQ(handled_p0.load(), 1);  // the run stopped before its next message
  const SourceCounters c = f.sched->counters_snapshot();
  EXPECT_EQ(c.dropped, 9u);
  EXPECT_EQ(c.processed, 2u);                     // offset 0 of both partitions
  EXPECT_EQ(f.sched->done_offset(kTopic, 0), 1);  // only offset 0 was done
  EXPECT_EQ(f.sched->done_offset(kTopic, 1), 1);
  {
    std::lock_guard<std::mutex> lock(f.sched->mu);
    f.sched->remove_partition_locked(*p0);
  }
  EXPECT_EQ(f.sched->done_offset(kTopic, 0), -1);
  EXPECT_EQ(f.sched->unfinished(), 0);
}

TEST(LaneScheduler, LanesTheFullPoolRefusesWaitInThePendingBufferInOrder) {
  // One worker, a queue of one task; five partitions (five lanes) of ten messages while the
  // first handler blocks: at least three lanes cannot be queued and wait in the pending buffer.
  constexpr int kPartitions = 5, kPerPartition = 10;
  Gate gate;
  std::mutex mu;  // guards order
  std::vector<std::pair<int32_t, int64_t>> order;
  Fixture f(Ordering::kPartition, 1, 1, [&](const SourceMessage& m) {
    if (m.partition == 0 && m.offset == 0) gate.wait();
    std::lock_guard<std::mutex> lock(mu);
    order.emplace_back(m.partition, m.offset);
  });
  std::vector<MessageRecord> batch;
  for (int p = 0; p < kPartitions; ++p) {
    f.add(kTopic, p);
    for (int i = 0; i < kPerPartition; ++i) batch.push_back(record(kTopic, p, i, nullptr, kValue));
  }
  f.dispatch(batch);
  EXPECT_GE(f.sched->pending_lanes(), kPartitions - 2);
  EXPECT_EQ(f.sched->unfinished(), kPartitions * kPerPartition);
  f.sched->drain_pending();  // the pool is still full: nothing moves, nothing is dropped
  EXPECT_GE(f.sched->pending_lanes(), kPartitions - 2);
  gate.open();
  ASSERT_TRUE(f.drain());
  EXPECT_EQ(f.sched->pending_lanes(), 0);
  EXPECT_EQ(f.sched->unfinished(), 0);
  {
    std::lock_guard<std::mutex> lock(f.sched->mu);
    EXPECT_GE(f.sched->max_pending_seen, kPartitions - 2);
    EXPECT_EQ(f.sched->counters.dropped, 0u);
  }
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kPartitions * kPerPartition));
  // FIFO: the lanes ran in the order they were dispatched, each in offset order.
  for (std::size_t i = 1; i < order.size(); ++i) EXPECT_LT(order[i - 1], order[i]);
  for (int p = 0; p < kPartitions; ++p) EXPECT_EQ(f.sched->done_offset(kTopic, p), kPerPartition);
}

TEST(LaneScheduler, DuplicatesAreSkippedGapsReportedAndPausedPartitionsRefuse) {
  std::atomic<int> handled{0};
  Fixture f(Ordering::kUnordered, 2, 1000, [&](const SourceMessage&) { ++handled; });
  PartitionPtr p = f.add(kTopic, 0);
  std::vector<MessageRecord> batch;
  for (int i = 0; i < 5; ++i) batch.push_back(record(kTopic, 0, i, nullptr, kValue));
  f.dispatch(batch);
  batch.clear();
  for (int i = 3; i < 8; ++i) batch.push_back(record(kTopic, 0, i, nullptr, kValue));
  batch.push_back(record(kTopic, 0, 10, nullptr, kValue));
  f.dispatch(batch);
  // One backward gap (3 and 4 again: re-deliveries, or a truncation the consumer side tells
  // apart), then the forward one.
  ASSERT_EQ(f.gaps.size(), 2u);
  EXPECT_EQ(f.gaps[0].expected, 5);
  EXPECT_EQ(f.gaps[0].offset, 3);
  EXPECT_EQ(f.gaps[0].count, 2u);
  EXPECT_EQ(f.gaps[1].expected, 8);
  EXPECT_EQ(f.gaps[1].offset, 10);
  ASSERT_TRUE(f.drain());
  EXPECT_EQ(handled.load(), 9);  // 0..7 and 10
  EXPECT_EQ(f.sched->done_offset(kTopic, 0), 11);
  {
    std::lock_guard<std::mutex> lock(f.sched->mu);
    EXPECT_EQ(f.sched->counters.duplicates_skipped, 2u);
    p->paused = true;
  }
  f.dispatch({record(kTopic, 0, 12, nullptr, kValue), record(kTopic, 0, 11, nullptr, kValue)});
  f.dispatch({record(kTopic, 1, 0, nullptr, kValue)});  // not in the table: ignored
  ASSERT_TRUE(f.drain());
  EXPECT_EQ(handled.load(), 9);
  std::lock_guard<std::mutex> lock(f.sched->mu);
  EXPECT_EQ(f.sched->counters.refused_while_paused, 2u);
  EXPECT_EQ(p->refetch_from, 11);
  EXPECT_TRUE(p->repause);
  EXPECT_EQ(f.sched->counters.consumed, 9u);
}

TEST(LaneScheduler, HandlerSeesKeysValuesTimestampsAndHeaders) {
  std::mutex mu;  // guards seen
  std::vector<SourceMessage> seen;
  Fixture f(Ordering::kPartition, 1, 1000, [&](const SourceMessage& m) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(m);
  });
  f.add(kTopic, 3);
  const std::string key = "k1";
  const std::string first = "first", second = "second", third = "third";
  const std::vector<MessageHeaderView> headers = {{"trace", "abc"}, {"empty", ""}};
  std::vector<MessageRecord> batch = {record(kTopic, 3, 0, &key, first),
                                      record(kTopic, 3, 1, nullptr, second),
                                      record(kTopic, 3, 2, &key, third)};
  batch[0].headers = headers;
  batch[0].timestamp_ms = 1234;
  batch[2].headers = std::span<const MessageHeaderView>(headers).first(1);
  f.dispatch(batch);
  ASSERT_TRUE(f.drain());
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].topic, kTopic);
  EXPECT_EQ(seen[0].partition, 3);
  EXPECT_EQ(seen[0].key, "k1");
  EXPECT_TRUE(seen[0].has_key);
  EXPECT_EQ(seen[0].value, "first");
  EXPECT_EQ(seen[0].timestamp_ms, 1234);
  using Headers = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(seen[0].headers, (Headers{{"trace", "abc"}, {"empty", ""}}));
  EXPECT_FALSE(seen[1].has_key);
  EXPECT_EQ(seen[1].value, "second");
  EXPECT_TRUE(seen[1].headers.empty());  // refilled: the previous message's headers are gone
  EXPECT_EQ(seen[2].headers, (Headers{{"trace", "abc"}}));
}

// A handler that sheds a message (count_as_shed) finishes it: its offset completes, and the
// source counts it as shed, not processed (so the processed rate is what the sink took).
TEST(LaneScheduler, MessagesTheHandlerShedsAreCountedApartFromProcessedOnes) {
  Fixture f(Ordering::kUnordered, 2, 1000, [](const SourceMessage& m) {
    if (m.offset % 3 == 0) count_as_shed();
  });
  f.add("t", 0);
  const std::string topic = "t", value = "v";  // (the records view them)
  std::vector<MessageRecord> records;
  for (int64_t o = 0; o < 30; ++o) records.push_back(record(topic, 0, o, nullptr, value));
  f.dispatch(records);
  ASSERT_TRUE(f.drain());
  const SourceCounters c = f.sched->counters_snapshot();
  EXPECT_EQ(c.shed, 10u);
  EXPECT_EQ(c.processed, 20u);
  EXPECT_EQ(f.sched->done_offset("t", 0), 30);
  count_as_shed();  // outside a run: nothing counts it
  EXPECT_EQ(f.sched->counters_snapshot().shed, 10u);
}

}  // namespace
}  // namespace lagpilot
