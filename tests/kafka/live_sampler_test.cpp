// The live control tick against the embedded broker: it reads the source's snapshot, so it does
// not wait on the network (a broker that is down costs the lag refresher a timeout, not the
// tick); a newly assigned partition's history is not counted as one tick's arrivals; and
// reading the source's stats (as the status API does) takes nothing from the tick.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "controller/consumer_runtime.h"
#include "controller/loadgen/embedded_broker.h"
#include "controller/loadgen/producer.h"
#include "controller/steady_clock.h"
#include "policies/static_policy.h"
#include "tests/common/wait.h"

namespace lagpilot {
namespace {

using testing::wait_until;

RuntimeConfig runtime_config(const EmbeddedBroker& broker, const std::string& topic,
                             const std::string& group) {
  RuntimeConfig c;
  c.kafka.bootstrap_servers = broker.bootstrap_servers();
  c.kafka.topics = {topic};
  c.kafka.group_id = group;
  c.kafka.commit_interval_seconds = 0.2;
  c.kafka.revoke_timeout_seconds = 2;
  // The default fetch.wait.max.ms (500) is kept on purpose: a watermark query behind an idle
  // long-poll fetch is what made the tick wait.
  c.kafka.properties = {{"session.timeout.ms", "6000"},
                        {"heartbeat.interval.ms", "300"},
                        {"reconnect.backoff.max.ms", "200"},
                        {"log_level", "2"}};
  c.shutdown_timeout_seconds = 2;
  return c;
}

std::unique_ptr<ConsumerRuntime> make_runtime(RuntimeConfig config, const Clock& clock) {
  GuardConfig guards;
  guards.min_workers = 2;
  guards.max_workers = 4;
  guards.hard_max_workers = 4;
  return std::make_unique<ConsumerRuntime>(
      std::move(config), std::make_unique<StaticPolicy>(StaticParams{2}), guards,
      [](const SourceMessage&) {}, clock);
}

void produce(const EmbeddedBroker& broker, const std::string& topic, uint64_t count) {
  ProducerOptions o;
  o.bootstrap = broker.bootstrap_servers();
  o.topic = topic;
  o.rate = 1e9;
  o.count = count;
  o.keys = 16;
  o.flush_timeout_seconds = 30;
  SteadyClock clock;
  PacedProducer producer(std::move(o), clock);
  std::atomic<bool> stop{false};
  producer.run(stop);
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(LiveSampler, TickDoesNotWaitOnTheBrokerAndReportsTheLagAge) {
  EmbeddedBroker broker({1, {{"cadence", 4}}});
  SteadyClock clock;
  auto runtime = make_runtime(runtime_config(broker, "cadence", "g-cadence"), clock);
  runtime->start();
  ASSERT_TRUE(wait_until([&] { return runtime->source().joined(); }, 30));
  ASSERT_TRUE(wait_until([&] { return runtime->source().stats().lag_age_seconds >= 0; }, 10));

  // Idle, broker up: every tick is far below one long-poll fetch wait (500 ms).
  double slowest = 0;
  for (int i = 0; i < 10; ++i) slowest = std::max(slowest, seconds_of([&] { runtime->tick(); }));
  EXPECT_LT(slowest, 0.1);
  EXPECT_LT(runtime->source().stats().lag_age_seconds, 2.0);

  // Broker down: watermark queries time out on the refresher thread; the tick does not wait,
  // and the lag it reports gets visibly older.
  broker.set_broker_down(1);
  slowest = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2500);
  TickReport last;
  while (std::chrono::steady_clock::now() < until) {
    slowest = std::max(slowest, seconds_of([&] { last = runtime->tick(); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_LT(slowest, 0.1) << "a tick waited on the broker";
  EXPECT_GT(last.source.lag_age_seconds, 1.0) << "a stale lag reported as fresh";
  broker.set_broker_up(1);
  runtime->stop();
}

TEST(LiveSampler, NewlyAssignedPartitionIsNotOneTicksArrivals) {
  EmbeddedBroker broker({1, {{"history", 2}}});
  produce(broker, "history", 2000);
  SteadyClock clock;
  auto runtime = make_runtime(runtime_config(broker, "history", "g-history"), clock);
  runtime->start();
  const TickReport before = runtime->tick();  // no partitions yet
  ASSERT_EQ(before.source.assigned_partitions, 0);
  ASSERT_TRUE(wait_until([&] { return runtime->source().joined(); }, 30));
  ASSERT_TRUE(wait_until(
      [&] { return runtime->source().refreshed_stats().high_watermark_sum >= 2000; }, 10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // dt > 0 for the rates
  const TickReport after = runtime->tick();
  EXPECT_EQ(after.source.assigned_partitions, 2);
  EXPECT_EQ(after.observation.arrival_rate, 0.0)
      << "the 2000 records produced before the assignment counted as arrivals";
  // Records produced while assigned are arrivals.
  produce(broker, "history", 500);
  ASSERT_TRUE(wait_until(
      [&] { return runtime->source().refreshed_stats().high_watermark_sum >= 2500; }, 10));
  const TickReport later = runtime->tick();
  const double dt = later.observation.time - after.observation.time;
  EXPECT_NEAR(later.observation.arrival_rate * dt, 500.0, 1.0);
  runtime->stop();
}

TEST(LiveSampler, ReadingStatsTakesNothingFromTheTick) {
  EmbeddedBroker broker({1, {{"ages", 1}}});
  SteadyClock clock;
  auto runtime = make_runtime(runtime_config(broker, "ages", "g-ages"), clock);
  runtime->start();
  ASSERT_TRUE(wait_until([&] { return runtime->source().joined(); }, 30));
  runtime->tick();
  produce(broker, "ages", 200);
  ASSERT_TRUE(wait_until([&] { return runtime->source().stats().processed >= 200; }, 10));
  // Another reader (the status API, a scrape) reads the stats in between.
  for (int i = 0; i < 5; ++i) (void)runtime->source().refreshed_stats();
  const TickReport r = runtime->tick();
  EXPECT_GT(r.observation.record_age_p99, 0.0) << "a stats() reader reset the tick's window";
  runtime->stop();
}

}  // namespace
}  // namespace lagpilot
