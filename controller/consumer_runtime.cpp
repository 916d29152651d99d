#include "controller/consumer_runtime.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <map>
#include <string>
#include <utility>

namespace lagpilot {

// Builds the Observation from the Kafka source (lag, arrivals via high watermarks, record age)
// and the pool (latency, busy workers, queue). Called only from tick(), on the control thread.
// It reads the source's snapshot (no broker I/O: the tick keeps its beat when a broker is slow)
// and takes its windows itself (record age, the pool's window), so that other readers of the
// source's stats (the status API) change nothing the tick sees.
//
// Arrivals = the growth of the high watermarks, summed over the partitions that were in the
// previous sample too: a newly assigned partition's high watermark is its whole history, not
// one tick's arrivals; a partition that left (rebalance) contributes nothing.
class ConsumerRuntime::LiveSampler final : public Sampler {
 public:
  LiveSampler(KafkaSource& source, WorkerPool& pool) : source_(source), pool_(pool) {}

  Observation sample(double now) override {
    Observation o;
    o.time = now;
    last_stats_ = source_.stats();
    last_stats_.record_age_p99_seconds = source_.take_record_age_p99();
    last_window_ = pool_.take_window();
    const PoolWindow& window = last_window_;
    std::map<std::pair<std::string, int32_t>, int64_t> highs;
    int64_t arrived = 0;
    for (const auto& p : last_stats_.partitions) {
      o.partition_lag.push_back({p.topic, p.partition, p.lag});
      if (p.high_watermark < 0) continue;
      auto key = std::make_pair(p.topic, p.partition);
      const auto prev = last_highs_.find(key);
      if (prev != last_highs_.end())
        arrived += std::max<int64_t>(0, p.high_watermark - prev->second);
      highs.emplace(std::move(key), p.high_watermark);
    }
    o.total_lag = last_stats_.total_lag;
    const uint64_t done = last_stats_.processed + last_stats_.failed;
    if (last_time_ >= 0 && now > last_time_) {
      const double dt = now - last_time_;
      o.arrival_rate = static_cast<double>(arrived) / dt;
      o.processed_rate = static_cast<double>(done - last_done_) / dt;
      o.lag_slope = static_cast<double>(o.total_lag - last_lag_) / dt;
    }
    last_time_ = now;
    last_highs_ = std::move(highs);
    last_done_ = done;
    last_lag_ = o.total_lag;
    o.latency_p50 = window.latency_p50;
    o.latency_p99 = window.latency_p99;
    o.record_age_p99 = last_stats_.record_age_p99_seconds;
    o.current_workers = pool_.size();
    o.busy_workers = window.busy_mean;
    o.queue_depth = static_cast<int64_t>(pool_.queue_depth());
    o.queue_capacity = static_cast<int64_t>(pool_.queue_capacity());
    o.assigned_partitions = last_stats_.assigned_partitions;
    o.sink_pushback = sink_pushback ? sink_pushback() : -1.0;
    sample_group();
    return o;
  }

  const SourceStats& last_stats() const { return last_stats_; }
  const GroupSample& last_group() const { return group_; }

  std::function<double()> sink_pushback;  // set before start(); called on the control thread
  const PoolWindow& last_window() const { return last_window_; }

 private:
  KafkaSource& source_;
  WorkerPool& pool_;
  SourceStats last_stats_;
  PoolWindow last_window_;
  double last_time_ = -1;
  std::map<std::pair<std::string, int32_t>, int64_t> last_highs_;  // the previous sample's
  uint64_t last_done_ = 0;
  int64_t last_lag_ = 0;
  GroupSample group_;
  double group_read_at_ = -1;  // read_at_seconds of the group view behind group_
  std::map<std::pair<std::string, int32_t>, int64_t> group_highs_;

  // Rates from the last two group views (a view is read about once a second, not every tick:
  // the rates change only when a new one arrives).
  void sample_group() {
    const GroupLagView& view = last_stats_.group;
    if (!view.known || view.read_at_seconds == group_read_at_) return;
    std::map<std::pair<std::string, int32_t>, int64_t> highs;
    std::map<std::pair<std::string, int32_t>, bool> own;
    for (const auto& p : last_stats_.partitions) own[{p.topic, p.partition}] = true;
    const double dt = view.read_at_seconds - group_read_at_;
    const bool have_previous = group_read_at_ >= 0 && dt > 0;
    GroupSample g;
    double total = 0, own_total = 0, hottest = -1;
    for (const GroupPartitionLag& p : view.partitions) {
      auto key = std::make_pair(p.topic, p.partition);
      const auto prev = group_highs_.find(key);
      if (have_previous && prev != group_highs_.end() && p.high_watermark >= 0) {
        const double rate =
            static_cast<double>(std::max<int64_t>(0, p.high_watermark - prev->second)) / dt;
        total += rate;
        if (own.count(key)) own_total += rate;
        if (rate > hottest) {
          hottest = rate;
          g.hottest_partition = p.topic + "[" + std::to_string(p.partition) + "]";
        }
      }
      highs.emplace(std::move(key), p.high_watermark);
    }
    if (have_previous && !view.partitions.empty()) {
      g.arrival_rate = total;
      g.hottest_rate = std::max(0.0, hottest);
      g.mean_partition_rate = total / static_cast<double>(view.partitions.size());
      g.own_arrival_share = total > 0 ? own_total / total : 0;
      g.own_partition_share = static_cast<double>(last_stats_.assigned_partitions) /
                              static_cast<double>(view.partitions.size());
      group_ = std::move(g);
    }
    group_read_at_ = view.read_at_seconds;
    group_highs_ = std::move(highs);
  }
};

class ConsumerRuntime::PoolActuator final : public Actuator {
 public:
  explicit PoolActuator(WorkerPool& pool) : pool_(pool) {}
  void resize(int workers) override {
    const int got = pool_.resize(workers);
    if (got != workers) {
      spdlog::warn("pool resize to {} left it at {}: {}", workers, got, pool_.last_error());
    }
  }

 private:
  WorkerPool& pool_;
};

ConsumerRuntime::ConsumerRuntime(RuntimeConfig config, std::unique_ptr<Policy> policy,
                                 GuardConfig guards, MessageHandler handler, const Clock& clock)
    : config_(std::move(config)), clock_(clock) {
  WorkerPoolOptions pool_options = config_.pool;
  pool_options.initial_workers = guards.min_workers;
  pool_options.max_workers = guards.hard_max_workers;
  pool_ = std::make_unique<WorkerPool>(pool_options, clock_);
  source_ = std::make_unique<KafkaSource>(config_.kafka, *pool_, std::move(handler), clock_);
  sampler_ = std::make_unique<LiveSampler>(*source_, *pool_);
  actuator_ = std::make_unique<PoolActuator>(*pool_);
  controller_ = std::make_unique<ControlLoop>(*sampler_, *actuator_, std::move(policy), guards);
}

ConsumerRuntime::~ConsumerRuntime() {
  stop();
}

void ConsumerRuntime::set_sink_pushback(std::function<double()> source) {
  sampler_->sink_pushback = std::move(source);
}

void ConsumerRuntime::start() {
  source_->start();
}

TickReport ConsumerRuntime::tick(const TickSchedule& schedule) {
  const double now = clock_.now();
  TickReport report;
  report.schedule = schedule;
  report.decision = controller_->tick(now, schedule.late);
  report.observation = *controller_->last_observation();
  report.source = sampler_->last_stats();
  report.group = sampler_->last_group();
  report.pool = sampler_->last_window();
  const double dt = last_tick_ < 0 ? 0.0 : now - last_tick_;
  last_tick_ = now;
  totals_.seconds += dt;
  totals_.worker_seconds += dt * report.observation.current_workers;
  if (static_cast<double>(report.observation.total_lag) > config_.lag_slo) {
    totals_.seconds_above_slo += dt;
  }
  totals_.max_lag = std::max(totals_.max_lag, report.observation.total_lag);
  if (report.decision.workers != report.decision.previous_workers) ++totals_.scale_actions;
  return report;
}

std::string ConsumerRuntime::failure() const {
  std::string why = source_->failure();
  if (!why.empty()) return why;
  why = pool_->task_failure();
  if (!why.empty()) return "a task threw into the worker pool: " + why;
  return "";
}

void ConsumerRuntime::stop() {
  if (stopped_) return;
  stopped_ = true;
  source_->stop(config_.shutdown_timeout_seconds);
  const std::size_t unrun = pool_->shutdown(config_.shutdown_timeout_seconds);
  if (unrun > 0) {
    spdlog::warn(
        "shutdown: {} queued messages not processed (not committed; they will be "
        "re-delivered on restart)",
        unrun);
  }
}

std::string format_status_line(const TickReport& r, bool json) {
  const Observation& o = r.observation;
  const Decision& d = r.decision;
  if (json) {
    nlohmann::json j = {
        {"t", o.time},
        {"arrival_rate", o.arrival_rate},
        {"processed_rate", o.processed_rate},
        {"lag", o.total_lag},
        {"latency_p99_seconds", o.latency_p99},
        {"record_age_p99_seconds", o.record_age_p99},
        {"workers", o.current_workers},
        {"desired", d.workers},
        {"busy", o.busy_workers},
        {"queue", o.queue_depth},
        {"paused", r.source.paused},
        {"assigned_partitions", r.source.assigned_partitions},
        {"role", r.source.assigned_partitions > 0 ? "active" : "standby"},
        {"group_lag",
         r.source.group.known ? nlohmann::json(r.source.group.total_lag) : nlohmann::json(nullptr)},
        {"policy", d.policy},
        {"reason", describe(d)},
        {"late_seconds", r.schedule.late_seconds}};
    return j.dump();
  }
  // The group's lag too, when it differs from this member's own (other members hold some of
  // the partitions): a standby's own lag is always 0.
  char group[48] = "";
  if (r.source.group.known && r.source.group.total_lag != o.total_lag) {
    std::snprintf(group, sizeof group, " group_lag=%lld",
                  static_cast<long long>(r.source.group.total_lag));
  }
  char buf[320];
  std::snprintf(
      buf, sizeof buf,
      "t=%6.1fs in=%7.0f/s done=%7.0f/s lag=%8lld%s p99=%7.1fms workers %2d -> %2d%s%s | ", o.time,
      o.arrival_rate, o.processed_rate, static_cast<long long>(o.total_lag), group,
      o.latency_p99 * 1e3, o.current_workers, d.workers, r.source.paused ? " paused" : "",
      r.source.assigned_partitions == 0 ? " standby" : "");
  return buf + describe(d);
}

}  // namespace lagpilot
