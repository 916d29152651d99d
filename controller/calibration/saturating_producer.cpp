#include "controller/calibration/saturating_producer.h"

#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "controller/loadgen/message_codec.h"
#include "controller/loadgen/rdkafka_producer.h"

namespace lagpilot {

struct SaturatingProducer::Impl {
  SaturatingProducerOptions options;
  std::function<uint64_t()> consumed;
  const Clock& clock;
  std::atomic<bool> stop_requested{false};  // atomic: set by stop(), read by the thread
  bool stopped = false;
  // atomic: written on the producer thread (and its delivery callbacks), read by stats().
  std::atomic<uint64_t> produced{0};
  std::atomic<uint64_t> delivered{0};
  std::atomic<uint64_t> failed{0};
  // Last, so that it is destroyed first: its delivery callback writes the counters above.
  std::unique_ptr<RdKafkaProducer> kafka;

  Impl(SaturatingProducerOptions o, std::function<uint64_t()> c, const Clock& cl)
      : options(std::move(o)), consumed(std::move(c)), clock(cl) {}

  static void delivery_cb(rd_kafka_t*, const rd_kafka_message_t* msg, void* opaque) {
    auto* self = static_cast<Impl*>(opaque);
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      self->delivered.fetch_add(1, std::memory_order_relaxed);
    } else if (self->failed.fetch_add(1, std::memory_order_relaxed) < 5) {
      spdlog::error("calibration producer: delivery to {} failed: {}", self->options.topic,
                    rd_kafka_err2str(msg->err));
    }
  }

  void create() {
    kafka = std::make_unique<RdKafkaProducer>(RdKafkaProducerSettings{
        .client_name = "calibration producer",
        .bootstrap = options.bootstrap,
        .topic = options.topic,
        .properties = options.properties,
        .on_delivery = &Impl::delivery_cb,
        .opaque = this,
    });
  }

  void loop() {
    constexpr int64_t kMaxPerLoop = 10000;
    constexpr double kRateWindowSeconds = 0.5;
    std::string value;
    uint64_t seq = 0;
    double rate = 0.0;  // smoothed consumption rate, messages/s
    double last_time = clock.now();
    uint64_t last_consumed = consumed();
    while (!stop_requested.load(std::memory_order_relaxed)) {
      const double now = clock.now();
      const uint64_t done = consumed();
      if (now - last_time >= 0.05) {
        const double instant = static_cast<double>(done - last_consumed) / (now - last_time);
        const double alpha = 1.0 - std::exp(-(now - last_time) / kRateWindowSeconds);
        rate += alpha * (instant - rate);
        last_time = now;
        last_consumed = done;
      }
      const auto target = std::clamp<int64_t>(static_cast<int64_t>(options.lead_seconds * rate),
                                              options.min_backlog, options.max_backlog);
      const int64_t backlog = static_cast<int64_t>(produced.load(std::memory_order_relaxed)) -
                              static_cast<int64_t>(done);
      int64_t shortfall = std::min(target - backlog, kMaxPerLoop);
      while (shortfall > 0 && !stop_requested.load(std::memory_order_relaxed)) {
        encode_message_into(value, seq, epoch_micros_now(), options.padding_bytes);
        const rd_kafka_resp_err_t err = kafka->produce(value, seq, options.keys);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
          produced.fetch_add(1, std::memory_order_relaxed);
          ++seq;
          --shortfall;
          continue;
        }
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
          kafka->poll(1);  // let deliveries drain the local queue, then retry
          continue;
        }
        if (failed.fetch_add(1, std::memory_order_relaxed) < 5) {
          spdlog::error("calibration producer: produce to {} failed: {}", options.topic,
                        rd_kafka_err2str(err));
        }
        break;  // not transient: try again next loop
      }
      kafka->poll(0);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
};

SaturatingProducer::SaturatingProducer(SaturatingProducerOptions options,
                                       std::function<uint64_t()> consumed, const Clock& clock) {
  if (options.bootstrap.empty())
    throw std::invalid_argument("producer: bootstrap: must not be empty");
  if (options.topic.empty()) throw std::invalid_argument("producer: topic: must not be empty");
  if (!consumed) throw std::invalid_argument("producer: consumed: a callback is required");
  if (options.min_backlog < 1) throw std::invalid_argument("producer: min_backlog: must be >= 1");
  if (options.max_backlog < options.min_backlog) {
    throw std::invalid_argument("producer: max_backlog: must be >= min_backlog");
  }
  if (!(options.lead_seconds >= 0))
    throw std::invalid_argument("producer: lead_seconds: must be >= 0");
  impl_ = std::make_unique<Impl>(std::move(options), std::move(consumed), clock);
  impl_->create();
}

SaturatingProducer::~SaturatingProducer() {
  stop();
}

void SaturatingProducer::start() {
  if (thread_.joinable() || impl_->stopped) throw std::logic_error("producer: start() twice");
  thread_ = std::thread([this] { impl_->loop(); });
}

void SaturatingProducer::stop(double flush_timeout_seconds) {
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->stop_requested.store(true);
  if (thread_.joinable()) thread_.join();
  rd_kafka_t* producer = impl_->kafka->handle();
  rd_kafka_flush(producer, static_cast<int>(std::max(0.0, flush_timeout_seconds) * 1000));
  const int left = rd_kafka_outq_len(producer);
  if (left > 0) {
    spdlog::warn("calibration producer: {} messages without delivery report after {} s", left,
                 flush_timeout_seconds);
  }
}

SaturatingProducerStats SaturatingProducer::stats() const {
  return {impl_->produced.load(std::memory_order_relaxed),
          impl_->delivered.load(std::memory_order_relaxed),
          impl_->failed.load(std::memory_order_relaxed)};
}

}  // namespace lagpilot
