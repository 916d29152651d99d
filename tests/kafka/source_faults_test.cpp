// Faults of the live path against the embedded broker: a poll thread that dies fails readiness
// (503 with the reason) and stops the service after a drain and the final commit, with a
// failure the binary turns into a non-zero exit; auto.offset.reset=latest is applied only to a
// group without committed offsets, and what it skips is counted.
#include <gtest/gtest.h>
#include <httplib.h>
#include <librdkafka/rdkafka.h>

#include <atomic>
#include <string>

#include "controller/consumer_runtime.h"
#include "controller/kafka/kafka_source.h"
#include "controller/loadgen/embedded_broker.h"
#include "controller/loadgen/producer.h"
#include "controller/pool/worker_pool.h"
#include "controller/steady_clock.h"
#include "lagpilot/lagpilot.h"
#include "tests/common/wait.h"

namespace lagpilot {
namespace {

using testing::wait_until;

void produce(const std::string& bootstrap, const std::string& topic, uint64_t count) {
  ProducerOptions po;
  po.bootstrap = bootstrap;
  po.topic = topic;
  po.rate = 1e9;
  po.count = count;
  po.keys = 8;
  po.flush_timeout_seconds = 30;
  SteadyClock clock;
  std::atomic<bool> stop{false};
  ASSERT_EQ(PacedProducer(po, clock).run(stop).delivered, count);
}

// The group's committed offset of one partition, read by a throwaway consumer; -1 if none.
int64_t committed_offset(const std::string& bootstrap, const std::string& group,
                         const std::string& topic, int32_t partition) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof err);
  rd_kafka_conf_set(conf, "group.id", group.c_str(), err, sizeof err);
  rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (rk == nullptr) return -2;
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(list, topic.c_str(), partition);
  int64_t offset = -2;
  if (rd_kafka_committed(rk, list, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    offset = list->elems[0].offset;
  }
  rd_kafka_topic_partition_list_destroy(list);
  rd_kafka_destroy(rk);
  return offset;
}

TEST(SourceFaults, PollThreadDeathFailsReadinessThenDrainsCommitsAndReportsTheFailure) {
  EmbeddedBroker broker(EmbeddedBrokerOptions{1, {{"events", 1}}});
  produce(broker.bootstrap_servers(), "events", 200);
  AppConfig config = Service::config_from_json(
      {{"broker", "external"},
       {"tick_seconds", 0.2},
       {"http", {{"enabled", true}, {"port", 0}}},
       {"kafka",
        {{"bootstrap_servers", broker.bootstrap_servers()}, {"commit_interval_seconds", 30}}}});
  ServiceOptions options;
  options.tick_thread = ServiceOptions::TickThread::kCaller;  // no tick until we ask
  std::atomic<uint64_t> handled{0};
  Service service(
      config, [&](const SourceMessage&) { ++handled; }, options);
  service.start();
  ASSERT_TRUE(wait_until([&] { return handled.load() >= 200; }, 30));
  EXPECT_TRUE(service.failure().empty());

  service.runtime().source().inject_poll_failure_for_testing();
  ASSERT_TRUE(wait_until([&] { return !service.failure().empty(); }, 10));
  EXPECT_NE(service.failure().find("injected poll-loop fault"), std::string::npos);
  httplib::Client client("127.0.0.1", service.api_port());
  const auto res = client.Get("/readyz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_NE(res->body.find("injected poll-loop fault"), std::string::npos) << res->body;

  // The loop sees the failure at its first tick and stops; the drain and the final commit the
  // poll loop never reached still run (commit_interval_seconds 30: no periodic commit yet).
  service.run_until_stopped();
  EXPECT_FALSE(service.failure().empty());
  EXPECT_EQ(
      committed_offset(broker.bootstrap_servers(), config.runtime.kafka.group_id, "events", 0),
      200);
}

KafkaSourceConfig source_config(const EmbeddedBroker& broker, const std::string& group) {
  KafkaSourceConfig c;
  c.bootstrap_servers = broker.bootstrap_servers();
  c.topics = {"events"};
  c.group_id = group;
  c.commit_interval_seconds = 0.2;
  c.revoke_timeout_seconds = 2;
  c.properties = {{"auto.offset.reset", "latest"},
                  {"session.timeout.ms", "6000"},
                  {"heartbeat.interval.ms", "300"},
                  {"fetch.wait.max.ms", "20"},
                  {"log_level", "3"}};
  return c;
}

TEST(SourceFaults, LatestOffsetResetOnlyWithoutACommittedOffsetAndCounted) {
  EmbeddedBroker broker(EmbeddedBrokerOptions{1, {{"events", 2}}});
  produce(broker.bootstrap_servers(), "events", 300);
  SteadyClock clock;
  WorkerPoolOptions po;
  po.initial_workers = 2;
  po.max_workers = 2;
  {
    WorkerPool pool(po, clock);
    std::atomic<uint64_t> handled{0};
    KafkaSource source(
        source_config(broker, "g-latest"), pool, [&](const SourceMessage&) { ++handled; }, clock);
    source.start();
    ASSERT_TRUE(wait_until([&] { return source.stats().skipped_reset == 300; }, 30))
        << "skipped_reset " << source.stats().skipped_reset;
    // Records produced after the reset are handled; nothing before them.
    produce(broker.bootstrap_servers(), "events", 50);
    ASSERT_TRUE(wait_until([&] { return handled.load() >= 50; }, 20));
    ASSERT_TRUE(wait_until(
        [&] {
          const SourceStats s = source.refreshed_stats();
          int64_t committed = 0;
          for (const auto& p : s.partitions) committed += std::max<int64_t>(0, p.committed);
          return committed == 350;
        },
        10));
    EXPECT_EQ(handled.load(), 50u);
    source.stop(5);
    pool.shutdown(5);
  }
  // The same group again, with committed offsets: latest does not apply, nothing is skipped,
  // and what was produced meanwhile is handled.
  produce(broker.bootstrap_servers(), "events", 40);
  WorkerPool pool(po, clock);
  std::atomic<uint64_t> handled{0};
  KafkaSource source(
      source_config(broker, "g-latest"), pool, [&](const SourceMessage&) { ++handled; }, clock);
  source.start();
  ASSERT_TRUE(wait_until([&] { return handled.load() >= 40; }, 30));
  EXPECT_EQ(source.stats().skipped_reset, 0u);
  source.stop(5);
  pool.shutdown(5);
  EXPECT_EQ(handled.load(), 40u);
}

}  // namespace
}  // namespace lagpilot
