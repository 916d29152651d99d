// lagpilot::Service with the http sink against a scripted server in this process: first
// attempts answered 500, 429 with Retry-After, or stalled past the timeout, and one key refused
// for good (400). Every message ends delivered or dead-lettered, per-key order holds across the
// retries, and the commit reaches the end.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "controller/loadgen/embedded_broker.h"
#include "controller/loadgen/producer.h"
#include "controller/steady_clock.h"
#include "lagpilot/lagpilot.h"
#include "tests/common/wait.h"
#include "tests/kafka/kafka_test_util.h"

namespace lagpilot {
namespace {

struct ScriptedServer {
  httplib::Server server;
  std::thread thread;
  int port = 0;
  std::mutex mu;                                          // guards the maps below
  std::map<std::string, int> attempts;                    // ce-id -> attempts seen
  std::map<std::string, std::vector<int64_t>> delivered;  // key -> offsets answered 200, in order
  std::multiset<int64_t> delivered_offsets;

  ScriptedServer() {
    server.set_keep_alive_max_count(100000);
    server.new_task_queue = [] { return new httplib::ThreadPool(24); };
    server.Post("/events", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string id = req.get_header_value("ce-id");
      const std::string key = req.get_header_value("ce-partitionkey");
      const int64_t offset = std::stoll(id.substr(id.rfind('/') + 1));
      int attempt;
      {
        std::lock_guard lock(mu);
        attempt = ++attempts[id];
      }
      if (key == "k5") {
        res.status = 400;  // refused for good: dead-lettered
        return;
      }
      if (attempt == 1 && offset % 7 == 0) {
        res.status = 500;
        return;
      }
      if (attempt == 1 && offset % 11 == 0) {
        res.status = 429;
        res.set_header("Retry-After", "0");
        return;
      }
      if (attempt == 1 && offset % 13 == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(600));  // past the 0.3 s timeout
        res.status = 200;                                             // nobody hears this one
        return;
      }
      std::lock_guard lock(mu);
      delivered[key].push_back(offset);
      delivered_offsets.insert(offset);
      res.status = 200;
    });
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    testing::wait_until([this] { return server.is_running(); }, 5.0);
  }
  ~ScriptedServer() {
    server.stop();
    thread.join();
  }
};

TEST(HttpSinkService, RetriesKeepKeyOrderAndEveryMessageEndsDeliveredOrDeadLettered) {
  EmbeddedBroker broker(EmbeddedBrokerOptions{1, {{"events", 1}, {"events.dlq", 1}}});
  constexpr uint64_t kMessages = 600;
  {
    ProducerOptions po;
    po.bootstrap = broker.bootstrap_servers();
    po.topic = "events";
    po.rate = 50000;
    po.count = kMessages;
    po.keys = 8;
    std::atomic<bool> stop{false};
    SteadyClock clock;
    ASSERT_EQ(PacedProducer(po, clock).run(stop).delivered, kMessages);
  }
  ScriptedServer sink;
  const AppConfig config = Service::config_from_json(
      {{"broker", "external"},
       {"tick_seconds", 0.2},
       {"http", {{"enabled", false}}},
       {"kafka",
        {{"bootstrap_servers", broker.bootstrap_servers()}, {"commit_interval_seconds", 0.2}}},
       {"handler",
        {{"type", "http"},
         {"url", "http://127.0.0.1:" + std::to_string(sink.port) + "/events"},
         {"timeout_seconds", 0.3}}},
       {"failure",
        {{"initial_backoff_seconds", 0.01},
         {"max_backoff_seconds", 0.05},
         {"dead_letter", {{"topic", "events.dlq"}}}}}});
  Service service(config, MessageHandler{});
  service.start();
  const bool committed_all = testing::wait_until(
      [&] {
        const SourceStats s = service.runtime().source().stats();
        return !s.partitions.empty() &&
               s.partitions[0].committed >= static_cast<int64_t>(kMessages);
      },
      60.0);
  const nlohmann::json deliveries = service.status()["runtime"]["deliveries"];
  service.stop();
  ASSERT_TRUE(committed_all);

  // k5's messages were dead-lettered, everything else delivered; none was lost.
  const auto dlq = test_util::read_back(broker.bootstrap_servers(), "events.dlq", 1, kMessages / 8);
  std::set<int64_t> dead_lettered;
  for (const auto& r : dlq) {
    EXPECT_EQ(r.key, "k5");
    for (const auto& [name, value] : r.headers) {
      if (name == "lagpilot-original-offset") dead_lettered.insert(std::stoll(value));
    }
  }
  std::lock_guard lock(sink.mu);
  for (int64_t offset = 0; offset < static_cast<int64_t>(kMessages); ++offset) {
    const bool done = sink.delivered_offsets.count(offset) > 0 || dead_lettered.count(offset) > 0;
    EXPECT_TRUE(done) << "offset " << offset << " neither delivered nor dead-lettered";
  }
  EXPECT_EQ(dead_lettered.size(), kMessages / 8);
  // Per key, the successes came in offset order although many first attempts failed.
  for (const auto& [key, offsets] : sink.delivered) {
    EXPECT_TRUE(std::is_sorted(offsets.begin(), offsets.end())) << key;
  }
  EXPECT_GT(deliveries["retry"].get<uint64_t>(), kMessages / 7);
  EXPECT_GT(deliveries["pushbacks"].get<uint64_t>(), 0u);
}

}  // namespace
}  // namespace lagpilot
