#pragma once
// Shedding under sustained backpressure (docs/pipeline.md): for real-time feature pipelines,
// where stale or low-priority data is worth less than keeping up.
//
// The "shedding" config (ShedConfig), the reasons and the pressure gate with hysteresis
// (ShedGate) live in policies/shed_gate.h, shared with the simulator. This file is the live
// runtime's part: the verdict on a Kafka record, the counters and the Shedder the workers share.
//
// Pressure (fed by the control thread once per tick, controller/service.cpp): the worker pool at
// its high watermark (the pool's or the source's unfinished bound), or lag above lag_slo.
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
#include "policies/shed_gate.h"

namespace lagpilot {

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
