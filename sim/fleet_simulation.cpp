#include "sim/fleet_simulation.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <stdexcept>

#include "policies/control_loop.h"
#include "policies/event_queue.h"
#include "policies/infinity.h"
#include "sim/consumer_model.h"
#include "sim/fleet_instance.h"
#include "sim/lag_quantile.h"
#include "sim/random.h"
#include "sim/replica_policy.h"
#include "sim/tick_loop.h"

namespace lagpilot::sim {
namespace {

using fleet_detail::Instance;
using fleet_detail::Tagged;

// Streams under the user's seed, beside simulate()'s 1..3 (pod 0's model uses simulate()'s).
constexpr uint64_t kPartitionStream = 11;
constexpr uint64_t kPodServiceStreamBase = 1000;

enum class PodState : uint8_t { kStarting, kMember, kDraining, kGone };

struct Pod {
  PodState state = PodState::kStarting;
  std::unique_ptr<Instance> instance;
  InstanceSummary summary;
};

struct FleetEvent {
  enum Kind : uint8_t { kPodReady, kPauseEnd } kind;
  int pod;
};

// Weighted partition draw: cumulative weights, binary search.
class PartitionPicker {
 public:
  PartitionPicker(int partitions, double skew, uint64_t seed)
      : rng_(Rng::stream(seed, kPartitionStream)) {
    double sum = 0;
    for (int p = 0; p < partitions; ++p) {
      sum += 1.0 / std::pow(static_cast<double>(p + 1), skew);
      cumulative_.push_back(sum);
    }
    for (double& c : cumulative_) c /= sum;
  }
  int pick() {
    if (cumulative_.size() == 1) return 0;
    const double u = rng_.uniform();
    const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
    return static_cast<int>(
        std::min<std::ptrdiff_t>(it - cumulative_.begin(), std::ssize(cumulative_) - 1));
  }

 private:
  Rng rng_;
  std::vector<double> cumulative_;
};

// Algorithm (the model is in the header): one tick window at a time, as simulate() does,
//   1. the window's events in time order: each pod's own model events (lowest pod first at
//      equal times), then the fleet's (a pod joins, a pause ends), then the arrivals, each
//      routed to its partition's owner;
//   2. at the tick: every member's ControlLoop ticks, the group's KPIs take the sample;
//   3. the replica ControlLoop (this object is its Sampler and Actuator) ticks on the group's
//      signal and creates or removes pods; leaves and joins rebalance (assign(), a pause).
class FleetRun final : public Sampler, public Actuator {
 public:
  FleetRun(const Trace& trace, const PolicySpec& spec, const GuardConfig& guards,
           const SimConfig& config, const FleetConfig& fleet)
      : trace_(trace),
        spec_(spec),
        guards_(guards),
        config_(config),
        fleet_(fleet),
        partitions_(fleet.resolved_partitions(config)),
        max_replicas_(fleet.max_replicas > 0 ? fleet.max_replicas
                                             : std::max(partitions_, fleet.replicas)),
        arrivals_(make_tick_arrivals(trace, config)),
        batch_(config.resolve_fidelity(trace) == "batch"),
        picker_(partitions_, fleet.skew, config.seed),
        owner_(static_cast<std::size_t>(partitions_), -1) {
    fleet.validate(partitions_);
    make_policy(spec.name, spec.params);  // checks the pool policy's parameters up front
    GuardConfig replica_guards;
    replica_guards.hard_min_workers = 1;
    replica_guards.hard_max_workers = max_replicas_;
    replica_guards.min_workers = fleet.min_replicas;
    replica_guards.max_workers = max_replicas_;
    replica_guards.scale_down_window_seconds = 0;
    replica_guards.sink_pushback_guard = false;
    replica_loop_ = std::make_unique<ControlLoop>(
        *this, *this,
        make_replica_policy(fleet.replica_policy, fleet.replica_params, fleet.replicas,
                            "fleet.replica_params"),
        replica_guards, 0);
  }

  FleetResult run();

  // The replica loop's Sampler and Actuator.
  Observation sample(double now) override {
    replica_obs_.time = now;
    return replica_obs_;
  }
  void resize(int replicas) override { set_replicas(now_, replicas); }

 private:
  int add_pod();
  void join(int pod, double now);
  void membership_changed(double now);
  void assign();
  void set_replicas(double now, int replicas);
  void unpause(double now);
  void run_fleet_event();

  const Trace& trace_;
  const PolicySpec& spec_;
  const GuardConfig& guards_;
  const SimConfig& config_;
  const FleetConfig& fleet_;
  const int partitions_;
  const int max_replicas_;
  std::unique_ptr<TickArrivals> arrivals_;
  const bool batch_;
  PartitionPicker picker_;
  std::vector<int> owner_;  // partition -> pod (-1 before the first assignment)
  std::vector<Pod> pods_;
  EventQueue<FleetEvent> events_;
  std::unique_ptr<ControlLoop> replica_loop_;
  Observation replica_obs_;
  double now_ = 0.0;
  uint64_t next_seq_ = 0;

  bool paused_ = false;
  bool paused_in_tick_ = false;
  double pause_start_ = 0.0;
  double paused_until_ = 0.0;
  double last_change_ = -kInf;
  FleetKpis kpis_;
};

int FleetRun::add_pod() {
  Pod pod;
  pod.summary.pod = static_cast<int>(pods_.size());
  pods_.push_back(std::move(pod));
  return static_cast<int>(pods_.size()) - 1;
}

void FleetRun::join(int id, double now) {
  Pod& pod = pods_[static_cast<std::size_t>(id)];
  // Pod 0 uses simulate()'s service stream: a fleet of one is simulate() exactly.
  const uint64_t seed =
      id == 0
          ? model_service_seed(config_)
          : Rng::stream(config_.seed, kPodServiceStreamBase + static_cast<uint64_t>(id)).next_u64();
  pod.instance = std::make_unique<Instance>(config_.model, config_.initial_workers, seed, batch_,
                                            now, fleet_.catch_up_seconds);
  pod.instance->start_loop(make_policy(spec_.name, spec_.params), guards_);
  pod.state = PodState::kMember;
  pod.summary.joined = now;
}

void FleetRun::assign() {
  std::vector<int> members;
  for (std::size_t i = 0; i < pods_.size(); ++i) {
    if (pods_[i].state == PodState::kMember) members.push_back(static_cast<int>(i));
  }
  if (members.empty()) throw std::logic_error("simulate_fleet: no member left in the group");
  const int n = static_cast<int>(members.size());
  std::vector<int> owner(static_cast<std::size_t>(partitions_));
  for (int p = 0; p < partitions_; ++p) {
    int k;
    if (fleet_.assignment == "roundrobin") {
      k = p % n;
    } else {  // range: the first P % n members get one partition more
      const int per = partitions_ / n, extra = partitions_ % n;
      k = p < extra * (per + 1) ? p / (per + 1) : extra + (p - extra * (per + 1)) / per;
    }
    owner[static_cast<std::size_t>(p)] = members[static_cast<std::size_t>(k)];
  }
  // Buffered messages of moved partitions go to their new owners, in arrival order.
  std::vector<std::vector<Tagged>> moved(pods_.size());
  for (std::size_t i = 0; i < pods_.size(); ++i) {
    Instance* inst = pods_[i].instance.get();
    if (!inst || pods_[i].state == PodState::kGone) continue;
    std::vector<char> keep(static_cast<std::size_t>(partitions_), 0);
    std::vector<int> mine;
    for (int p = 0; p < partitions_; ++p) {
      if (owner[static_cast<std::size_t>(p)] == static_cast<int>(i)) {
        keep[static_cast<std::size_t>(p)] = 1;
        mine.push_back(p);
      }
    }
    for (const Tagged& t : inst->revoke(keep)) {
      moved[static_cast<std::size_t>(owner[static_cast<std::size_t>(t.partition)])].push_back(t);
    }
    inst->set_partitions(std::move(mine));
  }
  for (std::size_t i = 0; i < pods_.size(); ++i) {
    if (!moved[i].empty()) pods_[i].instance->take_over(moved[i]);
  }
  owner_ = std::move(owner);
}

void FleetRun::membership_changed(double now) {
  if (now != last_change_) ++kpis_.rebalances;
  last_change_ = now;
  assign();
  if (fleet_.rebalance_seconds <= 0) {
    for (Pod& p : pods_) {
      if (p.state == PodState::kMember) p.instance->feed(now);
    }
    return;
  }
  if (!paused_) {
    paused_ = true;
    pause_start_ = now;
  }
  paused_in_tick_ = true;
  paused_until_ = now + fleet_.rebalance_seconds;
  events_.schedule(paused_until_, FleetEvent{FleetEvent::kPauseEnd, -1});
  for (Pod& p : pods_) {
    if (p.state == PodState::kMember) p.instance->set_paused(true);
  }
}

void FleetRun::unpause(double now) {
  paused_ = false;
  kpis_.rebalance_seconds += now - pause_start_;
  for (Pod& p : pods_) {
    if (p.state == PodState::kMember) {
      p.instance->set_paused(false);
      p.instance->feed(now);
    }
  }
}

void FleetRun::run_fleet_event() {
  const auto e = events_.pop();
  if (e.payload.kind == FleetEvent::kPauseEnd) {
    if (paused_ && e.time == paused_until_) unpause(e.time);
    return;
  }
  Pod& pod = pods_[static_cast<std::size_t>(e.payload.pod)];
  if (pod.state != PodState::kStarting) return;  // removed while starting
  join(e.payload.pod, e.time);
  membership_changed(e.time);
}

void FleetRun::set_replicas(double now, int replicas) {
  int alive = 0;
  for (const Pod& p : pods_) {
    alive += p.state == PodState::kStarting || p.state == PodState::kMember;
  }
  if (replicas != alive) ++kpis_.replica_actions;
  for (; alive < replicas; ++alive) {
    const int id = add_pod();
    ++kpis_.pods_started;
    events_.schedule(now + fleet_.pod_start_seconds, FleetEvent{FleetEvent::kPodReady, id});
  }
  bool left = false;
  // Pods not started yet go first (newest first), then the newest members.
  for (int pass = 0; pass < 2 && alive > replicas; ++pass) {
    const PodState state = pass == 0 ? PodState::kStarting : PodState::kMember;
    for (int i = static_cast<int>(pods_.size()) - 1; i >= 0 && alive > replicas; --i) {
      Pod& p = pods_[static_cast<std::size_t>(i)];
      if (p.state != state) continue;
      p.summary.left = now;
      --alive;
      if (state == PodState::kStarting) {
        p.state = PodState::kGone;
        continue;
      }
      p.state = PodState::kDraining;
      p.instance->stop_loop();
      p.instance->set_paused(true);  // takes nothing new; finishes what it holds
      p.instance->model().resize(now, 0);
      left = true;
    }
  }
  if (left) membership_changed(now);
}

FleetResult FleetRun::run() {
  FleetResult result;
  const TickGrid grid(trace_.duration(), config_.tick_seconds, config_.series_interval_seconds);
  const double tick = grid.tick;
  const int64_t ticks = grid.ticks;
  // The group formed before t = 0: its first assignment is no rebalance.
  for (int i = 0; i < fleet_.replicas; ++i) join(add_pod(), 0.0);
  assign();

  Kpis& k = result.kpis;
  k.max_workers = fleet_.replicas * config_.initial_workers;
  kpis_.max_replicas = fleet_.replicas;
  LagQuantile p99_lag(0.99, ticks);
  int64_t series_arrived = 0, series_processed = 0, tick_arrived = 0;
  double series_time = 0.0;
  StretchedService stretched(config_.model);
  std::vector<double> next_event;  // see below; kept across ticks (no allocation per tick)

  for (int64_t i = 1; i <= ticks; ++i) {
    const double t0 = grid.start(i);
    const double t1 = grid.end(i);
    int pool = 0;
    for (const Pod& p : pods_) {
      if (p.state == PodState::kMember) pool += p.instance->model().pool_size();
    }
    arrivals_->begin_window(t0, t1, stretched.seconds_per_message(pool), pool);
    paused_in_tick_ = paused_;
    // The window's events in time order: the models' own (lowest pod first at equal times),
    // then the fleet's (joins, ends of pauses), then arrivals, as in simulate().
    // Each pod's next own event, refreshed for the pod an event or an arrival touched and for
    // every pod after a fleet event (a flat vector: the scan below is the hot loop).
    next_event.assign(pods_.size(), kInf);
    auto refresh = [&](std::size_t p) {
      const Pod& pod = pods_[p];
      next_event[p] = pod.instance && pod.state != PodState::kGone
                          ? pod.instance->model().next_event_time()
                          : kInf;
    };
    for (std::size_t p = 0; p < pods_.size(); ++p) refresh(p);
    for (;;) {
      std::size_t next = 0;
      double te = kInf;
      for (std::size_t p = 0; p < next_event.size(); ++p) {
        if (next_event[p] < te) {
          te = next_event[p];
          next = p;
        }
      }
      const double tf = events_.empty() ? kInf : events_.top().time;
      const double ta = arrivals_->next_time();
      const double tm = std::min(te, tf);
      if (tm <= ta) {
        if (tm >= t1) break;
        if (te <= tf) {
          Instance& in = *pods_[next].instance;
          in.model().run_next_event();
          in.feed(te);
          refresh(next);
        } else {
          run_fleet_event();
          next_event.resize(pods_.size());
          for (std::size_t p = 0; p < pods_.size(); ++p) refresh(p);
        }
      } else {
        if (ta >= t1) break;
        const ArrivalChunk c = arrivals_->pop();
        const int partition = picker_.pick();
        const auto owner = static_cast<std::size_t>(owner_[static_cast<std::size_t>(partition)]);
        pods_[owner].instance->receive(ta, Tagged{c, partition, next_seq_++});
        refresh(owner);
      }
    }

    // Every member's own control tick, then the group's numbers.
    int64_t lag = 0;
    int before_total = 0, after_total = 0, alive = 0, members = 0;
    for (Pod& p : pods_) {
      if (p.state == PodState::kGone) continue;
      ++alive;
      if (p.state == PodState::kStarting) continue;
      Instance& in = *p.instance;
      if (p.state == PodState::kMember) {
        ++members;
        in.set_explain(false);  // a fleet run keeps no decisions: nobody reads their text
        in.loop()->tick(t1);
        const int before = in.last_sample().pool_size;
        const int after = in.model().pool_size();
        in.worker_seconds += static_cast<double>(before) * tick;
        before_total += before;
        after_total += after;
        if (after != before) {
          ++in.scale_actions;
          const int direction = after > before ? 1 : -1;
          if (in.last_direction != 0 && direction != in.last_direction) ++in.reversals;
          in.last_direction = direction;
        }
        lag += in.last_lag();
      } else {  // draining: finishing the messages in hand
        lag += in.sample_lag(t1);
        if (in.empty()) p.state = PodState::kGone;
      }
    }
    k.lag_integral += static_cast<double>(lag) * tick;
    k.max_lag = std::max(k.max_lag, lag);
    if (lag > config_.lag_slo) k.seconds_above_slo += tick;
    p99_lag.add(lag);
    k.worker_seconds += static_cast<double>(before_total) * tick;
    k.max_workers = std::max(k.max_workers, after_total);
    kpis_.replica_seconds += static_cast<double>(alive) * tick;

    // The replica policy on the group's signal.
    const int64_t generated = arrivals_->generated();
    const double arrival_rate = static_cast<double>(generated - tick_arrived) / tick;
    tick_arrived = generated;
    int64_t signal = lag;
    if (fleet_.replica_policy == "keda-recommended") {
      signal = 1;  // max over the instances (the ScaledObject's query)
      const CapacityEstimator::GroupDemand group{arrival_rate, lag, partitions_};
      for (Pod& p : pods_) {
        if (p.state != PodState::kMember) continue;
        signal = std::max<int64_t>(
            signal, p.instance->recommended()
                        .update(p.instance->last_observation(), guards_.max_workers, &group)
                        .recommended_replicas);
      }
    }
    replica_obs_ = Observation{};
    replica_obs_.total_lag = signal;
    replica_obs_.arrival_rate = arrival_rate;
    replica_obs_.assigned_partitions = partitions_;
    replica_obs_.current_workers = 0;
    for (const Pod& p : pods_) {
      replica_obs_.current_workers +=
          p.state == PodState::kStarting || p.state == PodState::kMember;
    }
    replica_obs_.explain = false;
    now_ = t1;
    replica_loop_->tick(t1);
    int alive_after = 0;
    for (const Pod& p : pods_) alive_after += p.state != PodState::kGone;
    kpis_.max_replicas = std::max(kpis_.max_replicas, alive_after);

    if (config_.record_series && grid.series_point(i)) {
      int64_t processed = 0;
      for (const Pod& p : pods_) {
        if (p.instance) processed += p.instance->last_sample().processed;
      }
      const double span = t1 - series_time;
      FleetSeriesPoint s;
      s.t = t1;
      s.arrival_rate = static_cast<double>(generated - series_arrived) / span;
      s.processed_rate = static_cast<double>(processed - series_processed) / span;
      s.lag = lag;
      s.workers = before_total;
      s.replicas = alive;
      s.members = members;
      s.rebalancing = paused_in_tick_;
      result.series.push_back(s);
      series_arrived = generated;
      series_processed = processed;
      series_time = t1;
    }
  }

  const double end = static_cast<double>(ticks) * tick;
  if (paused_) kpis_.rebalance_seconds += std::max(0.0, end - pause_start_);

  // Conservation per instance and in total.
  int64_t received = 0, handed_over = 0, completed = 0;
  double wait = 0.0, service = 0.0;
  for (Pod& p : pods_) {
    InstanceSummary& s = p.summary;
    if (p.instance) {
      Instance& in = *p.instance;
      s.received = in.received();
      s.handed_over = in.handed_over();
      s.processed = in.last_sample().processed;
      s.final_lag = in.final_lag();
      s.worker_seconds = in.worker_seconds;
      s.scale_actions = in.scale_actions;
      if (s.received != s.processed + s.final_lag + s.handed_over) {
        throw std::logic_error("simulate_fleet: conservation violated in pod " +
                               std::to_string(s.pod) + ": received " + std::to_string(s.received) +
                               " != processed " + std::to_string(s.processed) + " + final lag " +
                               std::to_string(s.final_lag) + " + handed over " +
                               std::to_string(s.handed_over));
      }
      k.scale_actions += in.scale_actions;
      k.reversals += in.reversals;
      k.processed += s.processed;
      k.final_lag += s.final_lag;
      received += s.received;
      handed_over += s.handed_over;
      completed += in.model().completed();
      wait += in.model().total_wait_seconds();
      service += in.model().total_service_seconds();
    }
    result.instances.push_back(s);
  }
  k.arrived = arrivals_->generated();
  if (k.arrived != k.processed + k.final_lag || received - handed_over != k.arrived) {
    throw std::logic_error("simulate_fleet: conservation violated: arrived " +
                           std::to_string(k.arrived) + " != processed " +
                           std::to_string(k.processed) + " + final lag " +
                           std::to_string(k.final_lag) + " (received " + std::to_string(received) +
                           ", handed over " + std::to_string(handed_over) + ")");
  }
  k.p99_lag = p99_lag.value();
  k.ticks = ticks;
  k.duration_seconds = end;
  k.mean_workers = k.worker_seconds / end;
  if (completed > 0) {
    k.mean_wait_seconds = wait / static_cast<double>(completed);
    k.mean_service_seconds = service / static_cast<double>(completed);
  }
  kpis_.mean_replicas = kpis_.replica_seconds / end;
  result.fleet = kpis_;
  return result;
}

}  // namespace

FleetResult simulate_fleet(const Trace& trace, const PolicySpec& spec, const GuardConfig& guards,
                           const SimConfig& config, const FleetConfig& fleet) {
  FleetRun run(trace, spec, guards, config, fleet);
  FleetResult result = run.run();
  result.label =
      (spec.label.empty() ? spec.name : spec.label) + " + " +
      (fleet.replica_policy == "static" ? "static:" + std::to_string(fleet.replicas) + " pods"
                                        : fleet.replica_policy);
  result.policy = spec.name;
  result.replica_policy = fleet.replica_policy;
  result.fidelity = config.resolve_fidelity(trace);
  result.partitions = fleet.resolved_partitions(config);
  return result;
}

}  // namespace lagpilot::sim
