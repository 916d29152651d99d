#pragma once
// What the control loop sees and what it decides. Plain values: copy them freely between
// threads; neither type holds a reference to anything.

#include <cstdint>
#include <string>
#include <vector>

namespace lagpilot {

// Lag of one partition, in messages.
struct PartitionLag {
  std::string topic;
  int32_t partition = 0;
  int64_t lag = 0;
};

// One sample of the consumer, taken at the control tick. Rates are per second over the last
// tick window; latencies and ages are in seconds. Time is seconds since an epoch chosen by the
// Clock (simulated time in the simulator, steady time in the live runtime).
struct Observation {
  double time = 0.0;
  int64_t total_lag = 0;
  std::vector<PartitionLag> partition_lag;
  double arrival_rate = 0.0;    // messages/s that arrived (were produced) in the last window
  double processed_rate = 0.0;  // messages/s completed in the last window
  double lag_slope = 0.0;       // d(lag)/dt over the last window, messages/s
  double latency_p50 = 0.0;     // process latency of one message, seconds
  double latency_p99 = 0.0;
  double record_age_p99 = 0.0;  // completion time minus record timestamp, seconds
  int current_workers = 0;      // workers now in the pool (including warming up)
  double busy_workers = 0.0;    // mean number of busy workers over the window
  int64_t queue_depth = 0;      // messages fetched but not yet started
  int64_t queue_capacity = 0;
  int assigned_partitions = 0;
  // Fraction of the sink's deliveries in the window that it pushed back (HTTP 429/503, an exec
  // "retry"); -1 when no sink reports it (the sink_pushback guard then does nothing).
  double sink_pushback = -1.0;
  // The bounds in force (filled in by the ControlLoop from the guards), so a policy can size its
  // output range without holding a copy that would go stale when an operator changes them.
  int min_workers = 1;
  int max_workers = 1;
  // Whether a manual override pins the pool at this tick (filled in by the ControlLoop from the
  // guards): the pool is then the operator's size, not the policy's, and a policy that sizes
  // relative to the pool (hybrid) keeps planning for its own size instead.
  bool pinned = false;
  // Whether anyone will read the text of this tick's decision (Proposal::reason and the guard
  // notes in Decision::guards). When false, policies and guards may skip building that text
  // (it is the bulk of a tick's cost in long simulations: Proposal::reason is then empty and
  // so is Decision::guards); the numbers they decide must be identical either way. Set by whoever
  // builds the Observation (the simulator clears it once it stops recording decisions); the
  // ControlLoop leaves it alone. The live runtime keeps it true.
  bool explain = true;
};

// What the loop decided at one tick, and why. `policy_workers` is what the policy asked for;
// `workers` is what remains after the guards. Each entry of `guards` names the guard that
// changed the size and says how, in words ("bounds: 20 above max 16, clamped to 16").
struct Decision {
  double time = 0.0;
  int workers = 0;
  int policy_workers = 0;
  int previous_workers = 0;
  std::string policy;
  std::string reason;
  std::vector<std::string> guards;
  std::string source = "policy";  // "policy", or "override" when a manual pin set the size
  std::string late;               // why the tick started late; "" when it ran on schedule
};

// Joins the reason and the guard notes into one line for logs and status output.
std::string describe(const Decision& decision);

}  // namespace lagpilot
