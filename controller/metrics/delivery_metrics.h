#pragma once
// Prometheus metrics of the sinks' deliveries (controller/sinks/delivery_pipeline.h), fed once
// per tick from the pipeline's cumulative statistics:
//
//   lagpilot_deliveries_total{outcome}          counter; outcome = ok | retry | dead_letter |
//                                               dropped (LAGPILOT_DELIVERY_OUTCOMES)
//   lagpilot_delivery_attempts_total            counter: attempts, first ones and retries
//   lagpilot_sink_pushbacks_total               counter: attempts the sink pushed back
//                                               (429/503, an exec "retry")
//   lagpilot_dead_letter_failures_total         counter: dead-letter produces not acknowledged
//   lagpilot_delivery_backoff_seconds_total     counter: time spent waiting between attempts
//   lagpilot_messages_in_retry                  gauge: messages between a failed attempt and
//                                               their end, now
//   lagpilot_oldest_retry_seconds               gauge: how long the oldest of them has been
//                                               failing (alert on it: "retrying for over N
//                                               minutes")
//   lagpilot_sink_children_restarted_total      counter: exec children started again after one
//                                               failed
//   lagpilot_records_shed_total{reason}         counter: records shed under sustained
//                                               backpressure; reason = age | priority
//                                               (LAGPILOT_SHED_REASONS; shedding.h)
//   lagpilot_shedding_active                    gauge: 1 while shedding is on, else 0
//   lagpilot_batch_size_messages                histogram: messages per batch delivered
//                                               (config "batch"; kBatchSizeBounds)
//
// Per-attempt latency is in lagpilot_process_latency_seconds (RuntimeMetrics), which times the
// whole delivery, retries included.
//
// Thread-safety: record() from one thread at a time (the control thread); the registry renders
// from any thread.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "controller/sinks/delivery_pipeline.h"

namespace lagpilot {

class DeliveryMetrics {
 public:
  explicit DeliveryMetrics(prometheus::Registry& registry);

  void record(const DeliveryStats& stats, uint64_t children_restarted);
  // The shedder's cumulative statistics (control thread, once per tick, when shedding is on).
  void record_shedding(const ShedStats& stats);

  // Every metric family this class declares, in declaration order.
  static std::vector<std::string> metric_names();

 private:
  struct Fed {
    prometheus::Counter* counter;
    uint64_t last = 0;
  };
  void feed(Fed& fed, uint64_t now);

#define LAGPILOT_OUTCOME_COUNT(name, help) +1
  static constexpr int kOutcomes = 0 LAGPILOT_DELIVERY_OUTCOMES(LAGPILOT_OUTCOME_COUNT);
#undef LAGPILOT_OUTCOME_COUNT
  std::array<Fed, kOutcomes> outcomes_{};
  Fed attempts_, pushbacks_, dead_letter_failures_, children_restarted_;
  prometheus::Counter* backoff_seconds_;
  double last_backoff_seconds_ = 0;
  prometheus::Gauge* in_retry_;
  prometheus::Gauge* oldest_retry_seconds_;
  std::array<Fed, kShedReasons> shed_{};
  prometheus::Gauge* shedding_active_;
  prometheus::Histogram* batch_size_;
  uint64_t last_batches_ = 0, last_batch_messages_ = 0;
  decltype(DeliveryStats::batch_size_buckets) last_batch_buckets_{};
};

}  // namespace lagpilot
