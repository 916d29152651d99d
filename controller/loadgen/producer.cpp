#include "controller/loadgen/producer.h"

#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "controller/loadgen/message_codec.h"
#include "controller/loadgen/rdkafka_producer.h"
#include "controller/loadgen/token_bucket.h"

namespace lagpilot {
namespace {

constexpr uint64_t kMaxBatch = 10000;       // produce calls between two polls, at most
constexpr double kMaxSleepSeconds = 0.001;  // wall-clock sleep step while waiting for tokens
constexpr uint64_t kLoggedFailures = 10;    // failed deliveries logged one by one

void producer_log_cb(const rd_kafka_t* /*rk*/, int level, const char* facility, const char* buf) {
  if (level <= 3) {
    spdlog::error("producer [{}]: {}", facility, buf);
  } else if (level == 4) {
    spdlog::warn("producer [{}]: {}", facility, buf);
  }
}

}  // namespace

struct PacedProducer::Impl {
  ProducerOptions options;
  const Clock& clock;
  bool ran = false;

  double burst_for(double rate) const { return std::max(1.0, rate * options.burst_seconds); }

  // atomic: written by the run() thread (produce calls and delivery callbacks served by its
  // polls), read by stats() from any thread.
  std::atomic<uint64_t> produced{0};
  std::atomic<uint64_t> delivered{0};
  std::atomic<uint64_t> report_failed{0};  // delivery report with an error
  std::atomic<uint64_t> local_failed{0};   // never queued, or no report by the flush timeout
  // atomic: written by the run() thread, read by stats() from any thread.
  std::atomic<uint64_t> pace_changes{0};
  std::atomic<double> current_rate{0};
  // Last, so that it is destroyed first: its delivery callback writes the counters above.
  std::unique_ptr<RdKafkaProducer> kafka;

  Impl(ProducerOptions o, const Clock& c) : options(std::move(o)), clock(c) {}

  static void delivery_cb(rd_kafka_t* /*rk*/, const rd_kafka_message_t* msg, void* opaque) {
    auto* self = static_cast<Impl*>(opaque);
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      self->delivered.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const uint64_t n = self->report_failed.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n <= kLoggedFailures) {
      auto decoded = decode_message(
          std::string_view(static_cast<const char*>(msg->payload), msg->payload ? msg->len : 0));
      spdlog::error("producer: delivery failed (topic {}, seq {}): {}", self->options.topic,
                    decoded ? std::to_string(decoded->seq) : std::string("?"),
                    rd_kafka_err2str(msg->err));
      if (n == kLoggedFailures) spdlog::error("producer: further delivery failures only counted");
    }
  }

  void validate() const {
    auto bad = [](const std::string& what) { throw std::invalid_argument("producer: " + what); };
    if (options.bootstrap.empty()) bad("bootstrap: must not be empty");
    if (options.topic.empty()) bad("topic: must not be empty");
    if (!std::isfinite(options.rate) || options.rate < 0) {
      bad("rate: must be a finite number >= 0, got " + std::to_string(options.rate));
    }
    for (std::size_t i = 0; i < options.trace_rates.size(); ++i) {
      const double r = options.trace_rates[i];
      if (!std::isfinite(r) || r < 0) {
        bad("trace_rates[" + std::to_string(i) + "]: must be a finite number >= 0, got " +
            std::to_string(r));
      }
    }
    if (!std::isfinite(options.trace_bin_seconds) || options.trace_bin_seconds <= 0) {
      bad("trace_bin_seconds: must be > 0, got " + std::to_string(options.trace_bin_seconds));
    }
    if (!(options.flush_timeout_seconds >= 0)) bad("flush_timeout_seconds: must be >= 0");
    if (options.pace && !options.trace_rates.empty()) bad("pace: excludes trace_rates");
    if (!std::isfinite(options.burst_seconds) || options.burst_seconds <= 0) {
      bad("burst_seconds: must be > 0, got " + std::to_string(options.burst_seconds));
    }
  }

  void create() {
    kafka = std::make_unique<RdKafkaProducer>(RdKafkaProducerSettings{
        .client_name = "producer",
        .bootstrap = options.bootstrap,
        .topic = options.topic,
        .properties = options.properties,
        .on_delivery = &Impl::delivery_cb,
        .on_log = &producer_log_cb,
        .opaque = this,
    });
  }

  // Produces one message; on a full local queue, serves delivery reports and retries. Returns
  // false only if `stop` was raised while the queue stayed full (the message is then counted as
  // failed and logged).
  bool produce_one(uint64_t seq, std::string& value, const std::atomic<bool>& stop) {
    encode_message_into(value, seq, epoch_micros_now(), options.padding_bytes);
    for (;;) {
      const rd_kafka_resp_err_t err = kafka->produce(value, seq, options.keys);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        produced.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        local_failed.fetch_add(1, std::memory_order_relaxed);
        spdlog::error("producer: produce seq {} to {} failed: {}", seq, options.topic,
                      rd_kafka_err2str(err));
        return true;  // counted; move on (the error is not transient)
      }
      if (stop.load(std::memory_order_relaxed)) {
        local_failed.fetch_add(1, std::memory_order_relaxed);
        spdlog::error("producer: stopped while local queue full; seq {} not produced", seq);
        return false;
      }
      kafka->poll(1);  // serve delivery reports so the queue drains
    }
  }

  ProducerStats run(const std::atomic<bool>& stop) {
    if (ran) throw std::logic_error("producer: run() called twice");
    ran = true;
    const bool traced = !options.trace_rates.empty();
    const double start = clock.now();
    std::size_t bin = 0;
    double rate = traced ? options.trace_rates[0] : options.rate;
    // Starts with one token so that the first message goes out at once.
    TokenBucket bucket(rate, burst_for(rate), start, 1.0);
    current_rate.store(rate, std::memory_order_relaxed);
    std::optional<PaceTarget> pace;  // the live pacing target in force, if any
    double logged_rate = -1;
    std::string logged_source;
    uint64_t seq = options.first_seq;
    uint64_t sent = 0;
    std::string value;
    value.reserve(64 + options.padding_bytes);

    while (!stop.load(std::memory_order_relaxed)) {
      double now = clock.now();
      bool trace_over = false;
      if (traced) {
        const double elapsed = std::max(0.0, now - start);
        const auto now_bin = static_cast<std::size_t>(elapsed / options.trace_bin_seconds);
        // Settle every bin boundary passed since the last look, at its exact time.
        while (bin < now_bin && bin + 1 < options.trace_rates.size()) {
          ++bin;
          const double boundary = start + static_cast<double>(bin) * options.trace_bin_seconds;
          rate = options.trace_rates[bin];
          current_rate.store(rate, std::memory_order_relaxed);
          bucket.set_rate(rate, boundary);
          bucket.set_burst(burst_for(rate), boundary);
        }
        if (now_bin >= options.trace_rates.size()) {
          // Take the last bin's tokens as of the trace's end, then stop.
          trace_over = true;
          now = start + static_cast<double>(options.trace_rates.size()) * options.trace_bin_seconds;
        }
      }
      if (options.pace && follow_pace(bucket, pace, options.pace(), now)) {
        pace_changes.fetch_add(1, std::memory_order_relaxed);
        current_rate.store(pace->rate, std::memory_order_relaxed);
        // Logged when the source changes or the rate moves by 5 % or more since the last line
        // (a measured recommendation moves a little at every tick).
        if (pace->source != logged_source ||
            std::fabs(pace->rate - logged_rate) >= 0.05 * logged_rate) {
          spdlog::info("producer: pacing at {:.1f} msg/s, burst {:.0f} (source {})", pace->rate,
                       pace->burst, pace->source.empty() ? "?" : pace->source);
          logged_rate = pace->rate;
          logged_source = pace->source;
        }
      }
      uint64_t want = kMaxBatch;
      if (options.count > 0) want = std::min(want, options.count - sent);
      const uint64_t n = bucket.available_whole(now, want);
      bool stopped = false;
      if (n > 0) {
        bucket.try_take(static_cast<double>(n), now);
        for (uint64_t i = 0; i < n && !stopped; ++i) {
          stopped = !produce_one(seq, value, stop);
          if (!stopped) {
            ++seq;
            ++sent;
          }
        }
      }
      if (trace_over && n == want && n > 0 && !stopped) continue;  // more tokens left at the end
      if (trace_over || stopped) break;
      kafka->poll(0);
      if (options.count > 0 && sent >= options.count) break;
      if (n == 0) {
        // From this pass's `now`, whose bin boundaries are settled: a fresh read here would
        // refill the bucket across boundaries not yet passed, at the old bin's rate.
        double wait = bucket.seconds_until(1.0, now);
        if (!std::isfinite(wait) || wait > kMaxSleepSeconds) wait = kMaxSleepSeconds;
        if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
      }
    }

    const auto timeout_ms = static_cast<int>(options.flush_timeout_seconds * 1000.0);
    const rd_kafka_resp_err_t flush_err = rd_kafka_flush(kafka->handle(), timeout_ms);
    const uint64_t reported = delivered.load() + report_failed.load();
    if (produced.load() > reported) {
      const uint64_t unreported = produced.load() - reported;
      spdlog::error("producer: flush after {} s: {}; {} messages without delivery report",
                    options.flush_timeout_seconds, rd_kafka_err2str(flush_err), unreported);
      local_failed.fetch_add(unreported, std::memory_order_relaxed);
    }
    const ProducerStats totals = stats();
    if (totals.failed > 0) {
      spdlog::error("producer: {} of {} messages failed (topic {})", totals.failed, totals.produced,
                    options.topic);
    }
    return totals;
  }

  ProducerStats stats() const {
    return ProducerStats{
        produced.load(std::memory_order_relaxed), delivered.load(std::memory_order_relaxed),
        report_failed.load(std::memory_order_relaxed) +
            local_failed.load(std::memory_order_relaxed),
        pace_changes.load(std::memory_order_relaxed), current_rate.load(std::memory_order_relaxed)};
  }
};

PacedProducer::PacedProducer(ProducerOptions options, const Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(options), clock)) {
  impl_->validate();
  impl_->create();
}

PacedProducer::~PacedProducer() = default;

ProducerStats PacedProducer::run(const std::atomic<bool>& stop) {
  return impl_->run(stop);
}

ProducerStats PacedProducer::stats() const {
  return impl_->stats();
}

}  // namespace lagpilot
