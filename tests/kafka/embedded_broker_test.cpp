#include "controller/loadgen/embedded_broker.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "controller/loadgen/message_codec.h"
#include "controller/loadgen/producer.h"
#include "controller/steady_clock.h"
#include "kafka_test_util.h"
#include "policies/clock.h"
#include "tests/common/ci_skip.h"

namespace lagpilot {
namespace {

// Partition count of `topic` as the cluster reports it (-1 if unknown).
int metadata_partitions(const std::string& bootstrap, const std::string& topic) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), errstr, sizeof errstr);
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
  rd_kafka_conf_set(conf, "allow.auto.create.topics", "false", errstr, sizeof errstr);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (rk == nullptr) return -1;
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  int partitions = -1;
  if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      partitions = md->topics[0].partition_cnt;
    }
    rd_kafka_metadata_destroy(md);
  }
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  return partitions;
}

TEST(EmbeddedBroker, StartsAndCreatesTopics) {
  EmbeddedBroker broker({.brokers = 3, .topics = {{"events", 6}, {"other", 1}}});
  EXPECT_EQ(broker.broker_count(), 3);
  const std::string& bootstrap = broker.bootstrap_servers();
  ASSERT_FALSE(bootstrap.empty());
  EXPECT_NE(bootstrap.find("127.0.0.1:"), std::string::npos) << bootstrap;
  EXPECT_NE(broker.mock(), nullptr);
  EXPECT_EQ(metadata_partitions(bootstrap, "events"), 6);
  EXPECT_EQ(metadata_partitions(bootstrap, "other"), 1);
  broker.create_topic("late", 4, 3);
  EXPECT_EQ(metadata_partitions(bootstrap, "late"), 4);
}

TEST(EmbeddedBroker, SubscriberOfACreatedTopicReceivesMessages) {
  // A consumer-group subscriber (the first join takes ~3 s on the mock) sees every message.
  EmbeddedBroker broker({.brokers = 1, .topics = {{"events", 2}}});
  {
    SteadyClock clock;
    std::atomic<bool> stop{false};
    ProducerOptions o;
    o.bootstrap = broker.bootstrap_servers();
    o.topic = "events";
    o.rate = 100000;
    o.count = 30;
    ASSERT_EQ(PacedProducer(o, clock).run(stop).delivered, 30u);
  }
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", broker.bootstrap_servers().c_str(), errstr,
                    sizeof errstr);
  rd_kafka_conf_set(conf, "group.id", "subscriber-test", errstr, sizeof errstr);
  rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", errstr, sizeof errstr);
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  ASSERT_NE(rk, nullptr) << errstr;
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, "events", RD_KAFKA_PARTITION_UA);
  EXPECT_EQ(rd_kafka_subscribe(rk, topics), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_topic_partition_list_destroy(topics);
  std::set<uint64_t> seqs;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(12);
  while (seqs.size() < 30 && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* msg = rd_kafka_consumer_poll(rk, 100);
    if (msg == nullptr) continue;
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      auto d = decode_message(std::string_view(static_cast<const char*>(msg->payload), msg->len));
      if (d) seqs.insert(d->seq);
    }
    rd_kafka_message_destroy(msg);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  EXPECT_EQ(seqs.size(), 30u);
}

TEST(EmbeddedBroker, RejectsBadArguments) {
  EXPECT_THROW(EmbeddedBroker({.brokers = 0, .topics = {}}), std::runtime_error);
  EXPECT_THROW(EmbeddedBroker({.brokers = 1, .topics = {{"t", 0}}}), std::runtime_error);
  EmbeddedBroker broker({.brokers = 2, .topics = {}});
  EXPECT_THROW(broker.create_topic("", 1), std::runtime_error);
  EXPECT_THROW(broker.create_topic("t", 1, 3), std::runtime_error);  // replication > brokers
  EXPECT_THROW(broker.set_broker_down(0), std::runtime_error);
  EXPECT_THROW(broker.set_broker_up(3), std::runtime_error);
  try {
    broker.set_broker_down(7);
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("broker id 7"), std::string::npos) << e.what();
  }
}

ProducerOptions quick_producer(const EmbeddedBroker& broker, const std::string& topic,
                               uint64_t count) {
  ProducerOptions o;
  o.bootstrap = broker.bootstrap_servers();
  o.topic = topic;
  o.rate = 100000;
  o.count = count;
  o.properties = {{"message.timeout.ms", "1500"}, {"retries", "0"}};
  o.flush_timeout_seconds = 5;
  return o;
}

TEST(EmbeddedBroker, BrokerDownFailsDeliveriesAndUpRestoresThem) {
  EmbeddedBroker broker({.brokers = 1, .topics = {{"events", 1}}});
  SteadyClock clock;
  std::atomic<bool> stop{false};

  broker.set_broker_down(1);
  const ProducerStats down = PacedProducer(quick_producer(broker, "events", 5), clock).run(stop);
  EXPECT_EQ(down.produced, 5u);
  EXPECT_EQ(down.delivered, 0u);
  EXPECT_EQ(down.failed, 5u);  // each timed-out delivery is counted

  broker.set_broker_up(1);
  const ProducerStats up = PacedProducer(quick_producer(broker, "events", 5), clock).run(stop);
  EXPECT_EQ(up.delivered, 5u);
  EXPECT_EQ(up.failed, 0u);
  EXPECT_EQ(test_util::read_back(broker.bootstrap_servers(), "events", 1, 5).size(), 5u);
}

TEST(EmbeddedBroker, PushedRequestErrorsReachClients) {
  EmbeddedBroker broker({.brokers = 1, .topics = {{"events", 1}}});
  // The next Produce request (api key 0) fails with a non-retriable error.
  broker.push_request_errors(0, {RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED});
  SteadyClock clock;
  std::atomic<bool> stop{false};
  const ProducerStats first = PacedProducer(quick_producer(broker, "events", 1), clock).run(stop);
  EXPECT_EQ(first.produced, 1u);
  EXPECT_EQ(first.failed, 1u);
  EXPECT_EQ(first.delivered, 0u);
  // The error stack is used up: the next request goes through.
  const ProducerStats second = PacedProducer(quick_producer(broker, "events", 1), clock).run(stop);
  EXPECT_EQ(second.delivered, 1u);
  EXPECT_EQ(second.failed, 0u);
}

// ---- kcat ------------------------------------------------------------------------------

bool kcat_available() {
  return std::system("command -v kcat >/dev/null 2>&1") == 0;
}

std::string run_capture(const std::string& cmd) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return out;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe.get())) > 0) out.append(buf, n);
  return out;
}

TEST(EmbeddedBroker, KcatProducesAndConsumes) {
  if (!kcat_available())
    LAGPILOT_SKIP_UNLESS_CI("kcat not found on PATH; install kcat to run this test");
  EmbeddedBroker broker({.brokers = 1, .topics = {{"events", 1}}});
  const std::string& bootstrap = broker.bootstrap_servers();
  constexpr int kMessages = 100;

  {
    const std::string cmd = "timeout 20 kcat -P -b " + bootstrap + " -t events -X log_level=3";
    FILE* in = popen(cmd.c_str(), "w");
    ASSERT_NE(in, nullptr);
    for (int i = 0; i < kMessages; ++i) {
      const std::string line = encode_message(static_cast<uint64_t>(i), 1000 + i) + "\n";
      fwrite(line.data(), 1, line.size(), in);
    }
    ASSERT_EQ(pclose(in), 0) << "kcat -P failed";
  }

  // kcat reads back what kcat wrote.
  const std::string out = run_capture("timeout 20 kcat -C -b " + bootstrap +
                                      " -t events -o beginning -e -q -X log_level=3");
  std::vector<std::string> lines;
  for (std::size_t pos = 0; pos < out.size();) {
    const std::size_t nl = out.find('\n', pos);
    const std::size_t end = nl == std::string::npos ? out.size() : nl;
    if (end > pos) lines.push_back(out.substr(pos, end - pos));
    pos = end + 1;
  }
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kMessages)) << out;
  for (int i = 0; i < kMessages; ++i) {
    auto d = decode_message(lines[static_cast<std::size_t>(i)]);
    ASSERT_TRUE(d.has_value()) << lines[static_cast<std::size_t>(i)];
    EXPECT_EQ(d->seq, static_cast<uint64_t>(i));  // one partition: in order
    EXPECT_EQ(d->sent_us, 1000 + i);
  }

  // A librdkafka consumer sees kcat's messages too.
  const auto records = test_util::read_back(bootstrap, "events", 1, kMessages);
  ASSERT_EQ(records.size(), static_cast<std::size_t>(kMessages));
  std::set<uint64_t> seqs;
  for (const auto& r : records) {
    auto d = decode_message(r.value);
    ASSERT_TRUE(d.has_value()) << r.value;
    seqs.insert(d->seq);
  }
  EXPECT_EQ(seqs.size(), static_cast<std::size_t>(kMessages));
  EXPECT_EQ(*seqs.begin(), 0u);
  EXPECT_EQ(*seqs.rbegin(), static_cast<uint64_t>(kMessages - 1));
}

TEST(EmbeddedBroker, KcatConsumesWhatPacedProducerWrote) {
  if (!kcat_available())
    LAGPILOT_SKIP_UNLESS_CI("kcat not found on PATH; install kcat to run this test");
  EmbeddedBroker broker({.brokers = 1, .topics = {{"events", 2}}});
  SteadyClock clock;
  std::atomic<bool> stop{false};
  const ProducerStats st = PacedProducer(quick_producer(broker, "events", 50), clock).run(stop);
  ASSERT_EQ(st.delivered, 50u);
  const std::string out = run_capture("timeout 20 kcat -C -b " + broker.bootstrap_servers() +
                                      " -t events -o beginning -e -q -X log_level=3");
  std::set<uint64_t> seqs;
  std::size_t pos = 0;
  while (pos < out.size()) {
    const std::size_t nl = out.find('\n', pos);
    const std::size_t end = nl == std::string::npos ? out.size() : nl;
    auto d = decode_message(std::string_view(out).substr(pos, end - pos));
    if (d) seqs.insert(d->seq);
    pos = end + 1;
  }
  EXPECT_EQ(seqs.size(), 50u) << out;
}

}  // namespace
}  // namespace lagpilot
