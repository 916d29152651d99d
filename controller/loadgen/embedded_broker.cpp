#include "controller/loadgen/embedded_broker.h"

#include <spdlog/spdlog.h>

#include <stdexcept>

namespace lagpilot {
namespace {

// The host handle carries the mock cluster and is also a (idle) client of it; its own
// connection errors, e.g. after set_broker_down(), are noise. Only the mock's critical messages
// (syslog levels <= 2, such as a failed poll) reach spdlog.
void quiet_log_cb(const rd_kafka_t* /*rk*/, int level, const char* facility, const char* buf) {
  if (level <= 2) spdlog::critical("embedded broker [{}]: {}", facility, buf);
}

void set_or_throw(rd_kafka_conf_t* conf, const char* name, const char* value) {
  char errstr[512];
  if (rd_kafka_conf_set(conf, name, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
    throw std::runtime_error(std::string("embedded broker: config ") + name + "=" + value + ": " +
                             errstr);
  }
}

}  // namespace

EmbeddedBroker::EmbeddedBroker(EmbeddedBrokerOptions options) : options_(std::move(options)) {
  if (options_.brokers < 1) {
    throw std::runtime_error("embedded broker: brokers must be >= 1, got " +
                             std::to_string(options_.brokers));
  }
  // The cluster is created by the handle (test.mock.num.brokers) rather than with
  // rd_kafka_mock_cluster_new(): librdkafka 2.0's rd_kafka_mock_cluster_destroy() then takes
  // about 1 s to join its broker threads, while destroying the handle tears it down at once.
  RdKafkaConf conf{rd_kafka_conf_new()};
  set_or_throw(conf.get(), "test.mock.num.brokers", std::to_string(options_.brokers).c_str());
  set_or_throw(conf.get(), "log_level", "2");
  set_or_throw(conf.get(), "client.id", "lagpilot-embedded-broker");
  rd_kafka_conf_set_log_cb(conf.get(), quiet_log_cb);
  char errstr[512];
  // On failure host_ stays empty and the conf is still ours; on success the handle owns it.
  host_.reset(rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr, sizeof errstr));
  if (!host_) {
    throw std::runtime_error(std::string("embedded broker: cannot create the mock cluster: ") +
                             errstr);
  }
  (void)conf.release();
  // Owned by host_ (destroying the handle takes the cluster with it; the destructor does not
  // run for a throwing constructor, but the member host_ is destroyed).
  cluster_ = rd_kafka_handle_mock_cluster(host_.get());
  if (cluster_ == nullptr) {
    throw std::runtime_error("embedded broker: no mock cluster on the handle (" +
                             std::to_string(options_.brokers) + " brokers)");
  }
  bootstrap_ = rd_kafka_mock_cluster_bootstraps(cluster_);
  for (const auto& [name, partitions] : options_.topics) create_topic(name, partitions);
  spdlog::debug("embedded broker: {} broker(s) at {}", options_.brokers, bootstrap_);
}

EmbeddedBroker::~EmbeddedBroker() = default;  // host_ destroys the mock cluster too

const std::string& EmbeddedBroker::bootstrap_servers() const {
  return bootstrap_;
}

int EmbeddedBroker::broker_count() const {
  return options_.brokers;
}

void EmbeddedBroker::create_topic(const std::string& topic, int partitions, int replication) {
  if (topic.empty()) throw std::runtime_error("embedded broker: create_topic: empty topic name");
  if (partitions < 1) {
    throw std::runtime_error("embedded broker: create_topic '" + topic +
                             "': partitions must be >= 1, got " + std::to_string(partitions));
  }
  if (replication < 1 || replication > options_.brokers) {
    throw std::runtime_error("embedded broker: create_topic '" + topic + "': replication " +
                             std::to_string(replication) + " not in [1, " +
                             std::to_string(options_.brokers) + "]");
  }
  rd_kafka_resp_err_t err =
      rd_kafka_mock_topic_create(cluster_, topic.c_str(), partitions, replication);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw std::runtime_error("embedded broker: create_topic '" + topic +
                             "': " + rd_kafka_err2str(err));
  }
}

namespace {
void check_broker_id(const char* what, int broker_id, int brokers) {
  if (broker_id < 1 || broker_id > brokers) {
    throw std::runtime_error(std::string("embedded broker: ") + what + ": broker id " +
                             std::to_string(broker_id) + " not in [1, " + std::to_string(brokers) +
                             "]");
  }
}
}  // namespace

void EmbeddedBroker::set_broker_down(int broker_id) {
  check_broker_id("set_broker_down", broker_id, options_.brokers);
  rd_kafka_resp_err_t err = rd_kafka_mock_broker_set_down(cluster_, broker_id);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw std::runtime_error("embedded broker: set_broker_down(" + std::to_string(broker_id) +
                             "): " + rd_kafka_err2str(err));
  }
}

void EmbeddedBroker::set_broker_up(int broker_id) {
  check_broker_id("set_broker_up", broker_id, options_.brokers);
  rd_kafka_resp_err_t err = rd_kafka_mock_broker_set_up(cluster_, broker_id);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw std::runtime_error("embedded broker: set_broker_up(" + std::to_string(broker_id) +
                             "): " + rd_kafka_err2str(err));
  }
}

void EmbeddedBroker::push_request_errors(int16_t api_key, std::vector<rd_kafka_resp_err_t> errors) {
  if (errors.empty()) return;
  rd_kafka_mock_push_request_errors_array(cluster_, api_key, errors.size(), errors.data());
}

rd_kafka_mock_cluster_t* EmbeddedBroker::mock() {
  return cluster_;
}

}  // namespace lagpilot
