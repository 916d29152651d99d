// The dead-letter producer against the embedded broker: the record keeps its key and value and
// gains the lagpilot-* headers; a produce the broker refuses is reported (so the caller retries
// and nothing is committed), and the next one lands.
#include "controller/sinks/dead_letter_producer.h"

#include <gtest/gtest.h>

#include <map>

#include "controller/loadgen/embedded_broker.h"
#include "tests/kafka/kafka_test_util.h"

namespace lagpilot {
namespace {

SourceMessage failed_message() {
  SourceMessage m;
  m.topic = "events";
  m.partition = 5;
  m.offset = 1234;
  m.key = "user-7";
  m.has_key = true;
  m.value = "payload";
  m.headers = {{"trace-id", "abc"}};
  return m;
}

TEST(DeadLetterProducer, KeepsTheRecordAndAddsWhereAndWhy) {
  EmbeddedBroker broker(EmbeddedBrokerOptions{1, {{"events.dlq", 1}}});
  DeadLetterProducer dlq(broker.bootstrap_servers(), "events.dlq", {}, 10);
  ASSERT_EQ(dlq.send(failed_message(), "HTTP 400: bad schema", 3, 1700000000123), "");
  const auto records = test_util::read_back(broker.bootstrap_servers(), "events.dlq", 1, 1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].key, "user-7");
  EXPECT_EQ(records[0].value, "payload");
  ASSERT_FALSE(records[0].headers.empty());
  EXPECT_EQ(records[0].headers[0], std::make_pair(std::string("trace-id"), std::string("abc")));
  std::map<std::string, std::string> h(records[0].headers.begin(), records[0].headers.end());
  EXPECT_EQ(h["lagpilot-original-topic"], "events");
  EXPECT_EQ(h["lagpilot-original-partition"], "5");
  EXPECT_EQ(h["lagpilot-original-offset"], "1234");
  EXPECT_EQ(h["lagpilot-error"], "HTTP 400: bad schema");
  EXPECT_EQ(h["lagpilot-attempts"], "3");
  EXPECT_EQ(h["lagpilot-first-failure"], "1700000000123");
}

TEST(DeadLetterProducer, AProduceTheBrokerRefusesIsReportedNotLost) {
  EmbeddedBroker broker(EmbeddedBrokerOptions{1, {{"events.dlq", 1}}});
  // Produce answers: not retriable by librdkafka itself, so the error reaches the report.
  DeadLetterProducer dlq(broker.bootstrap_servers(), "events.dlq",
                         {{"enable.idempotence", "false"}, {"retries", "0"}}, 10);
  ASSERT_EQ(dlq.send(failed_message(), "warm-up", 1, 1), "");  // connected, metadata known
  broker.push_request_errors(0, {RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE});
  const std::string refused = dlq.send(failed_message(), "boom", 1, 1);
  EXPECT_NE(refused, "");
  EXPECT_EQ(dlq.send(failed_message(), "boom", 2, 1), "");  // the caller's retry lands
  const auto records = test_util::read_back(broker.bootstrap_servers(), "events.dlq", 1, 2);
  EXPECT_EQ(records.size(), 2u);
}

}  // namespace
}  // namespace lagpilot
