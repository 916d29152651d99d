// The live control tick against the embedded broker: it reads the source's snapshot, so it does
// not wait on the network (a broker that is down costs the lag refresher a timeout, not the
// tick); a newly assigned partition's history is not counted as one tick's arrivals; and
// reading the source's stats (as the status API does) takes nothing from the tick. And with two
// members in one group, the one whose pool is at its max on a partition several times hotter
// than the rest says so (the status's group.skew, lagpilot_partition_skew_detected).

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "controller/consumer_runtime.h"
#include "controller/loadgen/embedded_broker.h"
#include "controller/loadgen/producer.h"
#include "controller/metrics/metrics.h"
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

GuardConfig guards(int min_workers, int max_workers) {
  GuardConfig g;
  g.min_workers = min_workers;
  g.max_workers = max_workers;
  g.hard_max_workers = max_workers;
  return g;
}

std::unique_ptr<ConsumerRuntime> make_runtime(
    RuntimeConfig config, const Clock& clock, GuardConfig g = guards(2, 4),
    MessageHandler handler = [](const SourceMessage&) {}) {
  return std::make_unique<ConsumerRuntime>(std::move(config),
                                           std::make_unique<StaticPolicy>(StaticParams{2}), g,
                                           std::move(handler), clock);
}

void produce(const EmbeddedBroker& broker, const std::string& topic, uint64_t count,
             double rate = 1e9, uint64_t keys = 16) {
  ProducerOptions o;
  o.bootstrap = broker.bootstrap_servers();
  o.topic = topic;
  o.rate = rate;
  o.count = count;
  o.keys = keys;
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
  // The bound, 0.3 s, is well under that wait and leaves room for a loaded machine under a
  // sanitizer to preempt the tick once.
  constexpr double kTickBound = 0.3;
  for (int i = 0; i < 10; ++i) slowest = std::max(slowest, seconds_of([&] { runtime->tick(); }));
  EXPECT_LT(slowest, kTickBound);
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
  EXPECT_LT(slowest, kTickBound) << "a tick waited on the broker";
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

// Two members share four partitions. One key ("k0", so one partition) receives 1,500 messages/s
// and the other partitions about 70/s each. Both pools are pinned at their max of 2 workers, and
// a 2 ms handler gives each about 1,000/s: the member that holds the hot partition is at its max
// on its own hot partitions, which is skew (more members would not help), and says so; the
// other member sees the same skew ratio but is not the one at its max on it.
TEST(LiveSampler, MemberAtItsMaxOnAHotPartitionReportsSkew) {
  EmbeddedBroker broker({1, {{"skew", 4}}});
  SteadyClock clock;
  auto slow = [](const SourceMessage&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };
  RuntimeConfig config = runtime_config(broker, "skew", "g-skew");
  config.kafka.ordering = "unordered";  // the hot partition's messages may use every worker
  std::unique_ptr<ConsumerRuntime> members[2] = {make_runtime(config, clock, guards(2, 2), slow),
                                                 make_runtime(config, clock, guards(2, 2), slow)};
  for (auto& m : members) m->start();
  ASSERT_TRUE(wait_until(
      [&] {
        return members[0]->source().refreshed_stats().assigned_partitions == 2 &&
               members[1]->source().refreshed_stats().assigned_partitions == 2;
      },
      40))
      << "the group did not settle on two partitions each";

  std::thread hot([&] { produce(broker, "skew", 12000, 1500, 1); });
  std::thread rest([&] { produce(broker, "skew", 2000, 250, 16); });
  RuntimeMetrics metrics[2] = {RuntimeMetrics(std::make_shared<prometheus::Registry>()),
                               RuntimeMetrics(std::make_shared<prometheus::Registry>())};
  int detected_ticks[2] = {0, 0};
  double max_ratio = 0;
  std::string hottest;
  bool holder_known = false;
  int holder = -1;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(7);
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 2; ++i) {
      const TickReport r = members[i]->tick();
      metrics[i].record_tick(r, guards(2, 2), false, 0.001, 1.7e9);
      const nlohmann::json skew =
          metrics[i].last_tick_status()["group"].value("skew", nlohmann::json{});
      if (skew.empty()) continue;
      max_ratio = std::max(max_ratio, skew.value("ratio", 0.0));
      if (skew.value("detected", false)) {
        ++detected_ticks[i];
        EXPECT_NE(skew.value("advice", ""), "");
      }
      if (!r.group.hottest_partition.empty() && r.group.hottest_rate > 1000) {
        hottest = r.group.hottest_partition;
        for (const auto& p : r.source.partitions) {
          if (p.topic + "[" + std::to_string(p.partition) + "]" == hottest) {
            holder = i;
            holder_known = true;
          }
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  hot.join();
  rest.join();
  for (auto& m : members) m->stop();
  ASSERT_TRUE(holder_known) << "no member held the hot partition " << hottest;
  EXPECT_GE(max_ratio, 3.0) << "the hot partition's rate over the mean";
  EXPECT_GT(detected_ticks[holder], 0)
      << "the member at its max on " << hottest << " never reported skew";
  EXPECT_EQ(detected_ticks[1 - holder], 0) << "the member without the hot partition reported skew";
  std::printf("[ figures  ] skew: ratio up to %.1f on %s; holder reported it on %d ticks\n",
              max_ratio, hottest.c_str(), detected_ticks[holder]);
}

}  // namespace
}  // namespace lagpilot
