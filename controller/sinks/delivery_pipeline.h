#pragma once
// DeliveryPipeline: one message's way through a sink, on the pool worker that holds it.
//
//   attempt ──done──────────────────────────────────────────────> finished (committable)
//      │ retry (transient, or pushback)
//      ├── attempts < max_attempts (or unlimited): wait the backoff (full jitter, or the sink's
//      │   Retry-After), attempt again
//      └── attempts exhausted ─> dead-letter produce, acknowledged ──> finished
//   permanent ─> on_permanent_failure: dead_letter (as above) | drop (counted, logged) ──> finished
//                                      | retry (as a transient failure)
//
// The message stays on its worker, and so in its key or partition lane, until it is finished:
// ordering holds across retries, and a retrying message counts as unfinished, so backpressure
// pauses fetching rather than letting retries pile up. A dead-letter produce that fails is
// retried with the same backoff; nothing is finished before the dead-letter topic has it.
//
// With shedding (set_shedding, controller/sinks/shedding.h), each message is first judged: one
// the Shedder sheds skips the sink; it is produced to shedding.to_topic (when set, acknowledged,
// retried with the same backoff as dead letters), counted, and finished.
//
// Batches (config "batch"; deliver_batch): a batch is attempted as one unit (BatchAttempt: one
// HTTP POST, one exec line, one call of a C++ BatchHandler) and goes the same way as one
// message: done, retried as a whole, or on a permanent failure or exhausted attempts every
// message of it dead-lettered (each produce acknowledged) or dropped. Shedding judges each of
// its messages first; the rest is the batch. Outcomes (ok, retry, dead_letter, dropped) count
// messages; attempts and pushbacks count attempts (one per batch). drop_incomplete() takes an
// incomplete batch that drop_last drops: each message to shedding.to_topic when set (with
// lagpilot-shed-reason incomplete_batch; acknowledged, retried like shed records), else nothing.
//
// stop() wakes every wait: a message not finished by then throws DeliveryAbandoned, which the
// Kafka source treats as not done (its offset is not committed; the next owner gets it again).
//
// Thread-safety: operator() on any number of pool workers at once; stop(), stats() and
// take_window() from any thread; set_shedding() before the first operator().

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <stdexcept>
#include <string>

#include "controller/kafka/kafka_source.h"
#include "controller/sinks/delivery.h"
#include "controller/sinks/failure_policy.h"
#include "controller/sinks/retry_backoff.h"
#include "controller/sinks/shedding.h"

namespace lagpilot {

// Thrown out of the pipeline when it was stopped before the message finished; the Kafka source
// leaves such a message unfinished (MessageAbandoned).
class DeliveryAbandoned : public MessageAbandoned {
 public:
  using MessageAbandoned::MessageAbandoned;
};

// Produces a record to the dead-letter topic and waits for the broker's acknowledgement.
// Returns "" when acknowledged, else why not. Called on pool workers, concurrently.
using DeadLetterSend =
    std::function<std::string(const SourceMessage& message, const std::string& error, int attempts,
                              int64_t first_failure_unix_ms)>;

// Produces a shed record to shedding.to_topic and waits for the acknowledgement. Returns "" when
// acknowledged, else why not. Called on pool workers, concurrently.
using ShedSend = std::function<std::string(const SourceMessage& message, const ShedVerdict& why)>;

// The outcomes, declared once: name (the metric's label and the status key) and meaning.
#define LAGPILOT_DELIVERY_OUTCOMES(X)                                  \
  X(ok, "delivered: the sink said done")                               \
  X(retry, "an attempt failed and the message was attempted again")    \
  X(dead_letter, "produced to the dead-letter topic and acknowledged") \
  X(dropped, "a permanent failure dropped on purpose")

// Buckets of the batch size histogram (lagpilot_batch_size_messages): upper bounds, messages.
inline constexpr std::array<double, 13> kBatchSizeBounds = {1,   2,   5,    10,   20,   50,   100,
                                                            200, 500, 1000, 2000, 5000, 10000};

struct DeliveryStats {
#define LAGPILOT_DECLARE_OUTCOME(name, help) uint64_t name = 0;
  LAGPILOT_DELIVERY_OUTCOMES(LAGPILOT_DECLARE_OUTCOME)
#undef LAGPILOT_DECLARE_OUTCOME
  uint64_t attempts = 0;
  uint64_t pushbacks = 0;             // attempts the sink pushed back (429/503, exec "retry")
  uint64_t dead_letter_failures = 0;  // dead-letter produces that were not acknowledged
  double backoff_seconds = 0;         // time spent waiting between attempts, in all
  int64_t in_retry = 0;               // messages between a failed attempt and their end, now
  double oldest_retry_seconds = 0;    // how long the oldest of them has been failing, now
  // Batches (deliver_batch): how many, cumulative counts per kBatchSizeBounds bucket (the last
  // one: above every bound) and their messages in all.
  uint64_t batches = 0;
  std::array<uint64_t, kBatchSizeBounds.size() + 1> batch_size_buckets{};
  uint64_t batch_messages = 0;
};

// {"ok", "retry", "dead_letter", "dropped", "attempts", "pushbacks", "dead_letter_failures",
// "backoff_seconds", "in_retry", "oldest_retry_seconds"}: the "deliveries" of /v1/status.
nlohmann::json to_json(const DeliveryStats& stats);

// Produces a message of an incomplete batch that drop_last drops to shedding.to_topic and waits
// for the acknowledgement. Returns "" when acknowledged, else why not.
using IncompleteBatchSend = std::function<std::string(const SourceMessage& message)>;

class DeliveryPipeline {
 public:
  using Attempt = std::function<Delivery(const SourceMessage&)>;
  using BatchAttempt = std::function<Delivery(std::span<const SourceMessage>)>;

  // `dead_letter` may be empty only when the config has no dead-letter topic. `seed` seeds the
  // backoff jitter (each worker thread draws from its own generator derived from it).
  DeliveryPipeline(Attempt attempt, FailureConfig config, DeadLetterSend dead_letter,
                   uint64_t seed);

  // Delivers `message` until it is finished (see the header comment). Throws DeliveryAbandoned
  // after stop().
  void operator()(const SourceMessage& message);

  // Sheds what `shedder` says to, before the sink runs. `send` may be empty only when the
  // config has no to_topic; `unix_ms_now` is the wall clock record ages are measured against
  // (empty: the system clock). `shedder` must outlive the pipeline.
  void set_shedding(Shedder* shedder, ShedSend send, std::function<int64_t()> unix_ms_now = {});

  // Batch delivery: `attempt` delivers a whole batch; `drop_send` (may be empty) takes the
  // messages drop_incomplete() is given. Before the first deliver_batch().
  void set_batching(BatchAttempt attempt, IncompleteBatchSend drop_send);
  // Delivers `batch` (one partition's messages in offset order) until it is finished as a
  // whole (see the header comment). Throws DeliveryAbandoned after stop().
  void deliver_batch(std::span<const SourceMessage> batch);
  // An incomplete batch that drop_last drops: to shedding.to_topic when set (acknowledged),
  // else nothing. Throws DeliveryAbandoned after stop().
  void drop_incomplete(std::span<const SourceMessage> batch);

  // Ends every wait; what is not finished is abandoned. Idempotent.
  void stop();

  DeliveryStats stats() const;
  // Pushed-back attempts / attempts since the last call (0 when none), for the control loop.
  double take_pushback_fraction();

 private:
  bool wait(double seconds);  // false when stopped meanwhile
  double next_backoff(int failed_attempts, double retry_after_seconds);
  void finish_dead_letter(const SourceMessage& m, const std::string& error, int attempts,
                          int64_t first_failure_ms);
  bool try_shed(const SourceMessage& m);  // true: shed and finished
  // The attempt loop of one message or one batch of n: attempt() until done, then the failure
  // rules; dead_letter(error, attempts, first_failure_ms) dead-letters all of it, describe()
  // names it in logs.
  template <typename AttemptFn, typename DeadLetterFn, typename DescribeFn>
  void deliver_unit(uint64_t n, AttemptFn attempt, DeadLetterFn dead_letter, DescribeFn describe);
  void count_batch(std::size_t size);
  void enter_retry(int64_t started_ms, int64_t messages);
  void leave_retry(int64_t started_ms, int64_t messages);

  Attempt attempt_;
  FailureConfig config_;
  std::string permanent_action_;
  DeadLetterSend send_dead_letter_;
  RetryBackoff backoff_;
  const uint64_t seed_;
  Shedder* shedder_ = nullptr;  // set before the workers run (set_shedding); nullptr: off
  ShedSend send_shed_;
  std::function<int64_t()> shed_clock_;
  std::atomic<uint64_t> next_stream_{0};  // atomic: each worker thread takes a jitter stream

  // Counters bumped on every attempt: atomic, so that a delivery that succeeds at once takes
  // no lock.
#define LAGPILOT_DECLARE_OUTCOME(name, help) std::atomic<uint64_t> name##_{0};
  LAGPILOT_DELIVERY_OUTCOMES(LAGPILOT_DECLARE_OUTCOME)
#undef LAGPILOT_DECLARE_OUTCOME
  std::atomic<uint64_t> attempts_{0}, pushbacks_{0}, dead_letter_failures_{0};
  std::atomic<uint64_t> window_attempts_{0}, window_pushbacks_{0};  // since take_pushback_fraction
  std::atomic<bool> stopped_{false};  // atomic: read before every attempt; set under mu_
  BatchAttempt batch_attempt_;        // set before the workers run (set_batching)
  IncompleteBatchSend drop_send_;
  // Batch sizes (atomic: counted by every worker, read by stats()).
  std::atomic<uint64_t> batches_{0}, batch_messages_{0};
  std::array<std::atomic<uint64_t>, kBatchSizeBounds.size() + 1> batch_size_buckets_{};

  mutable std::mutex
      mu_;  // guards backoff_seconds_, in_retry_, retry_starts_; stop_cv_ waits on it
  std::condition_variable stop_cv_;
  double backoff_seconds_ = 0;
  int64_t in_retry_ = 0;
  std::multiset<int64_t> retry_starts_;  // first-failure times (unix ms) of messages in retry
};

// A C++ MessageHandler as an attempt: returning is done, PermanentFailure is permanent, any
// other exception transient.
DeliveryPipeline::Attempt callable_attempt(MessageHandler handler);
// A C++ BatchHandler as a batch attempt, by the same rules.
DeliveryPipeline::BatchAttempt callable_batch_attempt(BatchHandler handler);
// A single-message attempt as a batch attempt: each message in turn; the first that is not
// done ends the attempt with its result (the batch is then attempted again from the start).
DeliveryPipeline::BatchAttempt per_message_batch_attempt(DeliveryPipeline::Attempt attempt);

}  // namespace lagpilot
