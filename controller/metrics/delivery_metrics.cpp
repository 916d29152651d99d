#include "controller/metrics/delivery_metrics.h"

#include "controller/metrics/metric_spec.h"

namespace lagpilot {
namespace {

// The one place where these metric names and help texts live; the table order is the
// declaration order.
enum DeliveryMetricId {
  kDeliveries,
  kAttempts,
  kPushbacks,
  kDeadLetterFailures,
  kBackoffSeconds,
  kInRetry,
  kOldestRetry,
  kChildrenRestarted,
  kRecordsShed,
  kSheddingActive,
  kBatchSize,
  kDeliveryMetricCount
};

constexpr MetricSpec kSpecs[kDeliveryMetricCount] = {
    {"lagpilot_deliveries_total",
     "Delivery outcomes: ok (the sink said done), retry (an attempt failed and was retried), "
     "dead_letter (produced to the dead-letter topic and acknowledged), dropped (a permanent "
     "failure dropped on purpose)."},
    {"lagpilot_delivery_attempts_total", "Delivery attempts, first ones and retries."},
    {"lagpilot_sink_pushbacks_total",
     "Attempts the sink pushed back (HTTP 429 or 503, an exec reply with retry true)."},
    {"lagpilot_dead_letter_failures_total",
     "Dead-letter produces the broker did not acknowledge (each is retried)."},
    {"lagpilot_delivery_backoff_seconds_total", "Seconds spent waiting between attempts."},
    {"lagpilot_messages_in_retry",
     "Messages between a failed attempt and their end (success, dead letter or drop), now."},
    {"lagpilot_oldest_retry_seconds",
     "Seconds since the first failure of the oldest message still in retry (0 when none)."},
    {"lagpilot_sink_children_restarted_total",
     "Exec sink children started again after one exited, hung or answered nonsense."},
    {"lagpilot_records_shed_total",
     "Records shed under sustained backpressure (committed without the sink): age (older than "
     "shedding.max_age_seconds), priority (below shedding.min_priority_under_pressure)."},
    {"lagpilot_shedding_active",
     "1 while shedding is on (backpressure lasted shedding.after_pressure_seconds), else 0."},
    {"lagpilot_batch_size_messages",
     "Messages per batch delivered to the sink (config batch; after shedding), one "
     "observation per batch."},
};

prometheus::Family<prometheus::Counter>& counters(prometheus::Registry& r, DeliveryMetricId id) {
  return counter_family(r, kSpecs[id]);
}

prometheus::Family<prometheus::Gauge>& gauges(prometheus::Registry& r, DeliveryMetricId id) {
  return gauge_family(r, kSpecs[id]);
}

}  // namespace

DeliveryMetrics::DeliveryMetrics(prometheus::Registry& r) {
  auto& deliveries = counters(r, kDeliveries);
  int i = 0;
#define LAGPILOT_OUTCOME_SERIES(name, help) \
  outcomes_[i++].counter = &deliveries.Add({{"outcome", #name}});
  LAGPILOT_DELIVERY_OUTCOMES(LAGPILOT_OUTCOME_SERIES)
#undef LAGPILOT_OUTCOME_SERIES
  attempts_.counter = &counters(r, kAttempts).Add({});
  pushbacks_.counter = &counters(r, kPushbacks).Add({});
  dead_letter_failures_.counter = &counters(r, kDeadLetterFailures).Add({});
  backoff_seconds_ = &counters(r, kBackoffSeconds).Add({});
  in_retry_ = &gauges(r, kInRetry).Add({});
  oldest_retry_seconds_ = &gauges(r, kOldestRetry).Add({});
  children_restarted_.counter = &counters(r, kChildrenRestarted).Add({});
  auto& shed = counters(r, kRecordsShed);
  for (int k = 0; k < kShedReasons; ++k) {
    shed_[k].counter = &shed.Add({{"reason", shed_reason_name(static_cast<ShedReason>(k))}});
  }
  shedding_active_ = &gauges(r, kSheddingActive).Add({});
  batch_size_ = &prometheus::BuildHistogram()
                     .Name(kSpecs[kBatchSize].name)
                     .Help(kSpecs[kBatchSize].help)
                     .Register(r)
                     .Add({}, prometheus::Histogram::BucketBoundaries(kBatchSizeBounds.begin(),
                                                                      kBatchSizeBounds.end()));
}

void DeliveryMetrics::record_shedding(const ShedStats& s) {
  for (int k = 0; k < kShedReasons; ++k) feed(shed_[k], s.shed[k]);
  shedding_active_->Set(s.active ? 1.0 : 0.0);
}

void DeliveryMetrics::feed(Fed& fed, uint64_t now) {
  // A value below the last one is a new source: take it whole (Prometheus's own reset rule).
  fed.counter->Increment(static_cast<double>(now >= fed.last ? now - fed.last : now));
  fed.last = now;
}

void DeliveryMetrics::record(const DeliveryStats& s, uint64_t children_restarted) {
  int i = 0;
#define LAGPILOT_OUTCOME_FEED(name, help) feed(outcomes_[i++], s.name);
  LAGPILOT_DELIVERY_OUTCOMES(LAGPILOT_OUTCOME_FEED)
#undef LAGPILOT_OUTCOME_FEED
  feed(attempts_, s.attempts);
  feed(pushbacks_, s.pushbacks);
  feed(dead_letter_failures_, s.dead_letter_failures);
  feed(children_restarted_, children_restarted);
  if (s.backoff_seconds > last_backoff_seconds_) {
    backoff_seconds_->Increment(s.backoff_seconds - last_backoff_seconds_);
  }
  last_backoff_seconds_ = s.backoff_seconds;
  in_retry_->Set(static_cast<double>(s.in_retry));
  oldest_retry_seconds_->Set(s.oldest_retry_seconds);
  // The batch sizes since the last record(), as bucket increments.
  if (s.batches > last_batches_) {
    std::vector<double> increments(s.batch_size_buckets.size());
    for (std::size_t k = 0; k < increments.size(); ++k) {
      increments[k] = static_cast<double>(s.batch_size_buckets[k] - last_batch_buckets_[k]);
    }
    batch_size_->ObserveMultiple(increments,
                                 static_cast<double>(s.batch_messages - last_batch_messages_));
    last_batches_ = s.batches;
    last_batch_buckets_ = s.batch_size_buckets;
    last_batch_messages_ = s.batch_messages;
  }
}

std::vector<std::string> DeliveryMetrics::metric_names() {
  std::vector<std::string> names;
  for (const MetricSpec& spec : kSpecs) names.emplace_back(spec.name);
  return names;
}

}  // namespace lagpilot
