#pragma once
// Shedding under sustained backpressure (docs/pipeline.md): for real-time feature pipelines,
// where stale or low-priority data is worth less than keeping up.
//
//   "shedding": {
//     "after_pressure_seconds": 30,       pressure must have lasted this long before shedding
//     "release_after_seconds": 30,        shedding stops once pressure has been gone this long
//                                         (default: after_pressure_seconds)
//     "max_age_seconds": 0,               shed records older than this (now minus the Kafka
//                                         record timestamp); 0 = no age rule
//     "priority": {"header": "priority"}  where a record's priority comes from: an integer
//             or {"key_prefixes": {"gold:": 9, "free:": 1}},  header, or the longest matching
//                "default": 5}                                key prefix; "default" for records
//                                                             without one (absent: not shed)
//     "min_priority_under_pressure": 5,   shed records whose priority is below this
//     "to_topic": ""                      "" = none; else shed records are produced there (the
//   }                                     dead-letter headers plus lagpilot-shed-reason)
//
// Pressure (fed by the control thread once per tick): the worker pool at its high watermark
// (the pool's or the source's unfinished bound), or lag above lag_slo. ShedGate turns shedding
// on once pressure has lasted after_pressure_seconds, and off once it has been gone for
// release_after_seconds (hysteresis: a pressure blip neither starts nor stops it).
//
// While shedding is on, each worker asks shed_verdict() about its message before the sink runs:
// age first, then priority. A shed record is produced to to_topic (when set) and acknowledged,
// then counted; its offset completes like a processed one. Nothing is lost silently: every
// record is processed, dead-lettered, or shed and counted.
//
// Thread-safety: ShedConfig is a plain value; shed_verdict() is pure. ShedGate: update() and the
// other accessors on one (control) thread; active() on any. Shedder: decide(), count() and
// count_to_topic_failure() on any worker; take_window() and gate().update() on one (control)
// thread; stats(), config() and note_transition() on any.

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "controller/kafka/source_message.h"

namespace lagpilot {

// The reasons, declared once: name (the metric's label, the header's value, the status key) and
// meaning.
#define LAGPILOT_SHED_REASONS(X)                                                 \
  X(age, "older than shedding.max_age_seconds (now minus the record timestamp)") \
  X(priority, "priority below shedding.min_priority_under_pressure")

enum class ShedReason {
#define LAGPILOT_SHED_ENUM(name, help) name,
  LAGPILOT_SHED_REASONS(LAGPILOT_SHED_ENUM)
#undef LAGPILOT_SHED_ENUM
};
#define LAGPILOT_SHED_COUNT(name, help) +1
inline constexpr int kShedReasons = 0 LAGPILOT_SHED_REASONS(LAGPILOT_SHED_COUNT);
#undef LAGPILOT_SHED_COUNT

const char* shed_reason_name(ShedReason reason);  // "age" | "priority"

struct ShedConfig {
  bool enabled = false;  // a "shedding" object was given (opt-in)
  double after_pressure_seconds = 30;
  double release_after_seconds = -1;  // < 0 until read: from_json sets after_pressure_seconds
  double max_age_seconds = 0;         // 0: no age rule
  std::string priority_header;        // "" unless "priority": {"header": ...}
  std::vector<std::pair<std::string, int>> key_prefixes;  // "priority": {"key_prefixes": ...}
  std::optional<int> default_priority;                    // for records without a priority
  std::optional<int> min_priority_under_pressure;         // no priority rule when absent
  std::string to_topic;

  bool has_priority_rule() const { return min_priority_under_pressure.has_value(); }

  // Reads the "shedding" object; throws ConfigError naming the JSON path
  // ("shedding.priority.key_prefixes.gold:", ...). Sets enabled.
  static ShedConfig from_json(const nlohmann::json& j, const std::string& path = "shedding");
  nlohmann::json to_json() const;
};

// A record's priority under `config` (header or key prefix, else the default); nullopt when
// it has none.
std::optional<int> record_priority(const ShedConfig& config, const SourceMessage& message);

struct ShedVerdict {
  ShedReason reason;
  std::string detail;  // "age 12.5 s above max_age_seconds 5", for the shed record's header
};

// Whether to shed `message` at `now_unix_ms` under `config`, assuming shedding is on: age
// first (a record without a timestamp is never shed by age), then priority.
std::optional<ShedVerdict> shed_verdict(const ShedConfig& config, const SourceMessage& message,
                                        int64_t now_unix_ms);

// The pressure state machine with hysteresis (see the header comment). Time is the caller's
// (the control clock, seconds).
class ShedGate {
 public:
  enum class Transition { kNone, kStarted, kStopped };

  ShedGate(double after_pressure_seconds, double release_after_seconds);

  // Control thread, once per tick: `pressure` is whether backpressure holds at `now`. Returns
  // the transition this update made (each one once).
  Transition update(double now, bool pressure);

  // Any thread: shedding is on.
  bool active() const { return active_.load(std::memory_order_acquire); }

  // Control thread. Seconds pressure has lasted, or has been gone while active; -1 when not
  // applicable.
  double pressure_for(double now) const { return pressure_since_ < 0 ? -1 : now - pressure_since_; }
  double calm_for(double now) const { return calm_since_ < 0 ? -1 : now - calm_since_; }
  double changed_at() const { return changed_at_; }  // last transition's time; -1 before any

 private:
  const double after_pressure_seconds_;
  const double release_after_seconds_;
  double pressure_since_ = -1;  // start of the current pressure spell; -1 when none
  double calm_since_ = -1;      // start of the current calm spell while active; -1 when none
  double changed_at_ = -1;
  std::atomic<bool> active_{false};  // atomic: written by the control thread, read by workers
};

struct ShedStats {
  std::array<uint64_t, kShedReasons> shed{};  // by ShedReason
  uint64_t to_topic_failures = 0;             // shed-topic produces not acknowledged (retried)
  bool active = false;
  std::string last_transition;              // its decision-log text; "" before any
  double last_transition_unix_seconds = 0;  // when; 0 before any
  uint64_t total() const {
    uint64_t t = 0;
    for (uint64_t n : shed) t += n;
    return t;
  }
};

// {"active", "age", "priority", "to_topic_failures", "last_transition",
// "last_transition_unix_seconds"}: part of "shedding" in /v1/status.
nlohmann::json to_json(const ShedStats& stats);

// The config, the gate and the counters that DeliveryPipeline's workers share.
class Shedder {
 public:
  explicit Shedder(ShedConfig config);

  const ShedConfig& config() const { return config_; }
  ShedGate& gate() { return gate_; }
  const ShedGate& gate() const { return gate_; }

  // Worker: the verdict on `message` now, or nullopt (shedding off, or no rule applies).
  std::optional<ShedVerdict> decide(const SourceMessage& message, int64_t now_unix_ms) const;
  // Worker: a shed record is finished (produced to to_topic and acknowledged, when set).
  void count(ShedReason reason);
  void count_to_topic_failure();
  // The last start or stop, as the decision log says it, for the status (any thread).
  void note_transition(std::string text, double unix_seconds);

  ShedStats stats() const;
  // Control thread: records shed since the last call, by reason (the per-tick log line).
  std::array<uint64_t, kShedReasons> take_window();

 private:
  ShedConfig config_;
  ShedGate gate_;
  // Atomic: bumped by workers, read by the control thread and the status API.
  std::array<std::atomic<uint64_t>, kShedReasons> shed_{};
  std::array<std::atomic<uint64_t>, kShedReasons> window_{};
  std::atomic<uint64_t> to_topic_failures_{0};
  mutable std::mutex mu_;  // guards last_transition_, last_transition_unix_seconds_
  std::string last_transition_;
  double last_transition_unix_seconds_ = 0;
};

// "shedding: shed 12 record(s) this tick (age 10, priority 2)", or "" when none was shed.
std::string format_shed_window(const std::array<uint64_t, kShedReasons>& window);

}  // namespace lagpilot
