#pragma once
// The `hybrid` policy (the default): feedforward from the measured scaling curve, feedback on
// lag, and a cost per scale-down so that the pool moves rarely and in useful steps; a spike
// expected (from the last ones) to end before the lag buffer fills is left to the buffer, and
// spikes that come at a fixed period find the pool ready.
//
// Thread-safety: like every Policy, not thread-safe; the ControlLoop serialises calls.

#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "policies/burst_calendar.h"
#include "policies/model_policy.h"
#include "policies/policy.h"
#include "policies/quotients.h"

namespace lagpilot {

struct HybridParams {
  // Time constants of the two arrival-rate estimates (exponential moving averages), seconds:
  // the slow one is the level a scale-up sizes for, the fast one detects bursts (a scale-up
  // then sizes for the largest of both and the raw rate) and sizes scale-downs (which wait for
  // scale_down_cost before they happen, so a dip must last). > 0.
  double rate_filter_seconds = 10.0;
  double slow_rate_filter_seconds = 30.0;
  // A scale-up sizes the pool so that the demand uses this fraction of its predicted
  // throughput, in (0, 1]: the headroom absorbs the rate's noise until the next scale-up.
  double target_utilization = 0.97;
  // A scale-down goes to the smallest pool the demand would use at most this fraction of, in
  // (0, target_utilization]: the band between the two is where the pool holds still.
  double scale_down_utilization = 0.95;
  // Lag up to this many messages is left to drain by itself (the pool is not sized for it);
  // above it, the excess is to be drained within catch_up_seconds. >= 0.
  double lag_allowance = 2000.0;
  double catch_up_seconds = 60.0;  // > 0
  // The price of a scale-down, in worker-seconds (>= 0): the pool shrinks once the workers it
  // could shed, summed over the time since the pool last changed, reach this. One surplus worker
  // waits this many seconds, four wait a quarter of it; a short dip pays only part of it.
  double scale_down_cost = 240.0;
  // Right after a scale-down (the pool's last change was down), a scale-up on the level needs
  // the level plus the backlog term above (1 + reversal_margin) x capacity, >= 0: the noise that
  // a scale-down sized at scale_down_utilization leaves near the capacity is no rise (a real one
  // shows as lag, in the backlog term, or as a burst).
  double reversal_margin = 0.1;
  // A scale-up on the level needs the level plus the backlog term above (1 + level_margin) x
  // capacity at all times (reversal_margin adds to it right after a scale-down), >= 0: a level a
  // little above capacity is left to the lag buffer until its lag, through the backlog term,
  // asks for workers. A wider margin also makes each step larger (it goes to target_utilization
  // of a higher level), so a rise takes fewer steps: 0.17 takes a slow rise from 4 to 16
  // workers in four steps where 0.1 took six, at about 0.3 % more worker-seconds.
  double level_margin = 0.17;
  // A burst (below) is answered at once only when the lag it would build within
  // burst_horizon_seconds, lag + (r_fast - capacity) x burst_horizon_seconds, reaches burst_lag
  // messages (>= 0; keep it below the lag SLO): a spike that the buffer absorbs moves no worker,
  // and one that lasts is answered by the level and backlog terms or, as its lag grows, here.
  double burst_lag = 6000.0;
  double burst_horizon_seconds = 30.0;  // >= 0
  // No scale-down while the lag is above this fraction of lag_allowance, in [0, 1]: a backlog
  // still draining is no surplus.
  double scale_down_lag_fraction = 0.5;
  // A scale-up is due when the level (slow average) plus the backlog term exceeds the pool's
  // capacity, or the fast average plus the backlog term exceeds it by this fraction, >= 0: a
  // short spike is left to the lag allowance, a jump is answered within seconds.
  double burst_margin = 0.2;
  // A burst is also seen in the raw rate r_raw, the lower of this tick's and the previous tick's
  // arrival rates: when r_raw exceeds (1 + raw_burst_margin) x capacity (>= 0), it stands in
  // for the fast average in the burst test, and the step is sized to drain the lag the burst
  // would build within raw_burst_horizon_seconds (>= 0). A jump to several times the capacity
  // is then answered on its second tick, not after the fast average has caught up three to five
  // ticks later, and in one step (each tick of delay is lag that a burst near the capacity of
  // max_workers carries to the SLO). The margin keeps the rate's noise out of it. The horizon
  // is about the time new workers take to start and catch on (the consumer's warm-up, a few
  // seconds, plus a few ticks): the lag the burst builds after that, the new pool drains; a
  // horizon as long as the burst test's makes a short spike a step to many more workers than
  // its lag needs, held until the surplus has paid for a scale-down.
  double raw_burst_margin = 0.6;
  double raw_burst_horizon_seconds = 10.0;
  // Chase step: a scale-up proposed within chase_window_seconds (>= 0; 0: off) of the previous
  // scale-up proposal, while the pool's last change was up, adds to its sizing rate how far that
  // rate rose since then: a load still rising after one step rises on while the next step's
  // workers start, and a step sized on where it is now would be one of several (4 -> 7 -> 13 ->
  // 16 on a steep cosine rise, each carrying lag toward the SLO), where sizing on where it is
  // heading takes one step fewer.
  double chase_window_seconds = 10.0;
  // Gap hold: a scale-up that reverses a scale-down within reversal_window_seconds (> 0), taking
  // back at least half of the workers it shed, says the load came back after a gap (from when the
  // shed surplus began to the scale-up). The next scale-down then also waits until its surplus has
  // lasted as long as that gap, at most gap_hold_seconds (>= 0; 0: off): a load whose bursts return
  // after gaps of that length is held through the next one instead of shed and bought back (two
  // reversals). The hold is also at most gap_hold_ratio (>= 0; 0: no such limit) times as long as
  // the pool was busy after that scale-up (until the surplus began): a burst of 30 s after a gap of
  // 120 s holds its workers through at most 90 s of the next gap, not the whole 120 s.
  double reversal_window_seconds = 300.0;
  double gap_hold_seconds = 180.0;
  double gap_hold_ratio = 3.0;
  // Spike absorption: a spike is a run of ticks whose arrival rate stays above (1 +
  // raw_burst_margin) x the capacity the pool had when it began (the raw burst's test); the
  // lengths of the last three spikes are remembered, and before the first one
  // spike_prior_seconds stands in for them (> 0; 0: spikes are answered until one was seen).
  // While a spike lasts, no scale-up happens as long as the lag, projected at the current pool
  // to the spike's expected end (the mean remembered length, but at least spike_min_seconds
  // ahead, about the time new workers take to start), stays under spike_lag messages (>= 0; 0:
  // off; keep it below the lag SLO). Absorption ends once the pool has outgrown the spike.
  double spike_lag = 9000.0;
  double spike_min_seconds = 5.0;
  double spike_prior_seconds = 20.0;
  // Saturation hold: after a spike during which the pool sat at its ceiling with the load above
  // its capacity, a scale-down whose surplus began within saturation_hold_seconds (>= 0; 0: off)
  // of the spike's end waits until that surplus has lasted as long (the gap hold, when longer,
  // still applies), unless the burst calendar has the next burst due later than that. Such a
  // load, back after a short gap into a shed pool, builds lag in the seconds before new workers
  // start that no pool drains while it lasts: the gap is worth holding through, and only there.
  double saturation_hold_seconds = 90.0;
  // Plateau step: once the pool has held a surplus over the size a scale-up would choose for
  // the level (r_slow at target_utilization, a size inside the band where the scale-down above
  // holds still) worth plateau_cost worker-seconds (>= 0; 0: off), it steps down to that size.
  // The higher price keeps it to loads that sit still for many minutes.
  double plateau_cost = 600.0;
  // Calm budget: a scale-down that has paid scale_down_cost is held while the pool's
  // worker-seconds stay under (1 + calm_budget) x the fluid need's (>= 0; 0: off), both summed
  // over the last calm_window_seconds (> 0; an exponential window). The fluid need of a tick is
  // the pool that exactly carries its arrival rate, X^-1(rate), within [min, max workers]: what
  // no schedule can spend less than without lag. Where the pool has run close to the need (a
  // quiet load at min_workers, a steady one), the slack pays for holding a burst's workers
  // until the next burst; where it has not (a noisy load, every surplus shed at once), nothing
  // is held.
  double calm_budget = 0.105;
  double calm_window_seconds = 21600.0;
  // Burst calendar: when the onsets of the last burst_calendar_intervals + 1 spikes (above) are
  // evenly spaced (their gaps within burst_calendar_tolerance x the period; at least 60 s), the
  // pool the last spike had is made ready burst_calendar_lead_seconds before the next is due,
  // and held until it begins or is late (burst_calendar.h). 0 intervals: off.
  int burst_calendar_intervals = 3;
  double burst_calendar_tolerance = 0.02;
  double burst_calendar_lead_seconds = 10.0;
  // The curve learner: the `model` policy's learning keys (min_busy_workers, saturated_fraction,
  // unsaturated_weight, forgetting, min_distinct_workers, explore_after_ticks, peak_fraction for
  // the cap, fit for a seed curve); its sizing keys are rejected here.
  ModelParams model;

  // Throws ConfigError naming the field ("policy.params.target_utilization: ...").
  static HybridParams from_json(const nlohmann::json& j, const std::string& path);
  nlohmann::json to_json() const;
};

// Algorithm.
//
// Curve: an embedded ModelPolicy learns the throughput X(n) of n workers from every tick (DS2's
// true rate per busy worker, a USL fit; see model_policy.h) and gives the cap floor(peak_fraction
// x N*) once it has a fit. Its own sizing is not used. Until it has any point, the pool is held.
//
// Rates: r_fast and r_slow are moving averages of the arrival rate (time constants
// rate_filter_seconds and slow_rate_filter_seconds); the first tick sets both. r_slow is the
// level; r_fast follows jumps and drops.
//
// Scale up (feedforward + feedback), at once:
//   backlog  B = max(0, lag - lag_allowance) / catch_up_seconds
//   level    D = r_slow + B > (1 + level_margin) X(current)          -> sized on D
//            (+ reversal_margin when the pool's last change was a scale-down)
//   burst    f + B > (1 + burst_margin) X(current)                   -> sized on max(r_slow,
//            and lag_ahead = lag + (f - X(current)) x                    r_fast, r_raw) + B
//                burst_horizon_seconds >= burst_lag                      (a raw burst: + B of
//            with f = r_fast, or r_raw when r_raw > (1 +                 raw_ahead instead
//                raw_burst_margin) X(current) (a raw burst)              of lag)
//            and r_raw > X(current)
//   raw_ahead = lag + (f - X(current)) x raw_burst_horizon_seconds
//   target = max(current + 1, ceil(n with X(n) = sized / target_utilization))
//   chase    within chase_window_seconds of the previous scale-up proposal, with the pool's
//            last change up: sized += max(0, rate - the rate that proposal was sized on), with
//            rate the burst's max(r_slow, r_fast, r_raw) or the level's r_slow
// r_raw, the lower of the last two ticks' rates, sees a jump on its second tick and ignores one
// tick's noise: a jump far above capacity is answered before the averages move (a raw burst),
// and in one step, sized for the lag it builds while the new workers start (not over the burst
// test's 30 s: a spike to three times the pool's capacity would buy several workers more than
// the spike needs, and hold them until a scale-down paid for itself); a burst's step is
// not sized on a single noisy tick (the surplus that leaves costs worker-seconds until a
// scale-down has paid for itself).
// The trigger is beyond the capacity, not inside the headroom: there the rate's noise would
// trigger a scale-up that a scale-down must then undo (a reversal); a real overload shows as a
// level above capacity, as a burst or as lag, and the step then goes to the headroom at once
// (sized on the raw rate after a jump, which the averages still lag behind). The margins
// and the burst's lag test use the lag buffer as the clairvoyant oracle does: a load that rides
// a little above the pool's capacity for a minute, or a short spike, builds a few thousand
// messages of lag, well under the SLO, and drains by itself when the noise turns; only a lag
// that keeps growing (the backlog term) or a burst that would fill the buffer buys workers.
//
// Spike absorption (the lag buffer carries a short spike, as the oracle's schedule does): a
// spike runs from a raw burst until two ticks fall back under (1 + raw_burst_margin) x the
// capacity the pool had when it began. While one lasts, both scale-up tests are suspended as
// long as
//   lag + (max(r_fast, r_raw) - X(current)) x max(E - elapsed, spike_min_seconds) < spike_lag
// with E the mean length of the last three spikes (spike_prior_seconds before the first one),
// and only while X(current) is below the rate that began the spike: once the pool has outgrown
// it, the spike was answered, and a rise on top of it is the level's and the bursts' to answer.
// A spike as short as the last ones is then left to the buffer; one that outlasts them is
// answered when the lag it would build in the next spike_min_seconds (about the workers'
// start-up) reaches spike_lag, still under the SLO; a load whose bursts last minutes learns
// that and is answered at once. And whatever the trigger, a pool that drains the lag now (both
// of the last two ticks below X(current)) is not grown while the lag is under burst_lag or
// drains within catch_up_seconds at that rate: after a spike the level and the backlog term
// still remember it, but it is over. For the same reason a burst needs r_raw above X(current):
// r_fast still holds a spike for several ticks after the load fell back under the capacity, and
// a second, smaller spike right after it (643 msg/s into 4 workers 10 s after 950 msg/s, with
// 4,500 messages of lag left) would be answered on its first tick as a burst of the two, where
// the lag buffer carries it.
//
// Scale down (cost per action):
//   target = ceil(n with X(n) = r_fast / scale_down_utilization)
//   while target < current and lag <= scale_down_lag_fraction x lag_allowance, the surplus
//   S += (current - target) x dt accumulates (a tick at target == current leaves S as it is; a
//   backlog above that lag, a scale-up or any resize resets it); when S >= scale_down_cost (and
//   the holds below have passed) the target is latched and proposed on every tick until the pool
//   reaches it (a target that followed the falling rate tick by tick would come out as many
//   small steps), unless the load returns first: r_fast above (1 + burst_margin) X(target)
//   drops the latched target and S. No target is latched while r_raw exceeds X(target): the load
//   is back, and r_fast, still catching up, would shed the pool it needs (after a held gap the
//   surplus was paid long before the load returned).
// hybrid holds its own scale-downs (Policy::stabilizes_scale_down), so the guards skip their
// scale-down window for it: that window held every scale-down 60 s more, whole surpluses of
// 11-12 workers after each burst, where the holds below keep only the gaps worth keeping.
// The rule is the optimal stopping rule for a falling load with a price per action: with the
// need falling at s workers/s, acting when the wasted worker-seconds reach C gives steps of
// sqrt(2 C s), which minimizes waste + C x actions per unit time.
// So noise within the band between scale_down_utilization and capacity never moves the pool,
// a small surplus waits long and a large one short, and one step sheds the whole surplus.
//
// Plateau step: the band [scale_down_utilization, target_utilization] holds the pool still, so
// a pool sized at 95 % may sit one worker above what a scale-up would choose (97 %, where the
// integer steps of a pool of 8-12 workers are 8-12 % each). A second surplus, toward
// ceil(n with X(n) = r_slow / target_utilization), accumulates like the first one but only
// inside the band (while the first one has no surplus: in a gap, a plateau surplus paid there
// would fire as the load returns), and at the higher price plateau_cost the pool steps down to
// it: only a load that sits still for many minutes gets there; a scale-up would size the level the
// same, and one needs the level to clear the new capacity by level_margin + reversal_margin, far
// beyond the rate's noise.
//
// Gap hold (a reversal backoff): when a scale-up reverses a scale-down within
// reversal_window_seconds and takes back at least half of the workers it shed (a smaller step is
// the first step of a new rise, as after a sawtooth's drop, not the old load back), the gap g
// (from when the shed surplus began to the scale-up) is remembered, and the next scale-down also
// needs its surplus to have lasted min(g, gap_hold_seconds, gap_hold_ratio x b), b the time from
// that scale-up to when the surplus began (how long the returned load kept the pool busy); that
// scale-down spends it. The ratio keeps a burst of seconds from holding a pool of 16 through two
// minutes of the next gap (bursty event traces), while loads that stay for minutes get the whole
// hold. A load that returns after gaps like the last one is held through the next gap, as HPA's 300
// s window holds it, instead of shed and bought back (a down-up pair: two reversals, two actions);
// a steady fall, which reverses nothing, sheds as before, and one that follows a reversal waits at
// most gap_hold_seconds longer. The price is the surplus over at most gap_hold_seconds per such
// gap, and only after a gap that was too short for its scale-down. Raising scale_down_cost after
// reversals instead (doubling it per reversal, decaying back) holds a small surplus much longer
// than a large one, which is backwards here: the noisy traces' one-worker down-up pairs became
// expensive waits (taxi, wc98 ramp above 1.15x the oracle's worker-seconds) while the bursts' 8-12
// worker surpluses still paid within seconds (docs/control-quality-rounds.md, fourth round).
//
// Calm budget (a cost budget spent on calm): the pool's worker-seconds P and the fluid need's N
// (the pool that carries each tick's rate exactly, clamped to the limits) are summed over an
// exponential window of calm_window_seconds; while P < (1 + calm_budget) x N, a scale-down whose
// surplus has paid for it is held. Holding spends the slack (P grows at the held pool's rate, N
// at the load's), so a hold ends by itself once the budget is spent, or when the load comes back
// and the surplus is gone. The slack builds where the pool runs near the need: at min_workers
// through a quiet hour (4 workers x 10.5 % over 6 hours: about 9,000 worker-seconds, a burst's
// 8-worker surplus held for 19 minutes), or on a steady load; a noisy load whose pool already
// runs 10 % above the need holds nothing more. The spikes of a bursty day, hours apart, then cost
// a scale-up and a scale-down each instead of two of each, and a fall is taken in fewer steps.
// The window keeps a quiet week from paying for holds a day later.
//
// Saturation hold: a spike during which the pool sat at its ceiling with r_raw above its
// capacity marks its end; a surplus that begins within saturation_hold_seconds of that end waits
// until it has lasted saturation_hold_seconds (when longer than the gap hold) before it is shed,
// unless the burst calendar has the next burst due later than that. Such a load, back after a
// short gap into a shed pool, builds lag in the seconds before new workers start (1,200 msg/s
// into 4 workers: about 6,000 messages) that no pool drains while the load stays above the
// largest pool's capacity: every second of it is above the SLO until the load falls (onoff's
// 70 s gap at t = 10,113 s cost 840 s above the SLO when shed). Below the ceiling the same
// return is drained by the pool bought back, and a gradual rise to the ceiling (a sawtooth's)
// is no spike, so neither is held.
//
// Burst calendar (a learned cron schedule): every spike's onset goes to a BurstCalendar
// (burst_calendar.h). Once the last burst_calendar_intervals gaps between onsets agree within
// burst_calendar_tolerance x their mean, the pool the last spike reached is proposed from
// burst_calendar_lead_seconds before the next onset is due until it begins (no scale-down in
// between); a burst late beyond its window clears the calendar, so a stopped job buys one window
// and no more. Reacting costs a burst above the pool's capacity a detection tick and the
// workers' start-up: at 1,300 msg/s into 5 workers, about 6,000 messages of lag that a burst
// above the capacity of max_workers then carries across the SLO. While the pool is ready and
// the burst has not begun, spikes are measured against the pool it had before, so the burst's
// onset still registers.
//
// Every target is clamped to [obs.min_workers, min(obs.max_workers, cap)]. The cap stops growth;
// a pool already above it (under an earlier fit: a fit from the first seconds of a rise can put
// the cap below the pool it just grew) is shed to it at once only where X(cap) >= X(current),
// well past the peak, and otherwise left to the scale-down rule, which prices that surplus.
//
// Overrides: while Observation::pinned (an operator pins the pool) and at the first tick after
// the pin, "current" above is the policy's own last proposal, not the pinned pool: it keeps
// planning for its own size (the rates and the curve still learn from the real pool), pays no
// scale-down price for a size it did not choose, and the pool returns to its size when the pin
// ends.
//
// Why it stays calm: the pool changes only when the load leaves the band [scale_down_utilization
// x X(n), X(n)] and, downward, only after the surplus has paid for the action. Under a constant
// load with Poisson noise (relative noise of the 10 s average about 1.5 % at 500 msg/s) the band
// is several standard deviations wide on either side of the equilibrium pool.
class HybridPolicy : public Policy {
 public:
  explicit HybridPolicy(HybridParams params = {});

  std::string name() const override { return "hybrid"; }
  bool reads_latency() const override { return false; }  // sizes from lag and rates
  // It prices and holds its own scale-downs (the surplus, the gap and saturation holds), so the
  // guards' scale-down window, which would hold every one of them 60 s more, is skipped.
  bool stabilizes_scale_down() const override { return true; }
  Proposal decide(const Observation& obs) override;
  nlohmann::json params() const override;
  // rate_fast, rate_slow, demand, capacity (X(current)), up_target, down_target, surplus
  // (worker-seconds), pending_down, gap_hold (seconds), spike (one under way), absorbed (left to
  // the lag buffer), plateau_surplus (worker-seconds), calm_slack (worker-seconds the calm budget
  // may still spend on a hold; negative: spent), burst_due (the calendar's next onset, s;
  // null: no period known), cap (null: none), workers, and the curve
  // ("fit": UslModel keys).
  nlohmann::json state() const override;

 private:
  double capacity(double workers) const;
  double workers_for(double throughput) const;
  // Worker-seconds the calm budget may still spend: (1 + calm_budget) x need - pool, over the
  // window.
  double calm_slack() const;
  // A scale-up (or a pre-scale for a due burst) makes any surplus and latched step down moot.
  void forget_scale_down();

  HybridParams params_;
  ModelPolicy learner_;
  bool started_ = false;
  double last_time_ = 0.0;
  double rate_fast_ = 0.0;
  double rate_slow_ = 0.0;
  LastQuotient fast_gain_;  // the two rate filters' gains, divided once per tick length
  LastQuotient slow_gain_;
  LastDecay calm_decay_;  // the calm budget's window, exp(-dt / calm_window_seconds)
  double surplus_ = 0.0;  // worker-seconds, see the class comment
  int pending_down_ = 0;  // a paid-for scale-down target, latched; 0: none
  int last_pool_ = -1;
  bool last_change_up_ = true;     // the direction of the pool's last change
  int shed_from_ = 0;              // the pool before the last scale-down
  double last_change_time_ = 0.0;  // when the pool last changed (valid once it has)
  bool changed_ = false;           // the pool has changed at least once
  double hold_ = 0.0;              // seconds the next scale-down's surplus must last
  double surplus_since_ = 0.0;     // when the current surplus began
  double shed_since_ = 0.0;        // when the surplus of the last scale-down began
  bool in_surplus_ = false;        // surplus_since_ is set
  double prev_arrival_ = 0.0;      // the previous tick's arrival rate
  // Spikes (see the class comment): the one under way, and the last three spikes' lengths.
  static constexpr int kSpikeMemory = 3;
  bool spike_ = false;
  double spike_start_ = 0.0;
  double spike_rate_ = 0.0;                  // the arrival rate above which it lasts
  double spike_lengths_[kSpikeMemory] = {};  // seconds, a ring
  int spikes_ = 0;                           // spikes seen
  bool absorbed_ = false;                    // this tick's scale-up left to the buffer
  double plateau_surplus_ = 0.0;             // worker-seconds toward the plateau step
  bool plateau_step_ = false;                // the latched scale-down is the plateau step
  int spike_pool_ = 0;                       // the largest pool of the spike under way
  bool spike_saturated_ = false;  // the spike under way found the pool at its ceiling, overloaded
  double saturated_end_ = -std::numeric_limits<double>::infinity();  // when such a spike ended
  BurstCalendar calendar_;  // the onsets of the spikes, for periodic ones
  int ready_from_ = 0;      // the pool before it was made ready for a due burst (0: not made ready)
  int own_ = 0;             // the last size the policy proposed (0: none yet)
  // The last scale-up proposal's time and sizing rate (msg/s), for the chase step; -inf: none.
  double up_time_ = -std::numeric_limits<double>::infinity();
  double up_rate_ = 0.0;
  bool was_pinned_ = false;  // Observation::pinned at the previous tick
  // Last decision, for state().
  double demand_ = 0.0;
  double capacity_ = 0.0;
  int up_target_ = 0;
  int down_target_ = 0;
  double cap_ = 0.0;
  int workers_ = 0;
  // The calm budget's sums over its window, worker-seconds: the fluid need's and the pool's.
  double need_seconds_ = 0.0;
  double pool_seconds_ = 0.0;
};

}  // namespace lagpilot
