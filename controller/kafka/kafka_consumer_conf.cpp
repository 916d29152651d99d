// build_consumer_conf (controller/kafka/kafka_config.h): librdkafka's consumer conf from a
// KafkaSourceConfig.
#include <spdlog/spdlog.h>

#include <stdexcept>
#include <string>

#include "controller/kafka/kafka_config.h"
#include "policies/config_reader.h"

namespace lagpilot {
namespace {

constexpr int kQueuedMinMessages = 1'000'000;  // librdkafka default: see build_consumer_conf

void log_cb(const rd_kafka_t*, int level, const char* fac, const char* buf) {
  // syslog levels: 0-3 error, 4 warning, 5-6 info, 7 debug.
  if (level <= 3) {
    spdlog::error("rdkafka [{}] {}", fac, buf);
  } else if (level == 4) {
    spdlog::warn("rdkafka [{}] {}", fac, buf);
  } else if (level <= 6) {
    spdlog::info("rdkafka [{}] {}", fac, buf);
  } else {
    spdlog::debug("rdkafka [{}] {}", fac, buf);
  }
}

void conf_set(rd_kafka_conf_t* conf, const std::string& name, const std::string& value,
              const std::string& path) {
  char err[512];
  if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
    throw ConfigError(path, err);
  }
}

std::string conf_get(rd_kafka_conf_t* conf, const char* name) {
  char buf[512];
  size_t size = sizeof(buf);
  if (rd_kafka_conf_get(conf, name, buf, &size) != RD_KAFKA_CONF_OK) return "";
  return buf;
}

int64_t conf_get_int(rd_kafka_conf_t* conf, const char* name, int64_t fallback) {
  const std::string s = conf_get(conf, name);
  try {
    return s.empty() ? fallback : std::stoll(s);
  } catch (const std::exception&) {
    return fallback;
  }
}

}  // namespace

ConsumerConf build_consumer_conf(const KafkaSourceConfig& cfg) {
  ConsumerConf c;
  c.conf.reset(rd_kafka_conf_new());
  rd_kafka_conf_t* conf = c.conf.get();
  if (!cfg.bootstrap_servers.empty()) {
    conf_set(conf, "bootstrap.servers", cfg.bootstrap_servers, "kafka.bootstrap_servers");
  }
  conf_set(conf, "group.id", cfg.group_id, "kafka.group_id");
  conf_set(conf, "client.id", "lagpilot", "kafka.properties.client.id");
  conf_set(conf, "auto.offset.reset", "earliest", "kafka.properties.auto.offset.reset");
  // Incremental rebalancing: a member keeps consuming the partitions it keeps while the group
  // rebalances, and commits the ones that move before giving them up (rebalance.cpp). Under
  // the eager default every member stops and gives up everything on every join or leave.
  conf_set(conf, "partition.assignment.strategy", "cooperative-sticky",
           "kafka.properties.partition.assignment.strategy");
  // librdkafka 2.0 stops fetching a partition for a fixed 1 s once the consumer's prefetch
  // queue holds queued.min.messages (default 100000, counted over all partitions together) or
  // queued.max.messages.kbytes (64 MB). With small messages the count binds long before the
  // memory bound (100000 messages of 40 bytes are 4 MB), and a consumer that drains them in
  // 0.1 s then idles for 0.9 s. Raised so that the byte bound governs (1M messages of 64 bytes).
  conf_set(conf, "queued.min.messages", std::to_string(kQueuedMinMessages),
           "kafka.properties.queued.min.messages");
  for (const auto& [name, value] : cfg.properties) {
    conf_set(conf, name, value, "kafka.properties." + name);
  }
  const std::string reset = conf_get(conf, "auto.offset.reset");
  if (reset == "latest" || reset == "largest" || reset == "end") {
    c.reset_to_latest = true;
    conf_set(conf, "auto.offset.reset", "earliest", "kafka.properties.auto.offset.reset");
  }
  auto user_auto_commit = cfg.properties.find("enable.auto.commit");
  if (user_auto_commit != cfg.properties.end() && user_auto_commit->second != "false") {
    spdlog::warn(
        "kafka.properties.enable.auto.commit=true ignored: lagpilot commits explicit "
        "offsets of finished messages (at-least-once)");
  }
  conf_set(conf, "enable.auto.commit", "false", "kafka.properties.enable.auto.commit");
  if (conf_get(conf, "bootstrap.servers").empty()) {
    throw ConfigError("kafka.bootstrap_servers", "must be set (or properties.bootstrap.servers)");
  }

  c.fetch_max_bytes = conf_get_int(conf, "fetch.max.bytes", c.fetch_max_bytes);
  c.max_partition_fetch_bytes =
      conf_get_int(conf, "max.partition.fetch.bytes", c.max_partition_fetch_bytes);
  c.max_poll_interval_seconds =
      static_cast<double>(conf_get_int(conf, "max.poll.interval.ms", 300000)) / 1000.0;
  // The config advice (fetch.max.bytes above 50 MB, revoke_timeout_seconds not below
  // max.poll.interval.ms, ...) is logged by Service::start from controller/config_advice.
  rd_kafka_conf_set_log_cb(conf, &log_cb);
  return c;
}

}  // namespace lagpilot
