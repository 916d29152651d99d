#include "controller/loadgen/rdkafka_producer.h"

#include <charconv>
#include <stdexcept>

namespace lagpilot {

RdKafkaProducer::RdKafkaProducer(const RdKafkaProducerSettings& settings) {
  const std::string& who = settings.client_name;
  RdKafkaConf conf{rd_kafka_conf_new()};
  char errstr[512];
  auto set = [&](const std::string& name, const std::string& value) {
    if (rd_kafka_conf_set(conf.get(), name.c_str(), value.c_str(), errstr, sizeof errstr) !=
        RD_KAFKA_CONF_OK) {
      throw std::runtime_error(who + ": property " + name + "=" + value + ": " + errstr);
    }
  };
  set("bootstrap.servers", settings.bootstrap);
  set("linger.ms", "5");
  set("queue.buffering.max.messages", "500000");
  set("batch.num.messages", "10000");
  set("log_level", "4");
  for (const auto& [name, value] : settings.properties) set(name, value);
  rd_kafka_conf_set_dr_msg_cb(conf.get(), settings.on_delivery);
  if (settings.on_log != nullptr) rd_kafka_conf_set_log_cb(conf.get(), settings.on_log);
  rd_kafka_conf_set_opaque(conf.get(), settings.opaque);
  producer_.reset(rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr, sizeof errstr));
  if (!producer_) {  // rd_kafka_new() takes the conf only on success
    throw std::runtime_error(who + ": cannot create librdkafka producer: " + errstr);
  }
  (void)conf.release();  // owned by the producer now
  topic_.reset(rd_kafka_topic_new(producer_.get(), settings.topic.c_str(), nullptr));
  if (!topic_) {
    const std::string why = rd_kafka_err2str(rd_kafka_last_error());
    throw std::runtime_error(who + ": topic '" + settings.topic + "': " + why);
  }
}

RdKafkaProducer::~RdKafkaProducer() = default;

rd_kafka_resp_err_t RdKafkaProducer::produce(const std::string& value, uint64_t seq,
                                             uint64_t keys) {
  char key[32];
  std::size_t key_len = 0;
  if (keys > 0) {
    key[0] = 'k';
    key_len =
        static_cast<std::size_t>(std::to_chars(key + 1, key + sizeof key, seq % keys).ptr - key);
  }
  // librdkafka takes a non-const payload pointer, but with RD_KAFKA_MSG_F_COPY only reads it.
  if (rd_kafka_produce(topic_.get(), RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY,
                       const_cast<char*>(value.data()), value.size(), key_len > 0 ? key : nullptr,
                       key_len, nullptr) == 0) {
    return RD_KAFKA_RESP_ERR_NO_ERROR;
  }
  return rd_kafka_last_error();
}

}  // namespace lagpilot
