// Kafka record headers reach the handler (SourceMessage::headers), in order, and a message
// without headers has none (the worker's reused message is refilled).
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "controller/kafka/kafka_source.h"
#include "controller/kafka/rdkafka_handles.h"
#include "controller/loadgen/embedded_broker.h"
#include "controller/pool/worker_pool.h"
#include "controller/steady_clock.h"

namespace lagpilot {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

// Produces to partition 0 of `topic`: the value, key "k" and the given headers (a nullptr value
// is a null header value). Waits for the delivery.
void produce_with_headers(const EmbeddedBroker& broker, const std::string& topic,
                          const std::string& value,
                          const std::vector<std::pair<const char*, const char*>>& headers) {
  char err[512];
  RdKafkaConf conf{rd_kafka_conf_new()};
  rd_kafka_conf_set(conf.get(), "bootstrap.servers", broker.bootstrap_servers().c_str(), err,
                    sizeof err);
  rd_kafka_conf_set(conf.get(), "log_level", "3", err, sizeof err);
  RdKafka rk{rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), err, sizeof err)};
  if (!rk) throw std::runtime_error(err);
  (void)conf.release();
  RdKafkaHeaders hdrs{rd_kafka_headers_new(headers.size())};
  for (const auto& [name, v] : headers) {
    rd_kafka_header_add(hdrs.get(), name, -1, v, v != nullptr ? -1 : 0);
  }
  // On success producev takes the headers; on failure they stay ours.
  const rd_kafka_resp_err_t e =
      rd_kafka_producev(rk.get(), RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(0),
                        RD_KAFKA_V_KEY("k", 1), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                        RD_KAFKA_V_HEADERS(hdrs.get()), RD_KAFKA_V_END);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) throw std::runtime_error(rd_kafka_err2str(e));
  (void)hdrs.release();
  if (rd_kafka_flush(rk.get(), 10000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw std::runtime_error("flush timed out");
  }
}

TEST(KafkaSourceHeaders, HandlerSeesTheRecordHeaders) {
  EmbeddedBroker broker(EmbeddedBrokerOptions{1, {{"headers", 1}}});
  produce_with_headers(broker, "headers", "with",
                       {{"trace-id", "abc"}, {"empty", ""}, {"null", nullptr}});
  produce_with_headers(broker, "headers", "without", {});
  produce_with_headers(broker, "headers", "again", {{"trace-id", "def"}});

  SteadyClock clock;
  WorkerPool pool(WorkerPoolOptions{1, 1, 100, 0.8, 0.2}, clock);
  std::mutex mu;                        // guards seen
  std::map<std::string, Headers> seen;  // by value
  KafkaSourceConfig config;
  config.bootstrap_servers = broker.bootstrap_servers();
  config.topics = {"headers"};
  config.group_id = "headers-group";
  config.properties = {
      {"session.timeout.ms", "6000"}, {"fetch.wait.max.ms", "20"}, {"log_level", "4"}};
  KafkaSource source(
      config, pool,
      [&](const SourceMessage& m) {
        std::lock_guard<std::mutex> lock(mu);
        seen[m.value] = m.headers;
      },
      clock);
  source.start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (seen.size() == 3) break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "messages did not arrive";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  source.stop(5);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(seen["with"], (Headers{{"trace-id", "abc"}, {"empty", ""}, {"null", ""}}));
  EXPECT_TRUE(seen["without"].empty());
  EXPECT_EQ(seen["again"], (Headers{{"trace-id", "def"}}));
}

}  // namespace
}  // namespace lagpilot
