#pragma once
// Test helpers shared by the controller tests that talk to the embedded broker: read a topic
// back with a plain librdkafka consumer using assign() (no group join, so no ~3 s wait).

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace lagpilot::test_util {

struct ReadRecord {
  int32_t partition = 0;
  int64_t offset = 0;
  std::string key;
  std::string value;
  std::vector<std::pair<std::string, std::string>> headers;  // in record order
};

// Reads partitions [0, partitions) of `topic` from the beginning until `expected` records
// arrived or `timeout_seconds` passed; returns what it got (possibly fewer, or more).
inline std::vector<ReadRecord> read_back(const std::string& bootstrap, const std::string& topic,
                                         int partitions, std::size_t expected,
                                         double timeout_seconds = 10.0) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const char* name, const char* value) {
    if (rd_kafka_conf_set(conf, name, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
      throw std::runtime_error(std::string("read_back: ") + name + ": " + errstr);
    }
  };
  set("bootstrap.servers", bootstrap.c_str());
  set("group.id", "lagpilot-test-reader");
  set("enable.auto.commit", "false");
  set("fetch.wait.max.ms", "20");  // the mock answers an empty fetch only after this
  set("log_level", "3");
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (rk == nullptr) throw std::runtime_error(std::string("read_back: ") + errstr);
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(parts, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_resp_err_t err = rd_kafka_assign(rk, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_destroy(rk);
    throw std::runtime_error(std::string("read_back: assign: ") + rd_kafka_err2str(err));
  }
  std::vector<ReadRecord> records;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_seconds));
  while (records.size() < expected && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* msg = rd_kafka_consumer_poll(rk, 100);
    if (msg == nullptr) continue;
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      ReadRecord r;
      r.partition = msg->partition;
      r.offset = msg->offset;
      if (msg->key != nullptr) r.key.assign(static_cast<const char*>(msg->key), msg->key_len);
      if (msg->payload != nullptr) {
        r.value.assign(static_cast<const char*>(msg->payload), msg->len);
      }
      rd_kafka_headers_t* headers = nullptr;
      if (rd_kafka_message_headers(msg, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char* name = nullptr;
        const void* value = nullptr;
        size_t size = 0;
        for (size_t i = 0; rd_kafka_header_get_all(headers, i, &name, &value, &size) ==
                           RD_KAFKA_RESP_ERR_NO_ERROR;
             ++i) {
          r.headers.emplace_back(name, std::string(static_cast<const char*>(value), size));
        }
      }
      records.push_back(std::move(r));
    }
    rd_kafka_message_destroy(msg);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return records;
}

}  // namespace lagpilot::test_util
