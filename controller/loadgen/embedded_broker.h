#pragma once
// An in-process Kafka cluster for demos and tests: an RAII wrapper around librdkafka's mock
// cluster (rdkafka_mock.h). The mock speaks the Kafka protocol on loopback ports, so any
// client (librdkafka, kcat) can connect to bootstrap_servers().
//
// The mock lives inside a private librdkafka handle owned by this object (created with
// test.mock.num.brokers); that handle's log output is filtered: only critical messages reach
// spdlog, connection chatter is dropped. Clients' own logs are their business.
//
// Facts about the mock worth knowing when sizing tests (DESIGN.md, "Build notes"):
//  - It keeps at most about 5 MB and 100,000 record batches per partition and drops the oldest
//    batches beyond that, like a tiny retention limit. Size backlogs under it (small values,
//    more partitions, or produce while consuming). A consumer whose committed offset falls
//    below the log start offset has lost records to retention.
//  - Create topics up front (options.topics or create_topic()); subscribers and assign()ers of
//    a created topic then work at once. A metadata request for an unknown topic may make the
//    mock auto-create it with its default partition count (4), which is rarely what a test
//    wants.
//  - The first consumer-group join takes about 3 s; tests that do not need a group should
//    assign() partitions instead of subscribe().
//
// Thread-safety: construction and destruction on one thread; every other method may be called
// from any thread once the constructor has returned.

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "controller/kafka/rdkafka_handles.h"

namespace lagpilot {

struct EmbeddedBrokerOptions {
  int brokers = 1;
  std::vector<std::pair<std::string, int>> topics;  // (name, partitions) created at start
};

class EmbeddedBroker {
 public:
  // Starts the mock cluster and creates options.topics. Throws std::runtime_error on failure
  // (the message names what failed).
  explicit EmbeddedBroker(EmbeddedBrokerOptions options);
  ~EmbeddedBroker();

  EmbeddedBroker(const EmbeddedBroker&) = delete;
  EmbeddedBroker& operator=(const EmbeddedBroker&) = delete;

  // Comma-separated host:port list for bootstrap.servers.
  const std::string& bootstrap_servers() const;
  int broker_count() const;

  // Creates a topic. Throws std::runtime_error (naming the topic) if the mock refuses it.
  void create_topic(const std::string& topic, int partitions, int replication = 1);

  // Fault injection. Broker ids are 1-based, as in the mock (1..broker_count()). A down broker
  // closes its connections and refuses new ones. Throw std::runtime_error on a bad id.
  void set_broker_down(int broker_id);
  void set_broker_up(int broker_id);

  // The next errors.size() requests with this API key (any broker) fail with these errors,
  // in order (rd_kafka_mock_push_request_errors_array). Example api keys: 0 Produce, 1 Fetch,
  // 3 Metadata, 8 OffsetCommit, 9 OffsetFetch, 11 JoinGroup.
  void push_request_errors(int16_t api_key, std::vector<rd_kafka_resp_err_t> errors);

  // Escape hatch for tests; owned by this object.
  rd_kafka_mock_cluster_t* mock();

 private:
  EmbeddedBrokerOptions options_;
  RdKafka host_;                                // handle the mock cluster lives in
  rd_kafka_mock_cluster_t* cluster_ = nullptr;  // owned by host_
  std::string bootstrap_;
};

}  // namespace lagpilot
