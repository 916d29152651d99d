#pragma once
// The Kafka source's configuration: KafkaSourceConfig (JSON in and out) and the librdkafka
// consumer configuration built from it (our defaults, the user's properties, the values the
// source reads back, and the config warnings).
//
// Thread-safety: plain values and functions; call from one thread at a time (the control
// thread, at construction).

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/kafka/rdkafka_handles.h"

namespace lagpilot {

struct KafkaSourceConfig {
  std::string bootstrap_servers;  // may also come from properties["bootstrap.servers"]
  std::vector<std::string> topics{"events"};
  std::string group_id = "lagpilot";
  // Passed through to librdkafka verbatim, after our defaults (so they override them), except
  // enable.auto.commit, which is always false (a warning says so if set to true).
  std::map<std::string, std::string> properties;
  std::string ordering = "key";  // key | partition | unordered
  double commit_interval_seconds = 5.0;
  double revoke_timeout_seconds = 10.0;
  // Bound on messages consumed but not finished; 0 = 2 x the pool's queue capacity.
  int64_t max_unfinished = 0;

  // Reads {"bootstrap_servers", "topics", "group_id", "properties", "ordering",
  // "commit_interval_seconds", "revoke_timeout_seconds", "max_unfinished"}. Property values may
  // be strings, numbers or booleans. Throws ConfigError naming the JSON path (unknown keys too).
  static KafkaSourceConfig from_json(const nlohmann::json& j, const std::string& path = "kafka");
  nlohmann::json to_json() const;
};

// The consumer's librdkafka configuration and what the source reads back from it.
struct ConsumerConf {
  RdKafkaConf conf;  // handed to rd_kafka_new by KafkaSource::start()
  int64_t fetch_max_bytes = 52428800;
  int64_t max_partition_fetch_bytes = 1048576;
  double max_poll_interval_seconds = 300.0;
  // The user asked for auto.offset.reset=latest (largest, end). librdkafka is given earliest
  // instead, so that a committed offset that fell out of range is never reset to the end in
  // silence; the source applies `latest` itself, only to partitions that have no committed
  // offset, and counts what it skips (KafkaSource::Core::resolve_committed).
  bool reset_to_latest = false;
};

// Builds the consumer configuration: our defaults, then the user's properties, then
// enable.auto.commit=false (ConfigError naming "kafka.bootstrap_servers" or
// "kafka.properties.<name>" for what librdkafka refuses); warns when enable.auto.commit=true is
// overridden (the config advice, controller/config_advice.h, covers the rest). Installs the
// spdlog log callback; the caller sets the opaque and the other callbacks.
ConsumerConf build_consumer_conf(const KafkaSourceConfig& config);

}  // namespace lagpilot
