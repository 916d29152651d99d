#pragma once
// Produces failed records to the dead-letter topic and waits for the broker's acknowledgement,
// so that the record's offset is committed only once the dead-letter topic has it.
//
// The dead-letter record keeps the original key and value, and headers (the original ones
// first), plus:
//   lagpilot-original-topic, lagpilot-original-partition, lagpilot-original-offset
//   lagpilot-error           the last failure ("HTTP 400: ...")
//   lagpilot-attempts        attempts made
//   lagpilot-first-failure   when the first attempt failed (Unix milliseconds)
// `extra` headers follow those (the shed topic adds lagpilot-shed-reason; see shedding.h).
// acks=all and idempotence keep a retried produce from writing the record twice on a broker
// that supports it; a timed-out produce retried later may still land twice (at-least-once).
//
// Thread-safety: send() from any number of threads at once; a thread of its own serves the
// delivery reports.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "controller/kafka/kafka_source.h"

namespace lagpilot {

class DeadLetterProducer {
 public:
  // Throws std::runtime_error naming what librdkafka refused.
  DeadLetterProducer(const std::string& bootstrap, std::string topic,
                     const std::map<std::string, std::string>& properties,
                     double ack_timeout_seconds = 30);
  ~DeadLetterProducer();  // waits (bounded) for what is in flight

  DeadLetterProducer(const DeadLetterProducer&) = delete;
  DeadLetterProducer& operator=(const DeadLetterProducer&) = delete;

  // "" once acknowledged; else why not (the caller retries).
  std::string send(const SourceMessage& message, const std::string& error, int attempts,
                   int64_t first_failure_unix_ms,
                   const std::vector<std::pair<std::string, std::string>>& extra = {});

  const std::string& topic() const { return topic_; }

 private:
  struct Handle;  // the librdkafka producer (dead_letter_producer.cpp)
  std::unique_ptr<Handle> handle_;
  std::string topic_;
  double ack_timeout_seconds_;
  std::atomic<bool> stop_{false};  // atomic: set by the destructor, read by the poll thread
  std::thread poll_thread_;
};

}  // namespace lagpilot
