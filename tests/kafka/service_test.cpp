// lagpilot::Service (include/lagpilot/lagpilot.h) end to end on the embedded broker: every
// produced message reaches the embedder's handler, the loop ticks on its own thread or on the
// caller's, status() is the document GET /v1/status serves, and stop() from another thread
// ends run_until_stopped().
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "controller/loadgen/embedded_broker.h"
#include "controller/loadgen/message_codec.h"
#include "controller/loadgen/producer.h"
#include "controller/sinks/delivery.h"
#include "controller/steady_clock.h"
#include "lagpilot/lagpilot.h"
#include "tests/kafka/kafka_test_util.h"

namespace lagpilot {
namespace {

AppConfig embedded_config(bool http) {
  AppConfig c = Service::config_from_json({{"broker", "embedded"},
                                           {"topic_partitions", 4},
                                           {"tick_seconds", 0.2},
                                           {"http", {{"enabled", http}, {"port", 0}}}});
  return c;
}

void produce(const Service& service, uint64_t count) {
  ProducerOptions po;
  po.bootstrap = service.bootstrap_servers();
  po.topic = "events";
  po.rate = 20000;
  po.count = count;
  po.keys = 16;
  std::atomic<bool> stop{false};
  const ProducerStats stats = PacedProducer(po, service.clock()).run(stop);
  ASSERT_EQ(stats.delivered, count);
}

TEST(Service, EveryMessageReachesTheHandlerAndTheLoopTicksOnItsOwnThread) {
  constexpr uint64_t kMessages = 2000;
  std::mutex seen_mutex;  // guards seen
  std::set<std::pair<int32_t, int64_t>> seen;
  std::atomic<uint64_t> handled{0};
  MessageHandler handler = [&](const SourceMessage& m) {
    EXPECT_EQ(m.topic, "events");
    EXPECT_TRUE(decode_message(m.value).has_value()) << m.value;
    std::lock_guard lock(seen_mutex);
    seen.emplace(m.partition, m.offset);
    ++handled;
  };
  ServiceOptions options;
  std::atomic<int> ticks{0};
  std::atomic<bool> ticked_on_caller{false};
  const auto caller = std::this_thread::get_id();
  Service* self = nullptr;
  std::atomic<int> status_lines{0};
  options.on_status_line = [&](const std::string& line) {
    EXPECT_NE(line.find("workers"), std::string::npos) << line;
    ++status_lines;
  };
  options.on_tick = [&](const TickReport& report) {
    ++ticks;
    if (std::this_thread::get_id() == caller) ticked_on_caller = true;
    if (handled.load() >= kMessages && report.observation.total_lag == 0) self->request_stop();
    if (self->clock().now() > 60) self->request_stop();  // a bound, so a failure cannot hang
  };
  Service service(embedded_config(false), handler, options);
  self = &service;
  service.start();
  EXPECT_EQ(service.api_port(), 0);  // "http": {"enabled": false}
  produce(service, kMessages);
  service.run_until_stopped();

  EXPECT_EQ(seen.size(), kMessages);  // distinct (partition, offset): none missing
  EXPECT_GE(handled.load(), kMessages);
  EXPECT_GT(ticks.load(), 0);
  EXPECT_EQ(status_lines.load(), ticks.load());
  EXPECT_FALSE(ticked_on_caller.load());
  const nlohmann::json status = service.status();
  EXPECT_GT(status["ticks"].get<int>(), 0);
  EXPECT_EQ(status["policy"]["name"], AppConfig{}.policy_name);  // the default
  EXPECT_GE(status["workers"]["current"].get<int>(), 4);
  // The last tick's counters, then the source's final ones.
  const nlohmann::json& counters = status["runtime"]["counters"];
  EXPECT_LE(counters["processed"].get<uint64_t>(), handled.load());
  EXPECT_EQ(service.runtime().source().stats().processed, handled.load());
}

TEST(Service, TicksOnTheCallersThreadWhenAskedAndStatusMatchesTheApi) {
  ServiceOptions options;
  options.tick_thread = ServiceOptions::TickThread::kCaller;
  const auto caller = std::this_thread::get_id();
  std::atomic<int> ticks{0}, foreign_ticks{0};
  Service* self = nullptr;
  options.on_tick = [&](const TickReport&) {
    (std::this_thread::get_id() == caller ? ticks : foreign_ticks)++;
    if (ticks.load() >= 3) self->request_stop();
  };
  Service service(embedded_config(true), MessageHandler{}, options);
  self = &service;
  service.start();
  ASSERT_GT(service.api_port(), 0);
  service.run_until_stopped();
  EXPECT_GE(ticks.load(), 3);
  EXPECT_EQ(foreign_ticks.load(), 0);

  // The API is stopped with the service; status() still answers, with the same document the
  // server gave while it ran (here: the same keys, and the same tick count once stopped).
  const nlohmann::json status = service.status();
  EXPECT_EQ(status["ticks"].get<int>(), ticks.load());
  for (const char* key : {"time", "ticks", "workers", "policy", "last_decision", "lag", "rates",
                          "latency_seconds", "queue", "operator_paused", "override", "runtime"}) {
    EXPECT_TRUE(status.contains(key)) << key;
  }
}

TEST(Service, ServesGetStatusOverHttpAsStatusDoes) {
  Service service(embedded_config(true), MessageHandler{});
  service.start();
  httplib::Client client("127.0.0.1", service.api_port());
  // Wait (bounded) for the first tick.
  nlohmann::json served;
  for (int i = 0; i < 100; ++i) {
    const httplib::Result res = client.Get("/v1/status");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    served = nlohmann::json::parse(res->body);
    if (served["ticks"].get<int>() > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const nlohmann::json direct = service.status();
  ASSERT_GT(served["ticks"].get<int>(), 0);
  std::set<std::string> served_keys, direct_keys;
  for (const auto& [k, v] : served.items()) served_keys.insert(k);
  for (const auto& [k, v] : direct.items()) direct_keys.insert(k);
  EXPECT_EQ(served_keys, direct_keys);
  EXPECT_EQ(served["policy"], direct["policy"]);
  service.stop();
  EXPECT_FALSE(client.Get("/healthz"));  // the API stopped with the service
}

TEST(Service, StopFromAnotherThreadEndsRunUntilStopped) {
  Service service(embedded_config(false), MessageHandler{});
  service.start();
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    service.stop();
  });
  service.run_until_stopped();  // returns once stopped
  stopper.join();
  EXPECT_TRUE(service.stop_requested());
  service.stop();  // idempotent
}

}  // namespace
}  // namespace lagpilot

namespace lagpilot {
namespace {

// A dead-letter produce that the broker refuses holds the partition's commit below the
// failed record until a later produce lands; then everything is committed and the dead-letter
// topic has the record.
TEST(Service, AFailingDeadLetterProduceHoldsTheCommitAndLosesNothing) {
  EmbeddedBroker broker(EmbeddedBrokerOptions{1, {{"events", 1}, {"events.dlq", 1}}});
  AppConfig config = Service::config_from_json({{"broker", "external"},
                                                {"tick_seconds", 0.2},
                                                {"http", {{"enabled", false}}},
                                                {"kafka",
                                                 {{"bootstrap_servers", broker.bootstrap_servers()},
                                                  {"ordering", "partition"},
                                                  {"commit_interval_seconds", 0.2}}},
                                                {"failure",
                                                 {{"initial_backoff_seconds", 0.2},
                                                  {"max_backoff_seconds", 0.2},
                                                  {"dead_letter", {{"topic", "events.dlq"}}}}}});
  // Produce 200 records; the one at offset 100 is poison.
  {
    ProducerOptions po;
    po.bootstrap = broker.bootstrap_servers();
    po.topic = "events";
    po.rate = 50000;
    po.count = 200;
    std::atomic<bool> stop{false};
    SteadyClock clock;
    ASSERT_EQ(PacedProducer(po, clock).run(stop).delivered, 200u);
  }
  // From here on the only producer is the service's dead-letter producer: its next five
  // produces are refused.
  broker.push_request_errors(
      0, std::vector<rd_kafka_resp_err_t>(5, RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE));
  std::atomic<int> handled{0};
  MessageHandler handler = [&](const SourceMessage& m) {
    if (m.offset == 100) throw PermanentFailure("poison");
    ++handled;
  };
  Service service(config, handler);
  service.start();
  // While the dead-letter topic refuses the record, nothing at or past offset 100 is committed.
  int64_t max_committed_while_refused = -1;
  bool saw_refusals = false;
  for (int i = 0; i < 600; ++i) {
    const SourceStats s = service.runtime().source().stats();
    const nlohmann::json st = service.status();
    if (!s.partitions.empty()) {
      const int64_t committed = s.partitions[0].committed;
      if (committed >= 200) break;
      if (!saw_refusals && handled.load() >= 100) saw_refusals = true;
      if (saw_refusals)
        max_committed_while_refused = std::max(max_committed_while_refused, committed);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(saw_refusals);
  EXPECT_LE(max_committed_while_refused, 100);
  const nlohmann::json deliveries = service.status()["runtime"]["deliveries"];
  EXPECT_EQ(deliveries["dead_letter_failures"], 5) << deliveries.dump();
  EXPECT_EQ(deliveries["dead_letter"], 1);
  EXPECT_EQ(deliveries["ok"], 199);
  EXPECT_EQ(service.runtime().source().stats().partitions.at(0).committed, 200);
  service.stop();
  EXPECT_EQ(handled.load(), 199);
  const auto dlq = test_util::read_back(broker.bootstrap_servers(), "events.dlq", 1, 1);
  ASSERT_EQ(dlq.size(), 1u);
  EXPECT_NE(std::find(dlq[0].headers.begin(), dlq[0].headers.end(),
                      std::make_pair(std::string("lagpilot-original-offset"), std::string("100"))),
            dlq[0].headers.end());
}

}  // namespace
}  // namespace lagpilot
