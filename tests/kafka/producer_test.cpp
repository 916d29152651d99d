#include "controller/loadgen/producer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "controller/loadgen/embedded_broker.h"
#include "controller/loadgen/message_codec.h"
#include "controller/steady_clock.h"
#include "kafka_test_util.h"
#include "policies/clock.h"
#include "tests/common/wait.h"

namespace lagpilot {
namespace {

ProducerOptions base_options(const EmbeddedBroker& broker, const std::string& topic) {
  ProducerOptions o;
  o.bootstrap = broker.bootstrap_servers();
  o.topic = topic;
  o.flush_timeout_seconds = 10;
  return o;
}

// Runs producer.run(stop) on a thread; the destructor stops and joins it, so a failed ASSERT
// does not leave a joinable thread behind.
class BackgroundRun {
 public:
  explicit BackgroundRun(PacedProducer& producer)
      : thread_([this, &producer] { result_ = producer.run(stop_); }) {}
  ~BackgroundRun() {
    request_stop();
    finish();
  }
  void request_stop() { stop_ = true; }
  ProducerStats finish() {  // waits for run() to return (it must end on its own or be stopped)
    if (thread_.joinable()) thread_.join();
    return result_;
  }

 private:
  std::atomic<bool> stop_{false};
  ProducerStats result_;
  std::thread thread_;
};

TEST(PacedProducer, ConsumerReadsEverySeqExactlyOnce) {
  EmbeddedBroker broker({.brokers = 1, .topics = {{"events", 3}}});
  ProducerOptions o = base_options(broker, "events");
  constexpr uint64_t kCount = 3000;
  o.rate = 50000;
  o.count = kCount;
  o.keys = 7;
  o.first_seq = 0;
  o.padding_bytes = 16;
  SteadyClock clock;
  std::atomic<bool> stop{false};
  const ProducerStats st = PacedProducer(o, clock).run(stop);
  EXPECT_EQ(st.produced, kCount);
  EXPECT_EQ(st.delivered, kCount);
  EXPECT_EQ(st.failed, 0u);

  const auto records = test_util::read_back(broker.bootstrap_servers(), "events", 3, kCount);
  ASSERT_EQ(records.size(), kCount);
  std::vector<int> seen(kCount, 0);
  std::map<std::string, int32_t> partition_of_key;
  for (const auto& r : records) {
    auto d = decode_message(r.value);
    ASSERT_TRUE(d.has_value()) << r.value;
    ASSERT_LT(d->seq, kCount);
    ++seen[d->seq];
    EXPECT_EQ(r.key, "k" + std::to_string(d->seq % 7));
    EXPECT_GT(d->sent_us, 0);
    EXPECT_EQ(r.value.size(), encode_message(d->seq, d->sent_us).size() + 1 + 16);
    // Same key, same partition.
    auto [it, inserted] = partition_of_key.emplace(r.key, r.partition);
    EXPECT_EQ(it->second, r.partition) << r.key;
  }
  for (uint64_t s = 0; s < kCount; ++s) EXPECT_EQ(seen[s], 1) << "seq " << s;
}

TEST(PacedProducer, FirstSeqAndNoKey) {
  EmbeddedBroker broker({.brokers = 1, .topics = {{"events", 1}}});
  ProducerOptions o = base_options(broker, "events");
  o.rate = 10000;
  o.count = 20;
  o.first_seq = 1000;
  SteadyClock clock;
  std::atomic<bool> stop{false};
  EXPECT_EQ(PacedProducer(o, clock).run(stop).delivered, 20u);
  const auto records = test_util::read_back(broker.bootstrap_servers(), "events", 1, 20);
  ASSERT_EQ(records.size(), 20u);
  for (std::size_t i = 0; i < records.size(); ++i) {
    auto d = decode_message(records[i].value);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->seq, 1000 + i);  // one partition: in order
    EXPECT_TRUE(records[i].key.empty());
  }
}

TEST(PacedProducer, TraceScheduleIsFollowedOnSimulatedTime) {
  // rates 100/s, 0/s, 300/s in 1 s bins, a big bucket so that clock jumps lose nothing:
  // the replay produces 1 (start token) + 100 + 0 + 300 messages, exactly, and the counts
  // after each clock step are bounded by the schedule.
  EmbeddedBroker broker({.brokers = 1, .topics = {{"events", 2}}});
  ProducerOptions o = base_options(broker, "events");
  o.trace_rates = {100, 0, 300};
  o.trace_bin_seconds = 1.0;
  o.burst_seconds = 100;
  ManualClock clock(50.0);
  PacedProducer producer(o, clock);
  BackgroundRun run(producer);

  auto produced = [&] { return producer.stats().produced; };
  ASSERT_TRUE(testing::wait_until([&] { return produced() >= 1; }, 10.0));
  clock.set(50.5);
  ASSERT_TRUE(testing::wait_until([&] { return produced() >= 51; }, 10.0)) << produced();
  EXPECT_EQ(produced(), 51u);
  clock.set(51.7);  // end of bin 0 (+50), then 0.7 s at rate 0
  ASSERT_TRUE(testing::wait_until([&] { return produced() >= 101; }, 10.0)) << produced();
  clock.set(52.5);  // rest of bin 1 at 0, half of bin 2 at 300
  ASSERT_TRUE(testing::wait_until([&] { return produced() >= 251; }, 10.0)) << produced();
  EXPECT_LE(produced(), 251u);
  clock.set(60.0);  // past the end: the last half bin is settled at the trace's end
  const ProducerStats final_stats = run.finish();
  EXPECT_EQ(final_stats.produced, 401u);
  EXPECT_EQ(final_stats.delivered, 401u);
  EXPECT_EQ(final_stats.failed, 0u);
  EXPECT_EQ(test_util::read_back(broker.bootstrap_servers(), "events", 2, 401).size(), 401u);
}

// A clock that reads `before` for its first `reads_before_jump` reads and `after` from then on.
// Run with reads_before_jump = 2, 3, ..., it lands a jump at each of the producer loop's clock
// reads in turn; a test thread's clock.set() lands wherever the scheduler puts it.
class JumpAfterReadsClock final : public Clock {
 public:
  JumpAfterReadsClock(int reads_before_jump, double before, double after)
      : reads_before_jump_(reads_before_jump), before_(before), after_(after) {}
  double now() const override {
    return reads_.fetch_add(1, std::memory_order_relaxed) < reads_before_jump_ ? before_ : after_;
  }

 private:
  const int reads_before_jump_;
  const double before_;
  const double after_;
  mutable std::atomic<int> reads_{0};  // atomic: read by the producer's thread and the test's
};

TEST(PacedProducer, AJumpOverEveryBinIsSettledWhereverTheLoopReadsTheClock) {
  // The first read is the run's start, so the jump lands from the second read on. A token
  // count taken at a read that skipped the bin boundaries (the tokens of 10 s at bin 0's rate)
  // shows up here as 101 messages where the schedule gives 36.
  EmbeddedBroker broker({.brokers = 1, .topics = {{"events", 1}}});
  for (int reads = 2; reads <= 8; ++reads) {
    ProducerOptions o = base_options(broker, "events");
    o.trace_rates = {10, 20, 0, 40};
    o.trace_bin_seconds = 0.5;
    o.burst_seconds = 100;
    JumpAfterReadsClock clock(reads, 0.0, 10.0);
    std::atomic<bool> stop{false};
    const ProducerStats st = PacedProducer(o, clock).run(stop);
    EXPECT_EQ(st.produced, 1u + 5 + 10 + 0 + 20) << "jump after " << reads << " reads";
    EXPECT_EQ(st.delivered, st.produced) << "jump after " << reads << " reads";
  }
}

TEST(PacedProducer, FrozenClockReleasesOnlyTheStartToken) {
  EmbeddedBroker broker({.brokers = 1, .topics = {{"events", 1}}});
  ProducerOptions o = base_options(broker, "events");
  o.rate = 1000;
  ManualClock clock(0.0);
  PacedProducer producer(o, clock);
  BackgroundRun run(producer);
  ASSERT_TRUE(testing::wait_until([&] { return producer.stats().delivered >= 1; }, 10.0));
  clock.set(0.004);
  ASSERT_TRUE(testing::wait_until([&] { return producer.stats().delivered >= 5; }, 10.0));
  run.request_stop();
  const ProducerStats final_stats = run.finish();
  EXPECT_EQ(final_stats.produced, 5u);  // 1 + 1000/s * 4 ms, no more: the clock stood still
  EXPECT_EQ(final_stats.delivered, 5u);
}

TEST(PacedProducer, StopEndsAnOpenEndedRun) {
  EmbeddedBroker broker({.brokers = 1, .topics = {{"events", 1}}});
  ProducerOptions o = base_options(broker, "events");
  o.rate = 2000;
  SteadyClock clock;
  PacedProducer producer(o, clock);
  BackgroundRun run(producer);
  ASSERT_TRUE(testing::wait_until([&] { return producer.stats().delivered >= 20; }, 10.0));
  run.request_stop();
  const ProducerStats final_stats = run.finish();
  EXPECT_GE(final_stats.produced, 20u);
  EXPECT_EQ(final_stats.delivered, final_stats.produced);
  EXPECT_EQ(final_stats.failed, 0u);
}

TEST(PacedProducer, PacesOnTheClock) {
  // 100 messages at 200/s: the bucket allows at most 1 + 200 t messages by time t, so the run
  // cannot take less than 99/200 s (a lower bound only; slowness cannot make it fail).
  EmbeddedBroker broker({.brokers = 1, .topics = {{"events", 1}}});
  ProducerOptions o = base_options(broker, "events");
  o.rate = 200;
  o.count = 100;
  SteadyClock clock;
  std::atomic<bool> stop{false};
  PacedProducer producer(o, clock);
  const double t0 = clock.now();
  EXPECT_EQ(producer.run(stop).delivered, 100u);
  EXPECT_GE(clock.now() - t0, 99.0 / 200.0);
}

TEST(PacedProducer, RejectsBadOptionsNamingTheField) {
  SteadyClock clock;
  auto message_for = [&](ProducerOptions o) -> std::string {
    try {
      PacedProducer p(std::move(o), clock);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  ProducerOptions good;
  good.bootstrap = "127.0.0.1:1";
  good.topic = "t";
  {
    auto o = good;
    o.topic = "";
    EXPECT_NE(message_for(o).find("topic"), std::string::npos);
  }
  {
    auto o = good;
    o.bootstrap = "";
    EXPECT_NE(message_for(o).find("bootstrap"), std::string::npos);
  }
  {
    auto o = good;
    o.rate = -1;
    EXPECT_NE(message_for(o).find("rate"), std::string::npos);
  }
  {
    auto o = good;
    o.trace_rates = {1, 2, std::nan("")};
    EXPECT_NE(message_for(o).find("trace_rates[2]"), std::string::npos);
  }
  {
    auto o = good;
    o.trace_rates = {1};
    o.trace_bin_seconds = 0;
    EXPECT_NE(message_for(o).find("trace_bin_seconds"), std::string::npos);
  }
  {
    auto o = good;
    o.properties = {{"no.such.property", "1"}};
    EXPECT_THROW(PacedProducer(o, clock), std::runtime_error);
  }
  EXPECT_EQ(message_for(good), "");
}

}  // namespace
}  // namespace lagpilot
