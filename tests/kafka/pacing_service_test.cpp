// Producer pacing end to end on the embedded broker: a Service publishes its recommendation on
// GET /v1/pacing, and a PacedProducer that follows it through a PacingPoller (the wiring of
// `lagpilot produce --pacing-url`) stops outrunning the consumer, so that the lag stays bounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "controller/api/pacing_client.h"
#include "controller/loadgen/pacing_poller.h"
#include "controller/loadgen/producer.h"
#include "lagpilot/lagpilot.h"
#include "tests/common/wait.h"

namespace lagpilot {
namespace {

using lagpilot::testing::wait_until;

TEST(PacingService, AProducerThatWouldOutrunTheConsumerFollowsPacingAndLagStaysBounded) {
  constexpr double kUnpacedRate = 4000;  // messages/s: about four times what 2 workers finish
  constexpr double kProduceSeconds = 4;
  constexpr double kTick = 0.2;
  AppConfig config = Service::config_from_json(
      {{"broker", "embedded"},
       {"topic_partitions", 4},
       {"tick_seconds", kTick},
       {"policy", {{"name", "static"}, {"params", {{"workers", 2}}}}},
       {"guards", {{"min_workers", 2}, {"max_workers", 2}, {"hard_min_workers", 1}}},
       {"http", {{"enabled", true}, {"port", 0}}}});
  // 2 ms of work per message: 2 workers finish at most about 1,000/s.
  MessageHandler handler = [](const SourceMessage&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };
  std::atomic<int64_t> last_lag{0};
  ServiceOptions options;
  options.on_tick = [&](const TickReport& r) { last_lag = r.observation.total_lag; };
  Service service(config, handler, options);
  service.start();
  ASSERT_TRUE(wait_until([&] { return service.runtime().source().joined(); }, 30.0));

  const auto url =
      parse_http_url("http://127.0.0.1:" + std::to_string(service.api_port()) + "/v1/pacing");
  ASSERT_TRUE(url);
  PacingPoller poller(
      [&]() -> std::optional<PaceTarget> {
        std::string error;
        const auto doc = get_json(*url, 1.0, &error);
        return doc ? pace_target_from_json(*doc) : std::nullopt;
      },
      kTick);
  std::atomic<bool> stop{false};
  std::thread fetcher([&] {
    while (!stop) {
      poller.tick(service.clock().now());
      wait_until([&] { return stop || service.clock().now() >= poller.next_due(); }, 5.0);
    }
  });
  ProducerOptions po;
  po.bootstrap = service.bootstrap_servers();
  po.topic = "events";
  po.rate = kUnpacedRate;  // until the first recommendation
  po.keys = 64;
  po.pace = [&] { return poller.latest(); };
  PacedProducer producer(po, service.clock());
  ProducerStats stats;
  std::thread producing([&] { stats = producer.run(stop); });
  // The window starts at the first recommendation: how long that takes (a tick and a poll,
  // longer on a loaded machine) is unpaced backlog that pacing cannot be held to account for.
  const bool paced = wait_until([&] { return producer.stats().pace_changes >= 1; }, 30.0,
                                std::chrono::milliseconds(10));
  const int64_t lag_when_paced = last_lag.load();
  const double start = service.clock().now();
  wait_until([&] { return service.clock().now() - start >= kProduceSeconds; }, 30.0,
             std::chrono::milliseconds(10));
  const nlohmann::json pacing = service.status()["runtime"]["pacing"];
  const int64_t lag = last_lag.load();
  stop = true;
  producing.join();
  fetcher.join();
  service.stop();

  ASSERT_TRUE(paced) << "no recommendation reached the producer";
  ASSERT_TRUE(pacing["rate"].is_number()) << pacing.dump();
  const double sustainable = pacing["sustainable_rate"].get<double>();
  EXPECT_LT(sustainable, kUnpacedRate / 2) << pacing.dump();  // the producer would outrun it
  EXPECT_GE(stats.pace_changes, 1u);
  EXPECT_LT(stats.rate, sustainable);  // it follows: below what the consumer sustains
  // Unpaced, the backlog would have grown by (4,000 - sustainable) x 4 s, more than 10,000
  // messages; paced, what built up before the first recommendation drains (the lag then was
  // sampled up to a tick before it, so up to a tick's unpaced growth is in the difference).
  const double unpaced_growth = (kUnpacedRate - sustainable) * kProduceSeconds;
  EXPECT_LT(static_cast<double>(lag - lag_when_paced), unpaced_growth / 4)
      << "lag " << lag << " (" << lag_when_paced << " at the first recommendation), pacing "
      << pacing.dump() << ", produced " << stats.produced;
}

}  // namespace
}  // namespace lagpilot
