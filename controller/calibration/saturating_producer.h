#pragma once
// A producer for `lagpilot calibrate`: it keeps the topic saturated with a bounded backlog, so
// the consumer never runs dry while it is measured.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "policies/clock.h"

namespace lagpilot {

struct SaturatingProducerOptions {
  std::string bootstrap;
  std::string topic;
  uint64_t keys = 1024;  // key = "k<seq % keys>"; 0 = null keys
  // Backlog kept ahead of the consumer: clamp(lead_seconds x consumption rate, min_backlog,
  // max_backlog) messages. max_backlog protects small retention limits (the embedded broker
  // keeps about 5 MB per partition).
  int64_t min_backlog = 2000;
  double lead_seconds = 1.0;
  int64_t max_backlog = 200000;
  std::size_t padding_bytes = 0;
  std::map<std::string, std::string> properties;  // extra librdkafka settings (override ours)
};

struct SaturatingProducerStats {
  uint64_t produced = 0;   // accepted by librdkafka
  uint64_t delivered = 0;  // acknowledged by the broker
  uint64_t failed = 0;     // delivery errors (and messages librdkafka refused)
};

// Keeps the topic saturated with a bounded backlog. Algorithm: a thread loops every
// millisecond: it reads how many messages the consumer finished (the `consumed` callback),
// estimates the consumption rate (exponentially smoothed over about 0.5 s), and produces the
// shortfall of (produced - consumed) below the backlog target, at most 10,000 messages per
// loop. So the backlog follows the consumer's speed instead of growing without bound, as
// producing "well above capacity" would (and then overflow a small retention limit), and never
// reaches zero while the producer keeps up. Values are encode_message(seq, sent_us) (see
// message_codec.h), seq counting from 0. Messages that were in the topic before are counted
// as consumed too, so each of them makes the producer write one more: the backlog stays
// bounded, the topic grows by what is consumed.
//
// Thread-safety: start(), stop() and the destructor from one thread; stats() from any thread.
// `consumed` is called on the producer's thread and must be thread-safe
// (WorkerPool::completed() is).
class SaturatingProducer {
 public:
  // Throws std::invalid_argument (naming the field) or std::runtime_error (librdkafka refused).
  SaturatingProducer(SaturatingProducerOptions options, std::function<uint64_t()> consumed,
                     const Clock& clock);
  ~SaturatingProducer();  // stop()

  SaturatingProducer(const SaturatingProducer&) = delete;
  SaturatingProducer& operator=(const SaturatingProducer&) = delete;

  void start();
  // Stops producing and waits up to flush_timeout_seconds for delivery reports. Idempotent.
  void stop(double flush_timeout_seconds = 5.0);
  SaturatingProducerStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
};

}  // namespace lagpilot
