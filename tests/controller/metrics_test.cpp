// RuntimeMetrics: counters fed by deltas, scale events, the capacity estimate behind
// lagpilot_recommended_replicas, the text page.
#include "controller/metrics/metrics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "controller/steady_clock.h"
#include "tests/common/ci_skip.h"

namespace lagpilot {
namespace {

// The value of one series ("name" or "name{labels}") in the text page; NaN if absent.
double sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return std::nan("");
}

bool has_series(const std::string& text, const std::string& series) {
  return !std::isnan(sample(text, series));
}

TickReport report(int previous, int workers, int policy_workers,
                  const std::string& source = "policy") {
  TickReport r;
  r.observation.time = 10;
  r.observation.current_workers = previous;
  r.decision.previous_workers = previous;
  r.decision.workers = workers;
  r.decision.policy_workers = policy_workers;
  r.decision.policy = "pid";
  r.decision.source = source;
  return r;
}

PartitionStatus partition(const std::string& topic, int32_t p, int64_t lag, bool paused = false) {
  PartitionStatus s;
  s.topic = topic;
  s.partition = p;
  s.lag = lag;
  s.paused = paused;
  return s;
}

struct MetricsFixture {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  RuntimeMetrics metrics{registry};
  GuardConfig guards;
  void tick(const TickReport& r, bool override_active = false) {
    metrics.record_tick(r, guards, override_active, 0.002, 1.7e9);
  }
};

// The group view: lag per topic and in total, standby, and skew (the pool at its max on this
// member's hot partition while the rest of the group idles).
TickReport group_report(int workers, double busy, int own_partitions) {
  TickReport r = report(workers, workers, workers);
  r.observation.busy_workers = busy;
  r.source.assigned_partitions = own_partitions;
  for (int i = 0; i < own_partitions; ++i) r.source.partitions.push_back(partition("t", i, 10));
  GroupLagView& g = r.source.group;
  g.known = true;
  g.age_seconds = 0.4;
  g.total_lag = 900;
  for (int i = 0; i < 6; ++i) g.partitions.push_back({"t", i, 1000, 850, 150});
  g.topics = {{"t", 6, 900}};
  r.group.arrival_rate = 1200;
  r.group.hottest_partition = "t[0]";
  r.group.hottest_rate = 700;
  r.group.mean_partition_rate = 200;
  r.group.own_partition_share = own_partitions / 6.0;
  r.group.own_arrival_share = own_partitions > 0 ? 700.0 / 1200 : 0;
  return r;
}

// Scrapes between two ticks read the text published at the last tick: a value recorded after
// it (another recorder sharing the registry, or the next tick) shows only once published.
TEST(RuntimeMetrics, ScrapesReadTheTextPublishedAtTheTick) {
  MetricsFixture f;
  f.guards.max_workers = 16;
  f.tick(group_report(16, 15.8, 1));
  EXPECT_EQ(sample(f.metrics.render(), "lagpilot_group_partitions"), 6);  // live before publish
  f.metrics.publish();
  TickReport next = group_report(16, 15.8, 1);
  next.source.group.partitions.pop_back();
  f.tick(next);
  EXPECT_EQ(sample(f.metrics.render(), "lagpilot_group_partitions"), 6) << "not yet published";
  f.metrics.publish();
  EXPECT_EQ(sample(f.metrics.render(), "lagpilot_group_partitions"), 5);
}

TEST(RuntimeMetrics, GroupLagStandbyAndSkewAreExportedAndInTheStatus) {
  MetricsFixture f;
  f.guards.max_workers = 16;
  f.tick(group_report(16, 15.8, 1));  // pool at max, one of six partitions, 58 % of arrivals
  const std::string text = f.metrics.render();
  EXPECT_EQ(sample(text, "lagpilot_group_lag"), 900);
  EXPECT_EQ(sample(text, "lagpilot_group_lag{topic=\"t\"}"), 900);
  EXPECT_EQ(sample(text, "lagpilot_group_partitions"), 6);
  EXPECT_EQ(sample(text, "lagpilot_group_arrival_rate_messages_per_second"), 1200);
  EXPECT_EQ(sample(text, "lagpilot_standby"), 0);
  EXPECT_DOUBLE_EQ(sample(text, "lagpilot_partition_skew_ratio"), 3.5);
  EXPECT_EQ(sample(text, "lagpilot_partition_skew_detected"), 1);
  auto status = f.metrics.last_tick_status();
  EXPECT_EQ(status["role"], "active");
  EXPECT_EQ(status["group"]["total_lag"], 900);
  EXPECT_TRUE(status["group"]["skew"]["detected"].get<bool>());
  EXPECT_NE(status["group"]["skew"]["advice"].get<std::string>().find("t[0]"), std::string::npos);
  // The same group with this member's pool far from its max: no skew finding.
  f.tick(group_report(8, 7.9, 1));
  EXPECT_EQ(sample(f.metrics.render(), "lagpilot_partition_skew_detected"), 0);
  // A member with no partitions: a standby, which still reports the group's lag.
  f.tick(group_report(4, 0, 0));
  EXPECT_EQ(sample(f.metrics.render(), "lagpilot_standby"), 1);
  status = f.metrics.last_tick_status();
  EXPECT_EQ(status["role"], "standby");
  EXPECT_EQ(status["group"]["total_lag"], 900);
  EXPECT_FALSE(status["group"]["skew"]["detected"].get<bool>());
}

TEST(RuntimeMetrics, CountersFollowTheDeltasOfCumulativeSourceCounters) {
  MetricsFixture f;
  auto r = report(4, 4, 4);
  r.source.processed = 10;
  r.source.failed = 1;
  r.source.consumed = 12;
  r.source.lost_to_retention = 0;
  r.source.commits = 3;
  f.tick(r);
  std::string text = f.metrics.render();
  EXPECT_EQ(sample(text, "lagpilot_messages_processed_total"), 10);
  EXPECT_EQ(sample(text, "lagpilot_messages_failed_total"), 1);
  EXPECT_EQ(sample(text, "lagpilot_messages_consumed_total"), 12);
  EXPECT_EQ(sample(text, "lagpilot_offset_commits_total{result=\"success\"}"), 3);
  EXPECT_EQ(sample(text, "lagpilot_offset_commits_total{result=\"failure\"}"), 0);

  r.source.processed = 25;
  r.source.lost_to_retention = 7;
  f.tick(r);
  text = f.metrics.render();
  EXPECT_EQ(sample(text, "lagpilot_messages_processed_total"), 25);
  EXPECT_EQ(sample(text, "lagpilot_messages_lost_to_retention_total"), 7);
  EXPECT_EQ(sample(text, "lagpilot_messages_failed_total"), 1);  // unchanged source value

  // A cumulative value that went down is a new source: all of it counts.
  r.source.processed = 5;
  f.tick(r);
  text = f.metrics.render();
  EXPECT_EQ(sample(text, "lagpilot_messages_processed_total"), 30);
  EXPECT_EQ(sample(text, "lagpilot_controller_ticks_total"), 3);
}

TEST(RuntimeMetrics, ScaleEventsAreCountedByDirectionAndSource) {
  MetricsFixture f;
  f.tick(report(4, 8, 8));                     // up, policy
  f.tick(report(8, 8, 8));                     // no change
  f.tick(report(8, 12, 8, "override"), true);  // up, override
  f.tick(report(12, 6, 6, "override"), true);  // down, override
  f.tick(report(6, 5, 5));                     // down, policy
  f.tick(report(5, 4, 4));                     // down, policy
  const std::string text = f.metrics.render();
  EXPECT_EQ(sample(text, "lagpilot_scale_events_total{direction=\"up\",source=\"policy\"}"), 1);
  EXPECT_EQ(sample(text, "lagpilot_scale_events_total{direction=\"up\",source=\"override\"}"), 1);
  EXPECT_EQ(sample(text, "lagpilot_scale_events_total{direction=\"down\",source=\"override\"}"), 1);
  EXPECT_EQ(sample(text, "lagpilot_scale_events_total{direction=\"down\",source=\"policy\"}"), 2);
  EXPECT_EQ(sample(text, "lagpilot_override_active"), 0);  // the last tick had none
}

TEST(CapacityEstimator, RecommendedReplicasIsNeededWorkersOverTheMaximumRoundedUp) {
  EXPECT_EQ(CapacityEstimator::recommended_replicas(40, 16), 3);
  EXPECT_EQ(CapacityEstimator::recommended_replicas(32, 16), 2);
  EXPECT_EQ(CapacityEstimator::recommended_replicas(32.5, 16), 3);
  EXPECT_EQ(CapacityEstimator::recommended_replicas(16, 16), 1);
  EXPECT_EQ(CapacityEstimator::recommended_replicas(16.0000000001, 16), 1);  // rounding noise
  EXPECT_EQ(CapacityEstimator::recommended_replicas(0.2, 16), 1);
  EXPECT_EQ(CapacityEstimator::recommended_replicas(0, 16), 1);
  EXPECT_EQ(CapacityEstimator::recommended_replicas(-3, 16), 1);
  EXPECT_EQ(CapacityEstimator::recommended_replicas(std::nan(""), 16), 1);
  EXPECT_EQ(CapacityEstimator::recommended_replicas(5, 0), 5);
  EXPECT_EQ(CapacityEstimator::recommended_replicas(HUGE_VAL, 10),
            static_cast<int>(CapacityEstimator::kMaxNeededWorkers / 10));
}

Observation load(double arrival, int64_t lag, double processed, double busy, int workers) {
  Observation o;
  o.arrival_rate = arrival;
  o.total_lag = lag;
  o.processed_rate = processed;
  o.busy_workers = busy;
  o.current_workers = workers;
  return o;
}

TEST(CapacityEstimator, NeedsWhatKeepsUpAndDrainsTheBacklogInTheCatchUpTime) {
  CapacityEstimator estimator(60);
  // 400/s from 4 busy workers (of 16: idle ones do not dilute the rate) = 100/s per worker.
  // Demand: 2000/s arriving + 60000 behind / 60 s = 3000/s -> 30 workers -> 2 processes of 16.
  auto e = estimator.update(load(2000, 60000, 400, 4, 16), 16);
  EXPECT_TRUE(e.rate_measured);
  EXPECT_DOUBLE_EQ(e.per_worker_rate, 100);
  EXPECT_DOUBLE_EQ(e.needed_workers, 30);
  EXPECT_EQ(e.recommended_replicas, 2);
  // The same load with a per-process maximum of 8: 4 processes.
  EXPECT_EQ(estimator.update(load(2000, 60000, 400, 4, 16), 8).recommended_replicas, 4);
  // A shorter catch-up time asks for more.
  CapacityEstimator hurried(10);
  e = hurried.update(load(2000, 60000, 400, 4, 16), 16);
  EXPECT_DOUBLE_EQ(e.needed_workers, 80);  // (2000 + 6000) / 100
  EXPECT_EQ(e.recommended_replicas, 5);
  // Light load: fewer workers than the pool has, still one process.
  e = estimator.update(load(150, 0, 150, 1.5, 8), 16);
  EXPECT_DOUBLE_EQ(e.needed_workers, 1.5);
  EXPECT_EQ(e.recommended_replicas, 1);
  // Nothing arriving, nothing behind: nothing needed (but never fewer than one process).
  e = estimator.update(load(0, 0, 0, 0, 8), 16);
  EXPECT_DOUBLE_EQ(e.needed_workers, 0);
  EXPECT_EQ(e.recommended_replicas, 1);
  EXPECT_DOUBLE_EQ(estimator.catch_up_seconds(), 60);
}

TEST(CapacityEstimator, WithoutAMeasurableRateItKeepsThePreviousOne) {
  CapacityEstimator estimator(60);
  // No data yet (nothing processed, nobody busy): no rate; needed is the pool as it is.
  auto e = estimator.update(load(5000, 90000, 0, 0, 6), 16);
  EXPECT_FALSE(e.rate_measured);
  EXPECT_DOUBLE_EQ(e.per_worker_rate, 0);
  EXPECT_DOUBLE_EQ(e.needed_workers, 6);
  EXPECT_EQ(e.recommended_replicas, 1);
  // Too little busy time to measure (below kMinBusyWorkers): still no rate.
  e = estimator.update(load(5000, 90000, 3, CapacityEstimator::kMinBusyWorkers / 2, 6), 16);
  EXPECT_FALSE(e.rate_measured);
  EXPECT_DOUBLE_EQ(e.needed_workers, 6);

  // First measurable tick: 50/s per worker.
  e = estimator.update(load(1000, 0, 200, 4, 6), 16);
  ASSERT_TRUE(e.rate_measured);
  EXPECT_DOUBLE_EQ(e.per_worker_rate, 50);
  EXPECT_DOUBLE_EQ(e.needed_workers, 20);
  EXPECT_EQ(e.recommended_replicas, 2);
  // A stalled pool (nothing finished, nobody busy) keeps 50/s and sizes the new demand with it.
  e = estimator.update(load(1000, 120000, 0, 0, 6), 16);
  EXPECT_DOUBLE_EQ(e.per_worker_rate, 50);
  EXPECT_DOUBLE_EQ(e.needed_workers, 60);  // (1000 + 2000) / 50
  EXPECT_EQ(e.recommended_replicas, 4);
  // Non-finite inputs are no data: the rate is kept, a NaN arrival rate counts as 0, and a
  // negative lag as 0.
  e = estimator.update(load(std::nan(""), -50, std::nan(""), 3, 6), 16);
  EXPECT_DOUBLE_EQ(e.per_worker_rate, 50);
  EXPECT_DOUBLE_EQ(e.needed_workers, 0);
  e = estimator.update(load(1000, 0, HUGE_VAL, 3, 6), 16);
  EXPECT_DOUBLE_EQ(e.per_worker_rate, 50);
  EXPECT_DOUBLE_EQ(e.needed_workers, 20);
  EXPECT_DOUBLE_EQ(estimator.last().needed_workers, 20);
}

TEST(CapacityEstimator, ANearlyZeroRateIsCappedNotOverflowed) {
  CapacityEstimator estimator(60);
  const auto& e = estimator.update(load(1000, 0, 1e-9, 1, 4), 16);
  EXPECT_DOUBLE_EQ(e.needed_workers, CapacityEstimator::kMaxNeededWorkers);
  EXPECT_EQ(e.recommended_replicas, static_cast<int>(CapacityEstimator::kMaxNeededWorkers / 16));
}

TEST(CapacityEstimator, RejectsANonPositiveCatchUpTime) {
  EXPECT_THROW(CapacityEstimator(0), std::invalid_argument);
  EXPECT_THROW(CapacityEstimator(-5), std::invalid_argument);
  EXPECT_THROW(CapacityEstimator(std::nan("")), std::invalid_argument);
  EXPECT_THROW(RuntimeMetrics(std::make_shared<prometheus::Registry>(), 0), std::invalid_argument);
}

TEST(RuntimeMetrics, RecommendedReplicasComesFromTheObservationNotTheProposal) {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  RuntimeMetrics metrics(registry, 30);
  GuardConfig guards;
  guards.max_workers = 16;
  // Before any tick: one replica, nothing measured.
  std::string text = metrics.render();
  EXPECT_EQ(sample(text, "lagpilot_recommended_replicas"), 1);
  EXPECT_EQ(sample(text, "lagpilot_worker_throughput_messages_per_second"), 0);

  // The policy asks for 40 (clamped to 16) while the load needs little: one replica.
  auto r = report(16, 16, 40);
  r.observation = load(300, 0, 300, 3, 16);
  metrics.record_tick(r, guards, false, 0.001, 1.7e9);
  text = metrics.render();
  EXPECT_EQ(sample(text, "lagpilot_worker_throughput_messages_per_second"), 100);
  EXPECT_EQ(sample(text, "lagpilot_needed_workers"), 3);
  EXPECT_EQ(sample(text, "lagpilot_recommended_replicas"), 1);
  EXPECT_EQ(sample(text, "lagpilot_workers{state=\"proposed\"}"), 40);

  // Saturated at 16 with a growing backlog: (3000 + 36000 / 30) / 100 = 42 -> 3 replicas.
  r.observation = load(3000, 36000, 1600, 16, 16);
  metrics.record_tick(r, guards, false, 0.001, 1.7e9 + 1);
  text = metrics.render();
  EXPECT_EQ(sample(text, "lagpilot_needed_workers"), 42);
  EXPECT_EQ(sample(text, "lagpilot_recommended_replicas"), 3);
  EXPECT_EQ(metrics.last_tick_status()["recommended_replicas"], 3);
  EXPECT_EQ(metrics.last_tick_status()["capacity"]["needed_workers"], 42.0);
  EXPECT_EQ(metrics.last_tick_status()["capacity"]["catch_up_seconds"], 30.0);

  // An operator lowers the bound to 8: the same load needs 6 processes.
  guards.max_workers = 8;
  metrics.record_tick(r, guards, false, 0.001, 1.7e9 + 2);
  EXPECT_EQ(sample(metrics.render(), "lagpilot_recommended_replicas"), 6);
}

TEST(RuntimeMetrics, GaugesReflectTheLastTick) {
  MetricsFixture f;
  f.guards.min_workers = 3;
  f.guards.max_workers = 12;
  auto r = report(5, 7, 7);
  r.observation.total_lag = 1234;
  r.observation.arrival_rate = 500;
  r.observation.processed_rate = 450;
  r.observation.latency_p50 = 0.004;
  r.observation.latency_p99 = 0.02;
  r.observation.record_age_p99 = 1.5;
  r.observation.busy_workers = 4.5;
  r.observation.queue_depth = 70;
  r.observation.queue_capacity = 100;
  r.source.partitions = {partition("events", 0, 1000), partition("events", 1, 234, true)};
  r.source.assigned_partitions = 2;
  r.source.unfinished = 90;
  f.metrics.record_tick(r, f.guards, true, 0.003, 1.7e9 + 5);
  const std::string text = f.metrics.render();
  EXPECT_EQ(sample(text, "lagpilot_consumer_total_lag"), 1234);
  EXPECT_EQ(sample(text, "lagpilot_consumer_lag{partition=\"0\",topic=\"events\"}"), 1000);
  EXPECT_EQ(sample(text, "lagpilot_consumer_lag{partition=\"1\",topic=\"events\"}"), 234);
  EXPECT_EQ(sample(text, "lagpilot_assigned_partitions"), 2);
  EXPECT_EQ(sample(text, "lagpilot_paused_partitions"), 1);
  EXPECT_EQ(sample(text, "lagpilot_arrival_rate_messages_per_second"), 500);
  EXPECT_EQ(sample(text, "lagpilot_processed_rate_messages_per_second"), 450);
  EXPECT_DOUBLE_EQ(sample(text, "lagpilot_process_latency_p50_seconds"), 0.004);
  EXPECT_DOUBLE_EQ(sample(text, "lagpilot_process_latency_p99_seconds"), 0.02);
  EXPECT_DOUBLE_EQ(sample(text, "lagpilot_record_age_p99_seconds"), 1.5);
  EXPECT_EQ(sample(text, "lagpilot_workers{state=\"current\"}"), 5);
  EXPECT_EQ(sample(text, "lagpilot_workers{state=\"busy\"}"), 4.5);
  EXPECT_EQ(sample(text, "lagpilot_workers{state=\"min\"}"), 3);
  EXPECT_EQ(sample(text, "lagpilot_workers{state=\"max\"}"), 12);
  EXPECT_EQ(sample(text, "lagpilot_queue_depth_messages"), 70);
  EXPECT_EQ(sample(text, "lagpilot_queue_capacity_messages"), 100);
  EXPECT_EQ(sample(text, "lagpilot_unfinished_messages"), 90);
  EXPECT_EQ(sample(text, "lagpilot_override_active"), 1);
  EXPECT_EQ(sample(text, "lagpilot_last_tick_timestamp_seconds"), 1.7e9 + 5);
  EXPECT_EQ(sample(text, "lagpilot_policy_info{policy=\"pid\"}"), 1);
  EXPECT_EQ(sample(text, "lagpilot_controller_tick_duration_seconds_count"), 1);
  EXPECT_DOUBLE_EQ(sample(text, "lagpilot_controller_tick_duration_seconds_sum"), 0.003);
  EXPECT_EQ(sample(text, "lagpilot_controller_tick_duration_seconds_bucket{le=\"0.0025\"}"), 0);
  EXPECT_EQ(sample(text, "lagpilot_controller_tick_duration_seconds_bucket{le=\"0.005\"}"), 1);

  const nlohmann::json status = f.metrics.last_tick_status();
  EXPECT_EQ(status["assigned_partitions"], 2);
  EXPECT_EQ(status["partitions"].size(), 2u);
  ASSERT_EQ(status["paused_partitions"].size(), 1u);
  EXPECT_EQ(status["paused_partitions"][0]["partition"], 1);
  EXPECT_EQ(status["unfinished"], 90);
}

TEST(RuntimeMetrics, RevokedPartitionsAndOldPoliciesLeaveNoSeries) {
  MetricsFixture f;
  auto r = report(4, 4, 4);
  r.source.partitions = {partition("events", 0, 10), partition("events", 1, 20)};
  f.tick(r);
  ASSERT_TRUE(
      has_series(f.metrics.render(), "lagpilot_consumer_lag{partition=\"1\",topic=\"events\"}"));
  r.source.partitions = {partition("events", 0, 5)};
  r.decision.policy = "threshold";
  f.tick(r);
  const std::string text = f.metrics.render();
  EXPECT_EQ(sample(text, "lagpilot_consumer_lag{partition=\"0\",topic=\"events\"}"), 5);
  EXPECT_FALSE(has_series(text, "lagpilot_consumer_lag{partition=\"1\",topic=\"events\"}"));
  EXPECT_EQ(sample(text, "lagpilot_policy_info{policy=\"threshold\"}"), 1);
  EXPECT_FALSE(has_series(text, "lagpilot_policy_info{policy=\"pid\"}"));
}

TEST(RuntimeMetrics, PerPartitionLagFallsBackToTheObservation) {
  MetricsFixture f;
  auto r = report(4, 4, 4);
  r.observation.partition_lag = {{"orders", 3, 42}};
  f.tick(r);
  EXPECT_EQ(sample(f.metrics.render(), "lagpilot_consumer_lag{partition=\"3\",topic=\"orders\"}"),
            42);
}

// Every declared family is on the page with HELP and TYPE, and every sample line parses.
// The pool's fine run-time histogram lands in the exported histogram: counts per exported bucket
// (cumulative in the text), count and sum, accumulated over ticks.
TEST(RuntimeMetrics, ProcessLatencyHistogramFollowsThePoolWindow) {
  SteadyClock clock;
  WorkerPool pool(WorkerPoolOptions{1, 1, 10, 0.8, 0.2}, clock);
  // 0.0002 s and 0.0003 s: <= 0.00025 only if the fine bucket's upper bound is; 0.003 and
  // 0.004: in (0.0025, 0.005]; 20 s: in (10, 30].
  const std::vector<double> runs = {0.0002, 0.003, 0.004, 20.0};
  pool.record_items(runs);
  MetricsFixture f;
  auto r = report(4, 4, 4);
  r.pool = pool.take_window();
  ASSERT_EQ(r.pool.completed, runs.size());
  f.tick(r);
  std::string text = f.metrics.render();
  const std::string name = "lagpilot_process_latency_seconds";
  EXPECT_EQ(sample(text, name + "_count"), 4);
  EXPECT_NEAR(sample(text, name + "_sum"), 20.0072, 1e-6);
  EXPECT_EQ(sample(text, name + "_bucket{le=\"0.0001\"}"), 0);
  EXPECT_EQ(sample(text, name + "_bucket{le=\"0.00025\"}"), 1);
  EXPECT_EQ(sample(text, name + "_bucket{le=\"0.0025\"}"), 1);
  EXPECT_EQ(sample(text, name + "_bucket{le=\"0.005\"}"), 3);
  EXPECT_EQ(sample(text, name + "_bucket{le=\"10\"}"), 3);
  EXPECT_EQ(sample(text, name + "_bucket{le=\"30\"}"), 4);
  EXPECT_EQ(sample(text, name + "_bucket{le=\"+Inf\"}"), 4);
  // A second tick adds to it; an empty window changes nothing.
  pool.record_items(std::vector<double>{0.003});
  r.pool = pool.take_window();
  f.tick(r);
  r.pool = pool.take_window();
  f.tick(r);
  text = f.metrics.render();
  EXPECT_EQ(sample(text, name + "_count"), 5);
  EXPECT_EQ(sample(text, name + "_bucket{le=\"0.005\"}"), 4);
}

TEST(RuntimeMetrics, TextPageDeclaresEveryMetricAndParses) {
  MetricsFixture f;
  auto r = report(4, 6, 6);
  r.source.partitions = {partition("events", 0, 10)};
  f.tick(r);
  const std::string text = f.metrics.render();
  const std::vector<std::string> names = RuntimeMetrics::metric_names();
  // The names the operator docs and alerts rely on.
  for (const char* required : {"lagpilot_consumer_lag",
                               "lagpilot_consumer_total_lag",
                               "lagpilot_process_latency_p99_seconds",
                               "lagpilot_process_latency_seconds",
                               "lagpilot_record_age_p99_seconds",
                               "lagpilot_workers",
                               "lagpilot_queue_depth_messages",
                               "lagpilot_queue_capacity_messages",
                               "lagpilot_paused_partitions",
                               "lagpilot_messages_processed_total",
                               "lagpilot_messages_failed_total",
                               "lagpilot_messages_lost_to_retention_total",
                               "lagpilot_scale_events_total",
                               "lagpilot_override_active",
                               "lagpilot_controller_tick_duration_seconds",
                               "lagpilot_policy_info",
                               "lagpilot_recommended_replicas",
                               "lagpilot_needed_workers",
                               "lagpilot_worker_throughput_messages_per_second",
                               "lagpilot_last_tick_timestamp_seconds"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  }
  for (const std::string& name : names) {
    EXPECT_NE(text.find("# HELP " + name + " "), std::string::npos) << name;
    EXPECT_NE(text.find("# TYPE " + name + " "), std::string::npos) << name;
    // Conventions: counters end in _total, nothing else does.
    const bool is_counter = text.find("# TYPE " + name + " counter") != std::string::npos;
    const bool ends_total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
    EXPECT_EQ(is_counter, ends_total) << name;
  }
  const std::regex sample_line(
      R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? [-+]?([0-9.eE+-]+|Inf|NaN)$)");
  std::istringstream in(text);
  std::string line;
  int samples = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_TRUE(std::regex_match(line, sample_line)) << line;
    ++samples;
  }
  EXPECT_GT(samples, static_cast<int>(names.size()));
}

// promtool's linter (naming, units, HELP) when it is installed.
TEST(RuntimeMetrics, PromtoolAcceptsTheTextPage) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    LAGPILOT_SKIP_UNLESS_CI("promtool not installed (Debian package prometheus)");
  }
  MetricsFixture f;
  auto r = report(4, 6, 6);
  r.source.partitions = {partition("events", 0, 10)};
  f.tick(r);
  const std::string path = "/tmp/lagpilot-metrics-test-" + std::to_string(::getpid()) + ".txt";
  {
    std::ofstream out(path);
    out << f.metrics.render();
  }
  const std::string command = "promtool check metrics < " + path + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[256];
  while (std::fgets(buf, sizeof buf, pipe)) output += buf;
  const int status = ::pclose(pipe);
  std::remove(path.c_str());
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output, "");
}

}  // namespace
}  // namespace lagpilot

namespace lagpilot {
namespace {

TEST(CapacityEstimator, GroupWideReplicasComeFromTheWholeGroupAndStopAtThePartitionCount) {
  CapacityEstimator estimator(60);
  // This member: 100/s per worker, its own partitions need 10 workers (1 process of 16).
  // The group: 3000/s + 120000 behind / 60 s = 5000/s -> 50 workers -> 4 processes of 16.
  const CapacityEstimator::GroupDemand group{3000, 120000, 12};
  auto e = estimator.update(load(1000, 0, 400, 4, 16), 16, &group);
  EXPECT_TRUE(e.group_wide);
  EXPECT_DOUBLE_EQ(e.needed_workers, 10);
  EXPECT_DOUBLE_EQ(e.group_needed_workers, 50);
  EXPECT_EQ(e.recommended_replicas, 4);
  // The same demand on 3 partitions: a fourth member would get none.
  const CapacityEstimator::GroupDemand narrow{3000, 120000, 3};
  EXPECT_EQ(estimator.update(load(1000, 0, 400, 4, 16), 16, &narrow).recommended_replicas, 3);
  // Without the group's figures: this member's own load.
  e = estimator.update(load(1000, 0, 400, 4, 16), 16);
  EXPECT_FALSE(e.group_wide);
  EXPECT_EQ(e.recommended_replicas, 1);
}

TEST(CapacityEstimator, AStandbyThatHasMeasuredNothingRecommendsOne) {
  CapacityEstimator estimator(60);
  // No partitions, nothing processed: no per-worker rate, whatever the group's backlog.
  const CapacityEstimator::GroupDemand group{3000, 900000, 12};
  const auto e = estimator.update(load(0, 0, 0, 0, 4), 16, &group);
  EXPECT_FALSE(e.rate_measured);
  EXPECT_TRUE(e.group_wide);
  EXPECT_EQ(e.recommended_replicas, 1);  // the max over members ignores it
}

}  // namespace
}  // namespace lagpilot
