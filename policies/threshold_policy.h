#pragma once
// The `threshold` policy: a step table on total lag with a hysteresis band per step.
//
// Thread-safety: like every Policy, not thread-safe; the ControlLoop serialises calls.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policies/policy.h"

namespace lagpilot {

// One row of the table: go up to `workers` when lag rises above `above`; leave this step again
// (back to the level below) only when lag falls below `below`. below < above: the gap between
// them is the hysteresis band in which the current level holds.
struct ThresholdStep {
  double above = 0.0;
  double below = 0.0;
  int workers = 0;
};

struct ThresholdParams {
  // Workers when no step is active (lag has not risen above the first step, or fell back below
  // its `below`).
  int base_workers = 4;
  // Hysteresis for steps written without "below": below = above * (1 - hysteresis).
  // In (0, 1]; default 0.5.
  double hysteresis = 0.5;
  // Sorted by `above` (strictly increasing), `workers` strictly increasing and above
  // base_workers, `below` non-decreasing. Default: the rule of thumb, one step:
  // above 5000 -> 16 workers, back to 4 below 1000.
  std::vector<ThresholdStep> steps = {{5000.0, 1000.0, 16}};

  // Reads {"base_workers", "hysteresis", "steps": [{"above", "below"?, "workers"}, ...]}.
  // Throws ConfigError naming the offending field ("policy.params.steps[1].above: ...").
  static ThresholdParams from_json(const nlohmann::json& j, const std::string& path);
  // Every step with its resolved "below", so the result round-trips through from_json.
  nlohmann::json to_json() const;
};

// Algorithm: a Schmitt trigger per table row. The policy remembers its level L (0 = base,
// k = steps[k-1] active). Each tick, with lag = Observation::total_lag:
//   1. while L < steps.size() and lag > steps[L].above:   L += 1   (may climb several steps)
//   2. otherwise, while L > 0 and lag < steps[L-1].below:  L -= 1
//   3. propose the workers of level L, clamped to [obs.min_workers, obs.max_workers].
// Between a step's `below` and `above` the level holds, so noise around a threshold moves the
// pool at most once per excursion instead of flapping. The initial level is the highest level
// whose workers do not exceed obs.current_workers at the first tick.
//
// Defaults: base_workers 4, one step {above 5000, below 1000, workers 16}: lag below 1000 ->
// 4 workers, above 5000 -> 16, in between hold. Add rows for intermediate levels, e.g.
// steps [{above 2000, workers 8}, {above 5000, below 1000, workers 16}]; a row without "below"
// gets above * (1 - hysteresis). A lag-only step table is bang-bang control: under a constant
// load that needs a pool size between two levels it cycles between them (slowly: the band
// has to fill and drain). Give it a level near the usual load, or use `pid`.
class ThresholdPolicy : public Policy {
 public:
  explicit ThresholdPolicy(ThresholdParams params = {});

  std::string name() const override { return "threshold"; }
  bool reads_latency() const override { return false; }  // sizes from lag and rates
  Proposal decide(const Observation& obs) override;
  nlohmann::json params() const override { return params_.to_json(); }
  // {"level": L, "level_workers": workers of level L}; level -1 before the first tick.
  nlohmann::json state() const override;
  // Its level moves at most once for a given lag: after one decide() the lag is within the
  // level's band (below < above), so the same lag again holds it.
  TickSkipping tick_skipping() const override {
    return TickSkipping::kIdempotentOnUnchangedObservation;
  }

 private:
  int workers_of(int level) const;
  int initial_level(int current_workers) const;

  ThresholdParams params_;
  int level_ = -1;
};

}  // namespace lagpilot
