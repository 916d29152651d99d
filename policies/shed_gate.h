#pragma once
// Shedding under sustained backpressure, the part that the live runtime
// (controller/sinks/shedding.h) and the simulator (sim/consumer_model.h) share: the "shedding"
// config object, the shed reasons, and the pressure state machine with hysteresis.
//
//   "shedding": {
//     "after_pressure_seconds": 30,       pressure must have lasted this long before shedding
//     "release_after_seconds": 30,        shedding stops once pressure has been gone this long
//                                         (default: after_pressure_seconds)
//     "max_age_seconds": 0,               shed records older than this (now minus the record's
//                                         timestamp; in the simulator, its arrival); 0 = no age
//                                         rule
//     "priority": {"header": "priority"}  where a record's priority comes from: an integer
//             or {"key_prefixes": {"gold:": 9, "free:": 1}},  header, or the longest matching
//                "default": 5}                                key prefix; "default" for records
//                                                             without one (absent: not shed)
//     "min_priority_under_pressure": 5,   shed records whose priority is below this
//     "to_topic": ""                      "" = none; else shed records are produced there (the
//   }                                     dead-letter headers plus lagpilot-shed-reason)
//
// ShedGate's algorithm: the caller feeds it, once per control tick, whether backpressure holds.
// It turns shedding on once pressure has held at every update for after_pressure_seconds
// (measured from the first update of the spell), and off once it has been gone at every update
// for release_after_seconds (a pressure blip neither starts nor stops it). Each transition is
// reported once. Time is the caller's (seconds; the control clock live, simulated time in the
// simulator): the gate reads no clock.
//
// The priority rule needs each record's headers or key; the simulator's records have neither,
// so it sheds by age only (see sim/consumer_model.h).
//
// Thread-safety: ShedConfig is a plain value. ShedGate: update() and the other accessors on one
// (control) thread; active() on any.

#include <atomic>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lagpilot {

// The reasons, declared once: name (the metric's label, the header's value, the status key, the
// simulator's KPI) and meaning.
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

// The pressure state machine with hysteresis (see the header comment).
class ShedGate {
 public:
  enum class Transition { kNone, kStarted, kStopped };

  // A negative release_after_seconds means after_pressure_seconds.
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

}  // namespace lagpilot
