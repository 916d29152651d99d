#pragma once
// The librdkafka producer plumbing shared by PacedProducer (producer.h: paced traffic for demos,
// load tests and benchmarks) and SaturatingProducer (calibration.h: a bounded backlog while the
// consumer is measured). RdKafkaProducer owns a producer handle and one topic handle, created
// with lagpilot's producer settings (linger.ms=5, queue.buffering.max.messages=500000,
// batch.num.messages=10000, log_level=4; the caller's properties are applied after them and
// override them); produce() queues a copy of one encoded message (message_codec.h) with its key.
//
// Thread-safety: construct and destroy on one thread. produce() and poll() are called from the
// one thread that produces; handle() may be used from any thread for librdkafka's thread-safe
// calls (rd_kafka_flush, rd_kafka_outq_len) once that thread is done. The delivery and log
// callbacks run inside librdkafka calls (poll, flush) on the calling thread, or for the log
// callback on librdkafka's own threads.

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <map>
#include <string>

#include "controller/kafka/rdkafka_handles.h"

namespace lagpilot {

// Called once per message with its delivery report; `opaque` is RdKafkaProducerSettings::opaque.
using RdKafkaDeliveryCallback = void (*)(rd_kafka_t*, const rd_kafka_message_t*, void* opaque);
// librdkafka's log lines (level as syslog: 3 error, 4 warning, ...).
using RdKafkaLogCallback = void (*)(const rd_kafka_t*, int level, const char* facility,
                                    const char* message);

struct RdKafkaProducerSettings {
  std::string client_name;  // starts every error message: "producer", "calibration producer"
  std::string bootstrap;
  std::string topic;
  std::map<std::string, std::string> properties;  // extra librdkafka settings (override ours)
  RdKafkaDeliveryCallback on_delivery = nullptr;  // required
  RdKafkaLogCallback on_log = nullptr;            // nullptr: librdkafka's own logger (stderr)
  void* opaque = nullptr;                         // passed to on_delivery
};

class RdKafkaProducer {
 public:
  // Creates the producer and the topic handle. Throws std::runtime_error naming the client and
  // what librdkafka refused: "<client_name>: property NAME=VALUE: <why>", "<client_name>: cannot
  // create librdkafka producer: <why>" or "<client_name>: topic 'T': <why>".
  explicit RdKafkaProducer(const RdKafkaProducerSettings& settings);
  // Destroys the topic handle, then the producer, without flushing (flush first to wait for
  // the delivery reports).
  ~RdKafkaProducer();

  RdKafkaProducer(const RdKafkaProducer&) = delete;
  RdKafkaProducer& operator=(const RdKafkaProducer&) = delete;

  // Queues a copy of `value` on any partition, with key "k<seq % keys>", or no key when keys is
  // 0. Returns RD_KAFKA_RESP_ERR_NO_ERROR when queued, else the error: on
  // RD_KAFKA_RESP_ERR__QUEUE_FULL, poll() to serve delivery reports and try again.
  rd_kafka_resp_err_t produce(const std::string& value, uint64_t seq, uint64_t keys);

  // Serves delivery reports, waiting up to timeout_ms for one.
  void poll(int timeout_ms) { rd_kafka_poll(producer_.get(), timeout_ms); }

  rd_kafka_t* handle() const { return producer_.get(); }

 private:
  // Declared in this order so that the topic handle is destroyed before the producer.
  RdKafka producer_;
  RdKafkaTopic topic_;
};

}  // namespace lagpilot
