#pragma once
// Prometheus metrics of the live runtime, all declared in one place (metrics.cpp, kMetricSpecs)
// with their help texts. Names follow the Prometheus conventions: base units (seconds), counters
// end in `_total`, nothing else does; `promtool check metrics` accepts the output.
//
// Every value is fed once per control tick by record_tick() from the tick's report:
//
//   lagpilot_consumer_lag{topic,partition}     gauge: high watermark - done offset, per
//                                              assigned partition (series of partitions no
//                                              longer assigned are removed)
//   lagpilot_consumer_total_lag                gauge: sum over the assigned partitions (named
//                                              so, not *_total, because it is not a counter)
//   lagpilot_assigned_partitions               gauge
//   lagpilot_paused_partitions                 gauge: assigned partitions paused now
//                                              (backpressure or operator pause)
//   lagpilot_arrival_rate_messages_per_second  gauge: as the controller saw it (tick window)
//   lagpilot_processed_rate_messages_per_second
//   lagpilot_process_latency_p50_seconds       gauges: handler run time quantiles over the last
//   lagpilot_process_latency_p99_seconds       tick window (the pool's histogram bucket
//                                              midpoints, within 0.8 %), as the controller saw
//                                              them. Window
//                                              quantiles do not aggregate across processes:
//                                              use the histogram below for fleet quantiles.
//   lagpilot_process_latency_seconds          histogram: handler run time per message, from
//                                              the pool's window histogram (TickReport::pool);
//                                              aggregate across processes with
//                                              histogram_quantile(sum by (le) (rate(..._bucket)))
//   lagpilot_record_age_p99_seconds            gauge: completion time - record timestamp
//   lagpilot_workers{state}                    gauge; state = current (pool size sampled at the
//                                              tick), desired (after guards), proposed (the
//                                              policy's output before guards), busy (mean busy
//                                              workers over the window), min, max (bounds now)
//   lagpilot_queue_depth_messages              gauge: pool queue (fetched, not started)
//   lagpilot_queue_capacity_messages           gauge
//   lagpilot_unfinished_messages               gauge: consumed, not finished (queue, running,
//                                              ordering lanes, pending buffer)
//   lagpilot_messages_consumed_total           counters, fed by the deltas of the source's
//   lagpilot_messages_processed_total          cumulative counters (handler returned)
//   lagpilot_messages_failed_total             (handler threw)
//   lagpilot_messages_lost_to_retention_total  (expired before they were consumed)
//   lagpilot_records_skipped_total{reason}     records committed past without a handler:
//                                              offset_gap (not delivered, above the log start:
//                                              compaction, transaction markers), offset_reset
//                                              (auto.offset.reset=latest, new group),
//                                              truncation (log truncated below the position)
//   lagpilot_offset_commits_total{result}      result = success | failure
//   lagpilot_partition_pauses_total            times the partitions were paused
//   lagpilot_scale_events_total{direction,source}  direction = up | down, source = policy |
//                                              override: ticks whose decision differs from the
//                                              pool size sampled at that tick (a resize the
//                                              pool could not complete is attempted again and
//                                              counted again at the next tick)
//   lagpilot_override_active                   gauge 0/1: a manual pin is in force
//   lagpilot_controller_tick_duration_seconds  histogram: wall time of one tick (sample,
//                                              decide, guard, resize), measured by the caller
//   lagpilot_controller_ticks_total            counter
//   lagpilot_controller_ticks_late_total       counter: started > 5 % of a period after due
//   lagpilot_controller_ticks_skipped_total    counter: beats missed by more than a period
//   lagpilot_policy_info{policy}               gauge 1 for the active policy (info pattern)
//   lagpilot_worker_throughput_messages_per_second  gauge: estimated messages/s one busy
//                                              worker finishes (CapacityEstimator below; 0
//                                              until first measured)
//   lagpilot_needed_workers                    gauge: workers this process's partitions need
//                                              to keep up and drain the backlog within the
//                                              catch-up time (CapacityEstimator)
//   lagpilot_recommended_replicas              gauge: consumer processes of max_workers
//                                              workers each that the whole group needs,
//                                              capped at the partition count (group-wide
//                                              CapacityEstimator below; this process's own
//                                              load until the group's lag is read). Members
//                                              agree on it: scale on its max over members
//                                              (docs/kubernetes.md).
//   lagpilot_last_tick_timestamp_seconds       gauge: Unix time of the last tick (alert when
//                                              time() - it exceeds a few ticks)
//   lagpilot_group_lag{topic}                  gauge: the whole group's lag, every partition
//                                              of the subscribed topics (no label: total)
//   lagpilot_group_partitions                  gauge: partitions of the subscribed topics
//   lagpilot_group_arrival_rate_messages_per_second  gauge: into all of them
//   lagpilot_group_lag_age_seconds             gauge: age of the group view at the tick
//   lagpilot_standby                           gauge 0/1: this member holds no partitions
//   lagpilot_partition_skew_ratio              gauge: hottest partition's rate / the mean
//   lagpilot_partition_skew_detected           gauge 0/1: pool at max on hot own partitions
//                                              while the group is skewed (more members would
//                                              not help)
//   lagpilot_recommended_producer_rate         gauge: messages/s a producer should keep to
//                                              (PacingEstimator, pacing.h; 0 until known)
//   lagpilot_recommended_producer_burst_messages  gauge: the token-bucket size that goes with it
//
// A counter whose cumulative source value goes down (a new source) takes the new value as its
// delta, like Prometheus's own counter-reset handling.
//
// Thread-safety: record_tick() is called from one thread at a time (the control thread);
// render(), last_tick_status() and metric_names() may be called from any thread concurrently
// with it (prometheus-cpp's registry and families are internally locked; the status snapshot
// has its own mutex).

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "controller/metrics/pacing.h"
#include "controller/metrics/tick_report.h"
#include "policies/capacity_estimator.h"
#include "policies/guards.h"
#include "policies/observation.h"

namespace lagpilot {

class RuntimeMetrics {
 public:
  // Declares every metric in `registry` (which may hold other metrics too). `catch_up_seconds`
  // is the backlog drain time of the capacity estimate (CapacityEstimator; must be > 0).
  // `pacing` estimates the producer pacing recommendation (lagpilot_recommended_producer_rate,
  // pacing()).
  explicit RuntimeMetrics(std::shared_ptr<prometheus::Registry> registry,
                          double catch_up_seconds = CapacityEstimator::kDefaultCatchUpSeconds,
                          PacingEstimator pacing = PacingEstimator());

  // Control thread, once per tick. `guards` is the controller's config now (bounds may have
  // changed through the API); `override_active` whether a pin is in force at this tick;
  // `tick_duration_seconds` the wall time the tick took; `now_epoch_seconds` Unix time.
  void record_tick(const TickReport& report, const GuardConfig& guards, bool override_active,
                   double tick_duration_seconds, double now_epoch_seconds);

  // The registry in Prometheus text format 0.0.4. Any thread. After the first publish(), the
  // text publish() made (every value is fed once per tick, so serializing once per tick serves
  // every scrape of that tick at the cost of a copy); before it, the registry now.
  std::string render() const;

  // Control thread, once per tick after everything feeding the registry has recorded (this
  // and, under Service, the delivery metrics): serializes the registry for render().
  void publish();

  // A JSON snapshot of the runtime at the last tick, for the HTTP API's /v1/status ("runtime"):
  // partitions (topic, partition, lag, high/low watermark, committed, paused), paused
  // partitions, source counters, tick duration, recommended_replicas and "capacity"
  // (per_worker_rate, rate_measured, needed_workers, catch_up_seconds). {} before the first
  // tick. Any thread.
  nlohmann::json last_tick_status() const;

  // The age of the lag data at `now_epoch_seconds` (Unix time): its age at the last tick plus
  // the time since. -1 before the first tick, or while a partition was never refreshed. Any
  // thread.
  double lag_age_seconds(double now_epoch_seconds) const;

  // The pacing recommendation at the last tick (not available before the first). Any thread.
  PacingRecommendation pacing() const;

  // Every metric family this class declares, in declaration order. Any thread.
  static std::vector<std::string> metric_names();

 private:
  using Labels = std::map<std::string, std::string>;
  void add_delta(prometheus::Counter& counter, uint64_t now_value, uint64_t& last_value);
  void record_latency_histogram(const PoolWindow& window);
  nlohmann::json record_group(const TickReport& report, const GuardConfig& guards,
                              const CapacityEstimator::Estimate& capacity);

  std::shared_ptr<prometheus::Registry> registry_;

  prometheus::Family<prometheus::Gauge>& partition_lag_;
  prometheus::Gauge& total_lag_;
  prometheus::Gauge& assigned_partitions_;
  prometheus::Gauge& paused_partitions_;
  prometheus::Gauge& arrival_rate_;
  prometheus::Gauge& processed_rate_;
  prometheus::Gauge& latency_p50_;
  prometheus::Gauge& latency_p99_;
  prometheus::Gauge& record_age_p99_;
  prometheus::Family<prometheus::Gauge>& workers_;
  prometheus::Gauge& queue_depth_;
  prometheus::Gauge& queue_capacity_;
  prometheus::Gauge& unfinished_;
  prometheus::Family<prometheus::Counter>& scale_events_;
  prometheus::Gauge& override_active_;
  prometheus::Histogram& process_latency_;
  prometheus::Histogram& tick_duration_;
  prometheus::Counter& ticks_;
  prometheus::Counter& ticks_late_;
  prometheus::Counter& ticks_skipped_;
  prometheus::Family<prometheus::Gauge>& policy_info_;
  prometheus::Gauge& worker_throughput_;
  prometheus::Gauge& needed_workers_;
  prometheus::Gauge& recommended_replicas_;
  prometheus::Gauge& last_tick_timestamp_;
  prometheus::Family<prometheus::Gauge>& group_lag_;
  prometheus::Gauge& group_total_lag_;
  prometheus::Gauge& group_partitions_;
  prometheus::Gauge& group_arrival_rate_;
  prometheus::Gauge& group_lag_age_;
  prometheus::Gauge& standby_;
  prometheus::Gauge& partition_skew_;
  prometheus::Gauge& skew_detected_;
  prometheus::Gauge& producer_rate_;
  prometheus::Gauge& producer_burst_;

  // Series created at construction (Family::Add would allocate on every lookup).
  enum WorkerState { kCurrent, kDesired, kProposed, kBusy, kMin, kMax, kWorkerStates };
  prometheus::Gauge* worker_gauges_[kWorkerStates] = {};
  // The source's counters (kSourceCounterSpecs order; nullptr for those not exported).
  static constexpr std::size_t kSourceCounters = std::size(kSourceCounterSpecs);
  prometheus::Counter* source_counters_[kSourceCounters] = {};
  prometheus::Counter* scale_event_counters_[2][2] = {};  // [up, down][policy, override]

  // Control thread only (record_tick).
  CapacityEstimator capacity_;
  PacingEstimator pacing_;
  std::map<std::pair<std::string, int32_t>, prometheus::Gauge*> partition_gauges_;
  std::map<std::string, prometheus::Gauge*> group_topic_gauges_;
  prometheus::Gauge* policy_info_gauge_ = nullptr;
  std::string policy_info_name_;
  uint64_t last_source_counters_[kSourceCounters] = {};  // cumulative values at the last tick

  mutable std::mutex text_mutex_;                      // guards published_text_
  std::shared_ptr<const std::string> published_text_;  // null until the first publish()

  mutable std::mutex status_mutex_;  // guards status_, pacing_now_ and the two below
  double tick_unix_seconds_ = 0;     // when the last tick was recorded (Unix time)
  double lag_age_at_tick_ = -1;      // the lag data's age then; -1 before a tick or unknown
  nlohmann::json status_ = nlohmann::json::object();
  PacingRecommendation pacing_now_;
};

}  // namespace lagpilot
