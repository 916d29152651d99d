#include "controller/sinks/delivery_pipeline.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <random>

namespace lagpilot {
namespace {

int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
int64_t (*const unix_ms_now_fn)() = unix_ms_now;

std::string where(const SourceMessage& m) {
  return m.topic + "/" + std::to_string(m.partition) + "@" + std::to_string(m.offset);
}

}  // namespace

DeliveryPipeline::DeliveryPipeline(Attempt attempt, FailureConfig config,
                                   DeadLetterSend dead_letter, uint64_t seed)
    : attempt_(std::move(attempt)),
      config_(std::move(config)),
      permanent_action_(config_.permanent_action()),
      send_dead_letter_(std::move(dead_letter)),
      backoff_(config_.initial_backoff_seconds, config_.max_backoff_seconds),
      seed_(seed) {
  if (!config_.dead_letter_topic.empty() && !send_dead_letter_) {
    throw std::invalid_argument("DeliveryPipeline: a dead-letter topic needs a DeadLetterSend");
  }
}

double DeliveryPipeline::next_backoff(int failed_attempts, double retry_after_seconds) {
  // One generator per worker thread and pipeline, each its own stream of the seed.
  thread_local std::mt19937_64 rng;
  thread_local const DeliveryPipeline* rng_owner = nullptr;
  if (rng_owner != this) {
    rng.seed(seed_ ^ (0x9E3779B97F4A7C15ull * (next_stream_.fetch_add(1) + 1)));
    rng_owner = this;
  }
  return backoff_.delay(failed_attempts, rng, retry_after_seconds);
}

bool DeliveryPipeline::wait(double seconds) {
  std::unique_lock lock(mu_);
  stop_cv_.wait_for(lock, std::chrono::duration<double>(seconds),
                    [this] { return stopped_.load(); });
  backoff_seconds_ += seconds;
  return !stopped_.load();
}

void DeliveryPipeline::enter_retry(int64_t started_ms, int64_t messages) {
  std::lock_guard lock(mu_);
  in_retry_ += messages;
  retry_starts_.insert(started_ms);
}

void DeliveryPipeline::leave_retry(int64_t started_ms, int64_t messages) {
  std::lock_guard lock(mu_);
  in_retry_ -= messages;
  retry_starts_.erase(retry_starts_.find(started_ms));
}

void DeliveryPipeline::set_shedding(Shedder* shedder, ShedSend send,
                                    std::function<int64_t()> unix_ms_now) {
  if (shedder != nullptr && !shedder->config().to_topic.empty() && !send) {
    throw std::invalid_argument("DeliveryPipeline: shedding.to_topic needs a ShedSend");
  }
  shedder_ = shedder;
  send_shed_ = std::move(send);
  shed_clock_ = unix_ms_now ? std::move(unix_ms_now) : std::function<int64_t()>(unix_ms_now_fn);
}

bool DeliveryPipeline::try_shed(const SourceMessage& m) {
  const std::optional<ShedVerdict> verdict = shedder_->decide(m, shed_clock_());
  if (!verdict) return false;
  if (send_shed_) {
    for (int tries = 1;; ++tries) {
      const std::string why = send_shed_(m, *verdict);
      if (why.empty()) break;
      shedder_->count_to_topic_failure();
      spdlog::error("shedding: produce of {} to {} failed (try {}), retrying: {}", where(m),
                    shedder_->config().to_topic, tries, why);
      if (!wait(next_backoff(tries, -1))) {
        throw DeliveryAbandoned("stopped while " + where(m) + " waited for the shed topic");
      }
    }
  }
  shedder_->count(verdict->reason);
  count_as_shed();  // the Kafka source counts it as shed, not processed
  return true;
}

void DeliveryPipeline::operator()(const SourceMessage& m) {
  if (shedder_ != nullptr && try_shed(m)) return;
  deliver_unit(
      1, [&] { return attempt_(m); },
      [&](const std::string& error, int attempts, int64_t first_failure_ms) {
        finish_dead_letter(m, error, attempts, first_failure_ms);
      },
      [&] { return where(m); });
}

template <typename AttemptFn, typename DeadLetterFn, typename DescribeFn>
void DeliveryPipeline::deliver_unit(uint64_t n, AttemptFn attempt, DeadLetterFn dead_letter,
                                    DescribeFn describe) {
  int attempts = 0;
  int64_t first_failure_ms = -1;
  std::string last_error;
  // Leaves the in-retry set however the message ends (finished, abandoned).
  struct RetryScope {
    DeliveryPipeline* self;
    int64_t* started;
    int64_t messages;
    ~RetryScope() {
      if (*started >= 0) self->leave_retry(*started, messages);
    }
  } scope{this, &first_failure_ms, static_cast<int64_t>(n)};

  while (true) {
    if (stopped_.load()) {
      throw DeliveryAbandoned("stopped before " + describe() + " was delivered");
    }
    const Delivery d = attempt();
    ++attempts;
    attempts_.fetch_add(1, std::memory_order_relaxed);
    window_attempts_.fetch_add(1, std::memory_order_relaxed);
    if (d.pushback) {
      pushbacks_.fetch_add(1, std::memory_order_relaxed);
      window_pushbacks_.fetch_add(1, std::memory_order_relaxed);
    }
    if (d.result == DeliveryResult::kDone) {
      ok_.fetch_add(n, std::memory_order_relaxed);
      return;
    }
    last_error = d.error;
    if (first_failure_ms < 0) {
      first_failure_ms = unix_ms_now();
      enter_retry(first_failure_ms, static_cast<int64_t>(n));
    }
    const bool permanent = d.result == DeliveryResult::kPermanent;
    if (permanent && permanent_action_ == "drop") {
      dropped_.fetch_add(n, std::memory_order_relaxed);
      spdlog::warn("delivery: dropped {} after {} attempt(s) (on_permanent_failure drop): {}",
                   describe(), attempts, d.error);
      return;
    }
    const bool exhausted = config_.max_attempts > 0 && attempts >= config_.max_attempts;
    if ((permanent && permanent_action_ == "dead_letter") || exhausted) {
      dead_letter(last_error, attempts, first_failure_ms);
      return;
    }
    retry_.fetch_add(n, std::memory_order_relaxed);
    if (attempts == 1 || attempts % 100 == 0) {
      spdlog::warn("delivery: {} failed (attempt {}), retrying: {}", describe(), attempts, d.error);
    }
    if (!wait(next_backoff(attempts, d.retry_after_seconds))) {
      throw DeliveryAbandoned("stopped while " + describe() + " was in retry");
    }
  }
}

void DeliveryPipeline::set_batching(BatchAttempt attempt, IncompleteBatchSend drop_send) {
  batch_attempt_ = std::move(attempt);
  drop_send_ = std::move(drop_send);
}

void DeliveryPipeline::count_batch(std::size_t size) {
  batches_.fetch_add(1, std::memory_order_relaxed);
  batch_messages_.fetch_add(size, std::memory_order_relaxed);
  const auto at =
      std::lower_bound(kBatchSizeBounds.begin(), kBatchSizeBounds.end(), static_cast<double>(size));
  batch_size_buckets_[static_cast<std::size_t>(at - kBatchSizeBounds.begin())].fetch_add(
      1, std::memory_order_relaxed);
}

void DeliveryPipeline::deliver_batch(std::span<const SourceMessage> batch) {
  if (!batch_attempt_) throw std::logic_error("DeliveryPipeline: deliver_batch without batching");
  // Shedding judges each message; what it keeps is the batch (a copy only when it shed some).
  thread_local std::vector<SourceMessage> kept;
  std::span<const SourceMessage> unit = batch;
  if (shedder_ != nullptr) {
    std::size_t i = 0;
    while (i < batch.size() && !try_shed(batch[i])) ++i;
    if (i < batch.size()) {
      kept.assign(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(i));
      for (++i; i < batch.size(); ++i) {
        if (!try_shed(batch[i])) kept.push_back(batch[i]);
      }
      unit = kept;
    }
  }
  if (unit.empty()) return;
  count_batch(unit.size());
  const auto describe = [&] {
    const SourceMessage& first = unit.front();
    return where(first) + ".." + std::to_string(unit.back().offset) + " (batch of " +
           std::to_string(unit.size()) + ")";
  };
  deliver_unit(
      unit.size(), [&] { return batch_attempt_(unit); },
      [&](const std::string& error, int attempts, int64_t first_failure_ms) {
        for (const SourceMessage& m : unit)
          finish_dead_letter(m, error, attempts, first_failure_ms);
      },
      describe);
}

void DeliveryPipeline::drop_incomplete(std::span<const SourceMessage> batch) {
  if (!drop_send_) return;
  for (const SourceMessage& m : batch) {
    for (int tries = 1;; ++tries) {
      const std::string why = drop_send_(m);
      if (why.empty()) break;
      if (shedder_ != nullptr) shedder_->count_to_topic_failure();
      spdlog::error("batch: produce of dropped {} to the shed topic failed (try {}), retrying: {}",
                    where(m), tries, why);
      if (!wait(next_backoff(tries, -1))) {
        throw DeliveryAbandoned("stopped while " + where(m) + " waited for the shed topic");
      }
    }
  }
}

void DeliveryPipeline::finish_dead_letter(const SourceMessage& m, const std::string& error,
                                          int attempts, int64_t first_failure_ms) {
  for (int tries = 1;; ++tries) {
    const std::string why = send_dead_letter_(m, error, attempts, first_failure_ms);
    if (why.empty()) {
      dead_letter_.fetch_add(1, std::memory_order_relaxed);
      spdlog::warn("delivery: {} dead-lettered to {} after {} attempt(s): {}", where(m),
                   config_.dead_letter_topic, attempts, error);
      return;
    }
    dead_letter_failures_.fetch_add(1, std::memory_order_relaxed);
    spdlog::error("delivery: dead-letter produce of {} failed (try {}), retrying: {}", where(m),
                  tries, why);
    if (!wait(next_backoff(tries, -1))) {
      throw DeliveryAbandoned("stopped while " + where(m) + " waited for the dead-letter topic");
    }
  }
}

void DeliveryPipeline::stop() {
  std::lock_guard lock(mu_);  // a waiter between its check and its wait sees the change
  stopped_.store(true);
  stop_cv_.notify_all();
}

DeliveryStats DeliveryPipeline::stats() const {
  DeliveryStats s;
#define LAGPILOT_COPY_OUTCOME(name, help) s.name = name##_.load(std::memory_order_relaxed);
  LAGPILOT_DELIVERY_OUTCOMES(LAGPILOT_COPY_OUTCOME)
#undef LAGPILOT_COPY_OUTCOME
  s.attempts = attempts_.load(std::memory_order_relaxed);
  s.pushbacks = pushbacks_.load(std::memory_order_relaxed);
  s.dead_letter_failures = dead_letter_failures_.load(std::memory_order_relaxed);
  s.batches = batches_.load(std::memory_order_relaxed);
  s.batch_messages = batch_messages_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < s.batch_size_buckets.size(); ++i) {
    s.batch_size_buckets[i] = batch_size_buckets_[i].load(std::memory_order_relaxed);
  }
  std::lock_guard lock(mu_);
  s.backoff_seconds = backoff_seconds_;
  s.in_retry = in_retry_;
  s.oldest_retry_seconds =
      retry_starts_.empty() ? 0.0 : (unix_ms_now() - *retry_starts_.begin()) / 1000.0;
  return s;
}

double DeliveryPipeline::take_pushback_fraction() {
  const uint64_t attempts = window_attempts_.exchange(0);
  const uint64_t pushbacks = window_pushbacks_.exchange(0);
  return attempts == 0
             ? 0.0
             : std::min(1.0, static_cast<double>(pushbacks) / static_cast<double>(attempts));
}

nlohmann::json to_json(const DeliveryStats& s) {
  nlohmann::json j;
#define LAGPILOT_OUTCOME_JSON(name, help) j[#name] = s.name;
  LAGPILOT_DELIVERY_OUTCOMES(LAGPILOT_OUTCOME_JSON)
#undef LAGPILOT_OUTCOME_JSON
  j["attempts"] = s.attempts;
  j["pushbacks"] = s.pushbacks;
  j["dead_letter_failures"] = s.dead_letter_failures;
  j["backoff_seconds"] = s.backoff_seconds;
  j["in_retry"] = s.in_retry;
  j["oldest_retry_seconds"] = s.oldest_retry_seconds;
  if (s.batches > 0) {
    j["batches"] = s.batches;
    j["batch_messages"] = s.batch_messages;
  }
  return j;
}

namespace {

// A C++ handler's call as a Delivery: returning is done, PermanentFailure permanent, any other
// exception a retry.
template <typename Call>
Delivery delivery_of(Call&& call) {
  try {
    call();
    return Delivery::done();
  } catch (const PermanentFailure& e) {
    return Delivery::permanent(e.what());
  } catch (const std::exception& e) {
    return Delivery::retry(e.what());
  } catch (...) {
    return Delivery::retry("unknown exception");
  }
}

}  // namespace

DeliveryPipeline::Attempt callable_attempt(MessageHandler handler) {
  return [handler = std::move(handler)](const SourceMessage& m) {
    return delivery_of([&] { handler(m); });
  };
}

DeliveryPipeline::BatchAttempt callable_batch_attempt(BatchHandler handler) {
  return [handler = std::move(handler)](std::span<const SourceMessage> batch) {
    return delivery_of([&] { handler(batch); });
  };
}

DeliveryPipeline::BatchAttempt per_message_batch_attempt(DeliveryPipeline::Attempt attempt) {
  return [attempt = std::move(attempt)](std::span<const SourceMessage> batch) {
    for (const SourceMessage& m : batch) {
      Delivery d = attempt(m);
      if (d.result != DeliveryResult::kDone) return d;
    }
    return Delivery::done();
  };
}

}  // namespace lagpilot
