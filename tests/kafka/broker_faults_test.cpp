// Broker faults while 100,000 sequence-numbered messages flow through lagpilot::Service on the
// mock cluster (three brokers, six partitions): a broker down then up, and injected errors on
// Fetch, OffsetCommit, Heartbeat and JoinGroup. For each: every sequence reaches the ledger,
// the lag the loop sees returns to zero, and the loop kept ticking (and recording its
// decisions) through the fault; the figures say what it saw (the largest lag, the fewest
// partitions assigned, the oldest lag data). Run as the ctest kafka_faults_test (about a minute,
// beside the other suites).
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "controller/loadgen/embedded_broker.h"
#include "controller/loadgen/producer.h"
#include "controller/steady_clock.h"
#include "lagpilot/lagpilot.h"
#include "tests/common/sequence_ledger.h"
#include "tests/common/wait.h"

namespace lagpilot {
namespace {

using testing::SequenceLedger;
using testing::wait_until;

// Kafka protocol api keys (rd_kafka_mock_push_request_errors).
constexpr int16_t kFetch = 1, kOffsetCommit = 8, kJoinGroup = 11, kHeartbeat = 12;

struct BrokerFault {
  const char* name;
  std::function<void(EmbeddedBroker&)> inject;
  std::function<void(EmbeddedBroker&)> heal;  // may be empty
};

std::vector<BrokerFault> faults() {
  return {
      {"BrokerDownThenUp", [](EmbeddedBroker& b) { b.set_broker_down(2); },
       [](EmbeddedBroker& b) { b.set_broker_up(2); }},
      {"FetchErrors",
       [](EmbeddedBroker& b) {
         b.push_request_errors(
             kFetch,
             {RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
              RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART});
       },
       {}},
      {"OffsetCommitErrors",
       [](EmbeddedBroker& b) {
         b.push_request_errors(
             kOffsetCommit,
             {RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE,
              RD_KAFKA_RESP_ERR_NOT_COORDINATOR, RD_KAFKA_RESP_ERR_OFFSET_METADATA_TOO_LARGE});
       },
       {}},
      {"HeartbeatErrors",
       [](EmbeddedBroker& b) {
         // A rebalance in progress makes the member rejoin: its partitions are revoked and
         // assigned again mid-stream.
         b.push_request_errors(kHeartbeat, {RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
                                            RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS});
       },
       {}},
      {"JoinGroupErrors",
       [](EmbeddedBroker& b) {
         // The rejoin that the heartbeat error forces meets JoinGroup errors first.
         b.push_request_errors(kJoinGroup, {RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS,
                                            RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE});
         b.push_request_errors(kHeartbeat, {RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS});
       },
       {}},
  };
}

class BrokerFaults : public ::testing::TestWithParam<BrokerFault> {};

TEST_P(BrokerFaults, EverySequenceIsHandledAndLagRecovers) {
  constexpr uint64_t kMessages = 100'000;
  constexpr int kPartitions = 6;
  const BrokerFault& fault = GetParam();
  EmbeddedBroker broker(EmbeddedBrokerOptions{3, {{"faults", kPartitions}}});
  AppConfig config = Service::config_from_json({{"broker", "external"},
                                                {"tick_seconds", 0.25},
                                                {"http", {{"enabled", false}}},
                                                {"kafka",
                                                 {{"bootstrap_servers", broker.bootstrap_servers()},
                                                  {"topics", {"faults"}},
                                                  {"group_id", std::string("faults-") + fault.name},
                                                  {"commit_interval_seconds", 0.5},
                                                  {"properties",
                                                   {{"session.timeout.ms", "6000"},
                                                    {"heartbeat.interval.ms", "300"},
                                                    {"fetch.wait.max.ms", "20"},
                                                    {"reconnect.backoff.max.ms", "200"},
                                                    {"log_level", "3"}}}}}});
  SequenceLedger ledger(kMessages, 1);
  struct Seen {
    double time;
    int64_t lag;
    int partitions;
    double lag_age;
  };
  std::mutex mu;           // guards seen
  std::vector<Seen> seen;  // what each tick observed
  ServiceOptions options;
  options.on_tick = [&](const TickReport& r) {
    std::lock_guard lock(mu);
    seen.push_back({r.observation.time, r.observation.total_lag, r.source.assigned_partitions,
                    r.source.lag_age_seconds});
  };
  Service service(
      config, [&](const SourceMessage& m) { ledger.record(m, false); }, options);
  service.start();

  ProducerOptions po;
  po.bootstrap = broker.bootstrap_servers();
  po.topic = "faults";
  po.count = kMessages;
  po.rate = 25'000;  // 4 s of traffic
  po.flush_timeout_seconds = 60;
  po.properties = {{"enable.idempotence", "true"}};
  ProducerStats produced;
  std::thread producer([&] {
    SteadyClock clock;
    std::atomic<bool> stop{false};
    produced = PacedProducer(po, clock).run(stop);
  });

  ASSERT_TRUE(wait_until([&] { return ledger.total() >= 20'000; }, 60));
  std::size_t ticks_before_fault;
  {
    std::lock_guard lock(mu);
    ticks_before_fault = seen.size();
  }
  fault.inject(broker);
  if (fault.heal) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // how long the broker is down
    fault.heal(broker);
  }
  producer.join();
  ASSERT_EQ(produced.delivered, kMessages);

  const bool all = wait_until([&] { return ledger.missing(0, kMessages) == 0; }, 90);
  EXPECT_TRUE(all) << ledger.missing(0, kMessages) << " sequences never handled";
  // Lag recovers: a tick that observes zero lag after everything was handled.
  std::size_t ticks_at_end;
  {
    std::lock_guard lock(mu);
    ticks_at_end = seen.size();
  }
  EXPECT_TRUE(wait_until(
      [&] {
        std::lock_guard lock(mu);
        return seen.size() > ticks_at_end + 1 && seen.back().lag == 0;
      },
      30))
      << "the loop's last observed lag: " << seen.back().lag;
  service.stop();
  // Read after stop(): read while the loop runs, a tick between this read and the stop would
  // be in `seen` and not in `decisions`.
  const std::size_t decisions = service.runtime().controller().recent_decisions(1000).size();
  EXPECT_EQ(ledger.bad_values(), 0u);
  std::lock_guard lock(mu);
  ASSERT_GT(seen.size(), ticks_before_fault + 2);
  int64_t max_lag = 0;
  int min_partitions = kPartitions;
  double max_age = 0, max_gap = 0;
  for (std::size_t i = ticks_before_fault; i < seen.size(); ++i) {
    max_lag = std::max(max_lag, seen[i].lag);
    min_partitions = std::min(min_partitions, seen[i].partitions);
    max_age = std::max(max_age, seen[i].lag_age);
    if (i > 0) max_gap = std::max(max_gap, seen[i].time - seen[i - 1].time);
  }
  // The loop kept its beat through the fault (tick 0.25 s), and every tick is in the log.
  EXPECT_LT(max_gap, 1.0) << "the loop stalled during the fault";
  EXPECT_EQ(decisions, std::min<std::size_t>(seen.size(), 1000));
  std::printf(
      "[ figures  ] %s: %zu ticks, after the fault: max lag %lld, min assigned partitions %d, "
      "oldest lag data %.2f s, longest tick interval %.2f s; %zu sequences twice\n",
      fault.name, seen.size(), static_cast<long long>(max_lag), min_partitions, max_age, max_gap,
      ledger.duplicated(0, kMessages));
}

INSTANTIATE_TEST_SUITE_P(Mock, BrokerFaults, ::testing::ValuesIn(faults()),
                         [](const ::testing::TestParamInfo<BrokerFault>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace lagpilot
