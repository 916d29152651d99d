// RuntimeConfig's reading and writing, apart from the runtime (see cmake/lagpilot_library.cmake,
// STANDALONE: the simulator-only commands read configs without linking librdkafka).
#include "controller/consumer_runtime.h"
#include "policies/config_reader.h"

namespace lagpilot {

void RuntimeConfig::read_keys(JsonObjectReader& root, RuntimeConfig& c) {
  root.read_enum("broker", c.broker, {"embedded", "external"});
  root.read("embedded_brokers", c.embedded_brokers, 1, 16);
  root.read("topic_partitions", c.topic_partitions, 1, 1024);
  if (root.has("kafka")) c.kafka = KafkaSourceConfig::from_json(*root.raw("kafka"), "kafka");
  if (root.has("handler")) {
    c.handler = HandlerConfig::from_json(*root.raw("handler"), "handler");
  }
  {
    JsonObjectReader pool = root.child("pool");
    int64_t capacity = static_cast<int64_t>(c.pool.queue_capacity);
    pool.read("queue_capacity", capacity, 1, 10'000'000);
    c.pool.queue_capacity = static_cast<std::size_t>(capacity);
    pool.read("high_watermark", c.pool.high_watermark, 0.01, 1.0);
    pool.read("low_watermark", c.pool.low_watermark, 0.0, 0.99);
    pool.finish();
    if (c.pool.low_watermark >= c.pool.high_watermark) {
      throw ConfigError(pool.path_of("low_watermark"), "must be below high_watermark");
    }
  }
  if (root.has("failure")) c.failure = FailureConfig::from_json(*root.raw("failure"), "failure");
  if (root.has("shedding")) {
    c.shedding = ShedConfig::from_json(*root.raw("shedding"), "shedding");
    for (const std::string& topic : c.kafka.topics) {
      if (topic == c.shedding.to_topic) {
        throw ConfigError("shedding.to_topic",
                          "\"" + topic +
                              "\" is a topic this consumer reads (kafka.topics): shed "
                              "records would come back to it");
      }
    }
  }
  if (root.has("batch")) c.batch = BatchConfig::from_json(*root.raw("batch"), "batch");
  root.read("ledger", c.ledger);
  root.read("tick_seconds", c.tick_seconds, 0.01, 3600.0);
  root.read("shutdown_timeout_seconds", c.shutdown_timeout_seconds, 0.0, 3600.0);
  root.read("lag_slo", c.lag_slo, 0.0, 1e15);
  root.read("catch_up_seconds", c.catch_up_seconds, 1.0, 86400.0);
  if (root.has("pacing")) c.pacing = PacingConfig::from_json(*root.raw("pacing"), "pacing");
}

void RuntimeConfig::write_keys(nlohmann::json& root) const {
  root["broker"] = broker;
  root["embedded_brokers"] = embedded_brokers;
  root["topic_partitions"] = topic_partitions;
  root["kafka"] = kafka.to_json();
  root["handler"] = handler.to_json();
  root["failure"] = failure.to_json();
  if (shedding.enabled) root["shedding"] = shedding.to_json();
  if (batch.enabled) root["batch"] = batch.to_json();
  root["pool"] = {{"queue_capacity", pool.queue_capacity},
                  {"high_watermark", pool.high_watermark},
                  {"low_watermark", pool.low_watermark}};
  root["ledger"] = ledger;
  root["tick_seconds"] = tick_seconds;
  root["shutdown_timeout_seconds"] = shutdown_timeout_seconds;
  root["lag_slo"] = lag_slo;
  root["catch_up_seconds"] = catch_up_seconds;
  root["pacing"] = pacing.to_json();
}

}  // namespace lagpilot
