#include "controller/metrics/metrics.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "controller/metrics/metric_spec.h"

namespace lagpilot {
namespace {

// The one place where metric names and help texts live (the source's counters are declared
// with the source, in LAGPILOT_SOURCE_COUNTERS: see source_counter_families). The enum
// indexes the table.
enum MetricId {
  kPartitionLag,
  kTotalLag,
  kAssignedPartitions,
  kPausedPartitions,
  kArrivalRate,
  kProcessedRate,
  kLatencyP50,
  kLatencyP99,
  kProcessLatency,
  kRecordAgeP99,
  kWorkers,
  kQueueDepth,
  kQueueCapacity,
  kUnfinished,
  kScaleEvents,
  kOverrideActive,
  kTickDuration,
  kTicks,
  kTicksLate,
  kTicksSkipped,
  kPolicyInfo,
  kWorkerThroughput,
  kNeededWorkers,
  kRecommendedReplicas,
  kLastTickTimestamp,
  kGroupLag,
  kGroupPartitions,
  kGroupArrivalRate,
  kGroupLagAge,
  kStandby,
  kPartitionSkew,
  kSkewDetected,
  kRecommendedProducerRate,
  kRecommendedProducerBurst,
  kMetricCount
};

constexpr MetricSpec kMetricSpecs[kMetricCount] = {
    {"lagpilot_consumer_lag",
     "Messages behind per assigned partition: high watermark minus the done offset (what the "
     "next commit writes)."},
    {"lagpilot_consumer_total_lag",
     "Messages behind, summed over the partitions assigned to this process."},
    {"lagpilot_assigned_partitions", "Partitions assigned to this consumer now."},
    {"lagpilot_paused_partitions",
     "Assigned partitions paused now (backpressure at the high watermark, or an operator "
     "pause)."},
    {"lagpilot_arrival_rate_messages_per_second",
     "Messages produced to the assigned partitions per second over the last tick window "
     "(slope of the high watermarks)."},
    {"lagpilot_processed_rate_messages_per_second",
     "Messages finished (processed or failed) per second over the last tick window."},
    {"lagpilot_process_latency_p50_seconds",
     "Median handler run time over the last tick window (within 0.8 % of the measured "
     "median)."},
    {"lagpilot_process_latency_p99_seconds",
     "99th percentile handler run time over the last tick window (within 0.8 % of the "
     "measured one)."},
    {"lagpilot_process_latency_seconds",
     "Handler run time per message. From the worker pool's fine histogram (64 buckets per "
     "octave, at most 1.6 % wide): a run time up to 1.6 % below a bucket boundary may be "
     "counted in the next bucket up."},
    {"lagpilot_record_age_p99_seconds",
     "99th percentile of completion time minus record timestamp over the last tick window."},
    {"lagpilot_workers",
     "Worker pool sizes: current (sampled at the tick), desired (after guards), proposed (the "
     "policy's output before guards), busy (mean over the tick window), min and max (bounds "
     "in force)."},
    {"lagpilot_queue_depth_messages", "Messages in the worker pool queue (fetched, not started)."},
    {"lagpilot_queue_capacity_messages", "Capacity of the worker pool queue, in messages."},
    {"lagpilot_unfinished_messages",
     "Messages consumed but not finished (pool queue, running, ordering lanes, pending "
     "buffer)."},
    {"lagpilot_scale_events_total",
     "Ticks whose decision changed the pool size, by direction (up, down) and source (policy, "
     "override)."},
    {"lagpilot_override_active", "1 while a manual worker-count override is in force, else 0."},
    {"lagpilot_controller_tick_duration_seconds",
     "Wall time of one control tick: sample, decide, guard, resize."},
    {"lagpilot_controller_ticks_total", "Control ticks run."},
    {"lagpilot_controller_ticks_late_total",
     "Control ticks that started more than 5 % of tick_seconds after they were due (the "
     "decision log says why)."},
    {"lagpilot_controller_ticks_skipped_total",
     "Control ticks not run because the loop fell more than a whole period behind (the beat "
     "skips them rather than run a burst of back-to-back ticks)."},
    {"lagpilot_policy_info", "The active scaling policy (value always 1)."},
    {"lagpilot_worker_throughput_messages_per_second",
     "Estimated messages per second one busy worker finishes: processed rate / mean busy "
     "workers, at the last tick where at least 0.05 workers were busy (0 until measured)."},
    {"lagpilot_needed_workers",
     "Workers this process's partitions need: (arrival rate + total lag / catch-up seconds) / "
     "per-worker throughput; the current pool size until a throughput has been measured. Sum "
     "it over a fleet and divide by max workers for the replica count."},
    {"lagpilot_recommended_replicas",
     "Consumer processes of max workers each that the whole consumer group needs: "
     "min(partitions, max(1, ceil(group needed workers / max workers))), from the group's lag "
     "and arrival rate and this process's per-worker throughput (this process's own load "
     "until the group's lag has been read). Every member reports it: scale on the max over "
     "members (a standby that has measured nothing reports 1)."},
    {"lagpilot_last_tick_timestamp_seconds",
     "Unix time of the last control tick; alert when it stops advancing."},
    {"lagpilot_group_lag",
     "Messages behind for the whole consumer group, over every partition of the subscribed "
     "topics (the group's committed offsets against the high watermarks), whichever member "
     "holds them: the series without labels is the total, those with a topic label per "
     "topic."},
    {"lagpilot_group_partitions", "Partitions of the subscribed topics (the whole group's)."},
    {"lagpilot_group_arrival_rate_messages_per_second",
     "Messages produced per second to all partitions of the subscribed topics."},
    {"lagpilot_group_lag_age_seconds",
     "Age of the group-wide lag at the last tick (it is read about once a second); -1 until "
     "read."},
    {"lagpilot_standby", "1 while this member holds no partitions, else 0."},
    {"lagpilot_partition_skew_ratio",
     "Arrival rate of the hottest partition of the group over the mean per partition (1: "
     "even; 0 until measured)."},
    {"lagpilot_partition_skew_detected",
     "1 while this member's pool is at its max, its own partitions take a larger share of "
     "the arrivals than of the partitions (1.5x or more), and the hottest partition takes 3x "
     "the mean or more: more members would not help, more partitions or other keys would."},
    {"lagpilot_recommended_producer_rate",
     "Messages per second a producer should keep to: the sustainable rate at max workers less "
     "the burst headroom (GET /v1/pacing says where the figure came from and its age; 0 until "
     "there is one)."},
    {"lagpilot_recommended_producer_burst_messages",
     "Token-bucket size that goes with lagpilot_recommended_producer_rate: the spare capacity "
     "over one control tick (0 until there is a rate)."},
};

const prometheus::Histogram::BucketBoundaries kLatencyBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};

const prometheus::Histogram::BucketBoundaries kTickBuckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

prometheus::Family<prometheus::Gauge>& gauge_family(prometheus::Registry& r, MetricId id) {
  return gauge_family(r, kMetricSpecs[id]);
}

prometheus::Family<prometheus::Counter>& counter_family(prometheus::Registry& r, MetricId id) {
  return counter_family(r, kMetricSpecs[id]);
}

prometheus::Gauge& gauge(prometheus::Registry& r, MetricId id) {
  return gauge_family(r, id).Add({});
}

prometheus::Counter& counter(prometheus::Registry& r, MetricId id) {
  return counter_family(r, id).Add({});
}

// A source counter's series: its family (created by the family's first entry in
// kSourceCounterSpecs, which carries the help text) with its label, if any.
prometheus::Counter& source_counter(prometheus::Registry& r, const SourceCounterSpec& spec) {
  const SourceCounterSpec* first = &spec;
  while (first != kSourceCounterSpecs && (first - 1)->metric != nullptr &&
         std::string_view((first - 1)->metric) == spec.metric) {
    --first;
  }
  auto& family = prometheus::BuildCounter().Name(spec.metric).Help(first->help).Register(r);
  if (spec.label == nullptr) return family.Add({});
  const std::string_view label(spec.label);
  const std::size_t eq = label.find('=');
  return family.Add({{std::string(label.substr(0, eq)), std::string(label.substr(eq + 1))}});
}

// The families of the exported source counters, in declaration order, once each.
std::vector<std::string> source_counter_families() {
  std::vector<std::string> names;
  for (const SourceCounterSpec& spec : kSourceCounterSpecs) {
    if (spec.metric == nullptr) continue;
    if (std::find(names.begin(), names.end(), spec.metric) == names.end()) {
      names.emplace_back(spec.metric);
    }
  }
  return names;
}

}  // namespace

RuntimeMetrics::RuntimeMetrics(std::shared_ptr<prometheus::Registry> registry,
                               double catch_up_seconds, PacingEstimator pacing)
    : registry_(std::move(registry)),
      partition_lag_(gauge_family(*registry_, kPartitionLag)),
      total_lag_(gauge(*registry_, kTotalLag)),
      assigned_partitions_(gauge(*registry_, kAssignedPartitions)),
      paused_partitions_(gauge(*registry_, kPausedPartitions)),
      arrival_rate_(gauge(*registry_, kArrivalRate)),
      processed_rate_(gauge(*registry_, kProcessedRate)),
      latency_p50_(gauge(*registry_, kLatencyP50)),
      latency_p99_(gauge(*registry_, kLatencyP99)),
      record_age_p99_(gauge(*registry_, kRecordAgeP99)),
      workers_(gauge_family(*registry_, kWorkers)),
      queue_depth_(gauge(*registry_, kQueueDepth)),
      queue_capacity_(gauge(*registry_, kQueueCapacity)),
      unfinished_(gauge(*registry_, kUnfinished)),
      scale_events_(counter_family(*registry_, kScaleEvents)),
      override_active_(gauge(*registry_, kOverrideActive)),
      process_latency_(prometheus::BuildHistogram()
                           .Name(kMetricSpecs[kProcessLatency].name)
                           .Help(kMetricSpecs[kProcessLatency].help)
                           .Register(*registry_)
                           .Add({}, kLatencyBuckets)),
      tick_duration_(prometheus::BuildHistogram()
                         .Name(kMetricSpecs[kTickDuration].name)
                         .Help(kMetricSpecs[kTickDuration].help)
                         .Register(*registry_)
                         .Add({}, kTickBuckets)),
      ticks_(counter(*registry_, kTicks)),
      ticks_late_(counter(*registry_, kTicksLate)),
      ticks_skipped_(counter(*registry_, kTicksSkipped)),
      policy_info_(gauge_family(*registry_, kPolicyInfo)),
      worker_throughput_(gauge(*registry_, kWorkerThroughput)),
      needed_workers_(gauge(*registry_, kNeededWorkers)),
      recommended_replicas_(gauge(*registry_, kRecommendedReplicas)),
      last_tick_timestamp_(gauge(*registry_, kLastTickTimestamp)),
      group_lag_(gauge_family(*registry_, kGroupLag)),
      group_total_lag_(group_lag_.Add({})),
      group_partitions_(gauge(*registry_, kGroupPartitions)),
      group_arrival_rate_(gauge(*registry_, kGroupArrivalRate)),
      group_lag_age_(gauge(*registry_, kGroupLagAge)),
      standby_(gauge(*registry_, kStandby)),
      partition_skew_(gauge(*registry_, kPartitionSkew)),
      skew_detected_(gauge(*registry_, kSkewDetected)),
      producer_rate_(gauge(*registry_, kRecommendedProducerRate)),
      producer_burst_(gauge(*registry_, kRecommendedProducerBurst)),
      capacity_(catch_up_seconds),
      pacing_(std::move(pacing)) {
  // Series that exist from the start, so that dashboards and rate() see zeros, not gaps.
  const char* states[kWorkerStates] = {"current", "desired", "proposed", "busy", "min", "max"};
  for (int i = 0; i < kWorkerStates; ++i) worker_gauges_[i] = &workers_.Add({{"state", states[i]}});
  for (std::size_t i = 0; i < kSourceCounters; ++i) {
    if (kSourceCounterSpecs[i].metric != nullptr) {
      source_counters_[i] = &source_counter(*registry_, kSourceCounterSpecs[i]);
    }
  }
  const char* directions[2] = {"up", "down"};
  const char* sources[2] = {"policy", "override"};
  for (int d = 0; d < 2; ++d) {
    for (int s = 0; s < 2; ++s) {
      scale_event_counters_[d][s] =
          &scale_events_.Add({{"direction", directions[d]}, {"source", sources[s]}});
    }
  }
  recommended_replicas_.Set(1);
  group_lag_age_.Set(-1);
}

std::vector<std::string> RuntimeMetrics::metric_names() {
  std::vector<std::string> names;
  for (const MetricSpec& spec : kMetricSpecs) names.emplace_back(spec.name);
  for (std::string& name : source_counter_families()) names.push_back(std::move(name));
  return names;
}

void RuntimeMetrics::add_delta(prometheus::Counter& counter, uint64_t now_value,
                               uint64_t& last_value) {
  // A cumulative value that went down belongs to a new source: all of it is new.
  const uint64_t delta = now_value >= last_value ? now_value - last_value : now_value;
  if (delta > 0) counter.Increment(static_cast<double>(delta));
  last_value = now_value;
}

// Folds the pool's fine buckets into the exported ones: a fine bucket goes to the first
// exported bucket whose boundary is at or above its upper bound (the open last one: +Inf).
void RuntimeMetrics::record_latency_histogram(const PoolWindow& window) {
  if (window.completed == 0 || window.latency_histogram.empty()) return;
  std::vector<double> increments(kLatencyBuckets.size() + 1, 0.0);
  for (std::size_t i = 0; i < window.latency_histogram.size(); ++i) {
    if (window.latency_histogram[i] == 0) continue;
    const double upper = WorkerPool::latency_histogram_upper_bound(i);
    const auto slot = std::lower_bound(kLatencyBuckets.begin(), kLatencyBuckets.end(), upper) -
                      kLatencyBuckets.begin();
    increments[static_cast<std::size_t>(slot)] += static_cast<double>(window.latency_histogram[i]);
  }
  process_latency_.ObserveMultiple(increments, window.latency_sum);
}

void RuntimeMetrics::record_tick(const TickReport& report, const GuardConfig& guards,
                                 bool override_active, double tick_duration_seconds,
                                 double now_epoch_seconds) {
  const Observation& o = report.observation;
  const Decision& d = report.decision;
  const SourceStats& s = report.source;

  // Per-partition lag: from the source's view when it has one, else from the observation.
  std::set<std::pair<std::string, int32_t>> present;
  int paused = 0;
  auto set_partition = [&](const std::string& topic, int32_t partition, int64_t lag) {
    auto key = std::make_pair(topic, partition);
    present.insert(key);
    prometheus::Gauge*& g = partition_gauges_[key];
    if (!g) {
      g = &partition_lag_.Add({{"topic", topic}, {"partition", std::to_string(partition)}});
    }
    g->Set(static_cast<double>(lag));
  };
  if (!s.partitions.empty()) {
    for (const PartitionStatus& p : s.partitions) {
      set_partition(p.topic, p.partition, p.lag);
      if (p.paused) ++paused;
    }
  } else {
    for (const PartitionLag& p : o.partition_lag) set_partition(p.topic, p.partition, p.lag);
  }
  for (auto it = partition_gauges_.begin(); it != partition_gauges_.end();) {
    if (present.count(it->first)) {
      ++it;
    } else {  // revoked: drop the series rather than report a stale value
      partition_lag_.Remove(it->second);
      it = partition_gauges_.erase(it);
    }
  }

  total_lag_.Set(static_cast<double>(o.total_lag));
  assigned_partitions_.Set(static_cast<double>(s.assigned_partitions > 0 ? s.assigned_partitions
                                                                         : o.assigned_partitions));
  paused_partitions_.Set(paused);
  arrival_rate_.Set(o.arrival_rate);
  processed_rate_.Set(o.processed_rate);
  latency_p50_.Set(o.latency_p50);
  latency_p99_.Set(o.latency_p99);
  record_age_p99_.Set(o.record_age_p99);
  record_latency_histogram(report.pool);

  worker_gauges_[kCurrent]->Set(o.current_workers);
  worker_gauges_[kDesired]->Set(d.workers);
  worker_gauges_[kProposed]->Set(d.policy_workers);
  worker_gauges_[kBusy]->Set(o.busy_workers);
  worker_gauges_[kMin]->Set(guards.min_workers);
  worker_gauges_[kMax]->Set(guards.max_workers);
  queue_depth_.Set(static_cast<double>(o.queue_depth));
  queue_capacity_.Set(static_cast<double>(o.queue_capacity));
  unfinished_.Set(static_cast<double>(s.unfinished));

  for (std::size_t i = 0; i < kSourceCounters; ++i) {
    if (source_counters_[i] != nullptr) {
      add_delta(*source_counters_[i], s.*kSourceCounterSpecs[i].value, last_source_counters_[i]);
    }
  }

  if (d.workers != d.previous_workers) {
    const int direction = d.workers > d.previous_workers ? 0 : 1;  // up, down
    const int source = d.source == "override" ? 1 : 0;             // policy, override
    scale_event_counters_[direction][source]->Increment();
  }
  override_active_.Set(override_active ? 1 : 0);
  tick_duration_.Observe(tick_duration_seconds);
  ticks_.Increment();
  if (!report.schedule.late.empty()) ticks_late_.Increment();
  ticks_skipped_.Increment(report.schedule.skipped);

  if (!policy_info_gauge_ || policy_info_name_ != d.policy) {
    if (policy_info_gauge_) policy_info_.Remove(policy_info_gauge_);
    policy_info_gauge_ = &policy_info_.Add({{"policy", d.policy}});
    policy_info_gauge_->Set(1);
    policy_info_name_ = d.policy;
  }
  const GroupLagView& gv = s.group;
  CapacityEstimator::GroupDemand demand{report.group.arrival_rate, gv.total_lag,
                                        gv.partition_count()};
  const CapacityEstimator::Estimate& capacity =
      capacity_.update(o, guards.max_workers, gv.known ? &demand : nullptr);
  worker_throughput_.Set(capacity.per_worker_rate);
  needed_workers_.Set(capacity.needed_workers);
  recommended_replicas_.Set(capacity.recommended_replicas);
  last_tick_timestamp_.Set(now_epoch_seconds);
  nlohmann::json group = record_group(report, guards, capacity);
  const PacingRecommendation& pace = pacing_.update(o, guards.max_workers, now_epoch_seconds);
  producer_rate_.Set(pace.available ? pace.rate : 0);
  producer_burst_.Set(pace.available ? pace.burst : 0);

  nlohmann::json partitions = nlohmann::json::array();
  nlohmann::json paused_list = nlohmann::json::array();
  for (const PartitionStatus& p : s.partitions) {
    partitions.push_back({{"topic", p.topic},
                          {"partition", p.partition},
                          {"lag", p.lag},
                          {"high_watermark", p.high_watermark},
                          {"low_watermark", p.low_watermark},
                          {"committed", p.committed},
                          {"paused", p.paused}});
    if (p.paused) paused_list.push_back({{"topic", p.topic}, {"partition", p.partition}});
  }
  nlohmann::json status = {
      {"tick_time", o.time},
      {"tick_unix_seconds", now_epoch_seconds},
      {"tick_duration_seconds", tick_duration_seconds},
      {"tick_late_seconds", report.schedule.late_seconds},
      // At the tick; the status API adds the time since (lag_age_seconds).
      {"lag_age_at_tick_seconds", s.lag_age_seconds},
      {"paused", s.paused},
      {"paused_partitions", std::move(paused_list)},
      {"assigned_partitions", s.assigned_partitions},
      {"partitions", std::move(partitions)},
      {"unfinished", s.unfinished},
      {"pending", s.pending},
      {"recommended_replicas", capacity.recommended_replicas},
      {"role", s.assigned_partitions > 0 ? "active" : "standby"},
      {"group", std::move(group)},
      {"capacity",
       {{"per_worker_rate", capacity.per_worker_rate},
        {"rate_measured", capacity.rate_measured},
        {"needed_workers", capacity.needed_workers},
        {"group_wide", capacity.group_wide},
        {"group_needed_workers", capacity.group_needed_workers},
        {"catch_up_seconds", capacity_.catch_up_seconds()}}},
      {"pacing", pacing_json(pace, now_epoch_seconds)},
  };
  nlohmann::json& counters = status["counters"] = nlohmann::json::object();
  for (const SourceCounterSpec& spec : kSourceCounterSpecs) {
    if (spec.in_status) counters[spec.field] = s.*spec.value;
  }
  std::lock_guard lock(status_mutex_);
  status_ = std::move(status);
  pacing_now_ = pace;
  tick_unix_seconds_ = now_epoch_seconds;
  lag_age_at_tick_ = s.lag_age_seconds;
}

double RuntimeMetrics::lag_age_seconds(double now_epoch_seconds) const {
  std::lock_guard lock(status_mutex_);
  if (lag_age_at_tick_ < 0) return -1;
  return lag_age_at_tick_ + std::max(0.0, now_epoch_seconds - tick_unix_seconds_);
}

PacingRecommendation RuntimeMetrics::pacing() const {
  std::lock_guard lock(status_mutex_);
  return pacing_now_;
}

// The group-wide gauges, and the status's "group" object: the group's lag (total, per topic),
// its arrival rate, the partition skew and the partitions-per-member hint.
nlohmann::json RuntimeMetrics::record_group(const TickReport& report, const GuardConfig& guards,
                                            const CapacityEstimator::Estimate& capacity) {
  const GroupLagView& gv = report.source.group;
  const GroupSample& g = report.group;
  const Observation& o = report.observation;
  standby_.Set(report.source.assigned_partitions > 0 ? 0 : 1);
  group_lag_age_.Set(gv.known ? gv.age_seconds : -1);
  if (!gv.known) return {{"known", false}};
  group_total_lag_.Set(static_cast<double>(gv.total_lag));
  group_partitions_.Set(gv.partition_count());
  group_arrival_rate_.Set(g.arrival_rate);
  nlohmann::json topics = nlohmann::json::array();
  for (const GroupTopicLag& t : gv.topics) {
    prometheus::Gauge*& gauge = group_topic_gauges_[t.topic];
    if (!gauge) gauge = &group_lag_.Add({{"topic", t.topic}});
    gauge->Set(static_cast<double>(t.lag));
    topics.push_back({{"topic", t.topic}, {"partitions", t.partitions}, {"lag", t.lag}});
  }
  const double skew = g.mean_partition_rate > 0 ? g.hottest_rate / g.mean_partition_rate : 0;
  partition_skew_.Set(skew);
  const bool pool_at_max = o.current_workers >= guards.max_workers &&
                           o.busy_workers >= 0.9 * static_cast<double>(guards.max_workers);
  const bool own_hot =
      g.own_partition_share > 0 && g.own_arrival_share >= 1.5 * g.own_partition_share;
  const bool skewed = pool_at_max && own_hot && skew >= 3;
  skew_detected_.Set(skewed ? 1 : 0);
  const int replicas = std::max(1, capacity.recommended_replicas);
  const int per_member = (gv.partition_count() + replicas - 1) / replicas;
  nlohmann::json j = {{"known", true},
                      {"age_seconds", gv.age_seconds},
                      {"total_lag", gv.total_lag},
                      {"partitions", gv.partition_count()},
                      {"topics", std::move(topics)},
                      {"arrival_rate", g.arrival_rate},
                      {"partitions_per_instance", per_member},
                      {"skew",
                       {{"ratio", skew},
                        {"hottest_partition", g.hottest_partition},
                        {"hottest_rate", g.hottest_rate},
                        {"mean_partition_rate", g.mean_partition_rate},
                        {"own_arrival_share", g.own_arrival_share},
                        {"own_partition_share", g.own_partition_share},
                        {"detected", skewed}}}};
  if (skewed) {
    j["skew"]["advice"] = g.hottest_partition + " receives " + std::to_string(skew).substr(0, 4) +
                          "x the mean partition's rate and this pool is at its max: one "
                          "partition is consumed by one member, so more members do not help; "
                          "spread its keys or add partitions";
  }
  return j;
}

nlohmann::json RuntimeMetrics::last_tick_status() const {
  std::lock_guard lock(status_mutex_);
  return status_;
}

std::string RuntimeMetrics::render() const {
  std::shared_ptr<const std::string> text;
  {
    std::lock_guard lock(text_mutex_);
    text = published_text_;
  }
  if (text) return *text;  // copied outside the lock
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

void RuntimeMetrics::publish() {
  auto text = std::make_shared<const std::string>(
      prometheus::TextSerializer().Serialize(registry_->Collect()));
  std::lock_guard lock(text_mutex_);
  published_text_ = std::move(text);
}

}  // namespace lagpilot
