// The trace reader's lag reconstruction: arrivals recovered from a lag recording and a companion
// (the processed rate, or the worker count times a per-worker rate), on synthetic recordings
// whose arrivals are known.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sim/trace_reader.h"
#include "tests/sim/trace_test_files.h"

namespace lagpilot::sim {
namespace {

using testing::expect_rates;
using testing::load_error;
using testing::TempDir;

// Writes "timestamp,__name__,value" rows.
std::string prometheus_csv(const std::string& name, double t0, double step,
                           const std::vector<double>& values) {
  std::ostringstream out;
  out.precision(17);
  out << "timestamp,__name__,value\n";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out << t0 + step * static_cast<double>(i) << ',' << name << ',';
    if (std::isnan(values[i])) {
      out << "NaN";
    } else {
      out << values[i];
    }
    out << '\n';
  }
  return out.str();
}

std::string two_column_csv(const std::string& value_name, double t0, double step,
                           const std::vector<double>& values) {
  std::ostringstream out;
  out.precision(17);
  out << "timestamp," << value_name << "\r\n";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out << t0 + step * static_cast<double>(i) << ',' << values[i] << "\r\n";
  }
  return out.str();
}

// Random arrivals (messages/s per bin) around `mean`, seeded.
std::vector<double> random_arrivals(std::size_t bins, double mean, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> factor(0.2, 1.8);
  std::vector<double> rates(bins);
  for (double& r : rates) r = mean * factor(rng);
  return rates;
}

TEST(TraceReaderLag, ProcessedRateCompanionReconstructsArrivalsExactly) {
  const double t0 = 1700000000, step = 15;
  const std::vector<double> arrivals = random_arrivals(200, 1000, 7);
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> drain(0.8, 1.2);
  std::vector<double> processed(arrivals.size()), lag = {100000};
  for (std::size_t k = 0; k < arrivals.size(); ++k) {
    processed[k] = arrivals[k] * drain(rng);  // sometimes behind, sometimes catching up
    lag.push_back(lag.back() + (arrivals[k] - processed[k]) * step);
    ASSERT_GT(lag.back(), 0);
  }
  TempDir dir;
  TraceLoadOptions options;
  options.companion =
      dir.write("processed.csv", two_column_csv("records_consumed_rate", t0, step, processed));
  const LoadedTrace loaded = load_trace_with_stats(
      dir.write("lag.csv", prometheus_csv("consumer_lag", t0, step, lag)), options);
  EXPECT_EQ(loaded.stats.format, "lag");
  EXPECT_EQ(loaded.stats.companion_kind, "processed_rate");
  EXPECT_EQ(loaded.stats.clamped_bins, 0u);
  EXPECT_EQ(loaded.stats.trimmed_bins, 0u);
  const Trace& t = loaded.trace;
  EXPECT_DOUBLE_EQ(t.start_epoch, t0);
  EXPECT_DOUBLE_EQ(t.bin_seconds, step);
  ASSERT_EQ(t.rates.size(), arrivals.size());
  for (std::size_t k = 0; k < arrivals.size(); ++k) EXPECT_NEAR(t.rates[k], arrivals[k], 1e-6);
}

TEST(TraceReaderLag, WorkerCompanionSampledFasterThanTheLag) {
  // Lag every 30 s, worker count every 10 s (changing between samples of the lag).
  const double t0 = 1600000000, step = 30, rate = 250;
  const std::vector<double> arrivals = random_arrivals(100, 2000, 3);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> count(4, 12);
  std::vector<double> workers(3 * arrivals.size());
  for (double& w : workers) w = count(rng);
  std::vector<double> lag = {500000};
  for (std::size_t k = 0; k < arrivals.size(); ++k) {
    const double capacity = (workers[3 * k] + workers[3 * k + 1] + workers[3 * k + 2]) * rate * 10;
    lag.push_back(lag.back() + arrivals[k] * step - capacity);
    ASSERT_GT(lag.back(), 0);  // saturated all along, so the reconstruction is exact
  }
  TempDir dir;
  TraceLoadOptions options;
  options.format = "lag";
  options.companion =
      dir.write("replicas.csv", prometheus_csv("kube_deployment_replicas", t0, 10, workers));
  options.per_worker_rate = rate;
  const LoadedTrace loaded =
      load_trace_with_stats(dir.write("lag.csv", two_column_csv("lag", t0, step, lag)), options);
  EXPECT_EQ(loaded.stats.companion_kind, "workers");
  ASSERT_EQ(loaded.trace.rates.size(), arrivals.size());
  for (std::size_t k = 0; k < arrivals.size(); ++k) {
    EXPECT_NEAR(loaded.trace.rates[k], arrivals[k], 1e-6) << k;
  }

  // Without per_worker_rate a worker count cannot become a processed rate.
  options.per_worker_rate = 0;
  const std::string lag_path = dir.write("lag.csv", two_column_csv("lag", t0, step, lag));
  EXPECT_EQ(load_error(lag_path, options),
            lag_path +
                ": a worker-count companion needs per_worker_rate > 0 (messages/s per "
                "worker), got 0");
}

TEST(TraceReaderLag, NanAndMissingLagSamplesAreInterpolated) {
  const double t0 = 0, step = 10;
  const std::vector<double> arrivals = {100, 300, 200, 400, 100, 50, 250, 150};
  const double processed_rate = 80;
  std::vector<double> lag = {10000};
  for (double a : arrivals) lag.push_back(lag.back() + (a - processed_rate) * step);
  std::vector<double> recorded = lag;
  recorded[0] = NAN;        // leading NaN: trimmed
  recorded[3] = NAN;        // interior NaN: interpolated
  recorded.push_back(NAN);  // trailing NaN: trimmed
  std::string lag_csv = prometheus_csv("lag", t0, step, recorded);
  // Drop the row of t = 60 (a gap): interpolated like a NaN.
  const std::string gap_row = "60,lag," + std::to_string(static_cast<long long>(lag[6])) + "\n";
  ASSERT_NE(lag_csv.find(gap_row), std::string::npos);
  lag_csv.erase(lag_csv.find(gap_row), gap_row.size());

  TempDir dir;
  TraceLoadOptions options;
  options.companion = dir.write(
      "processed.csv",
      prometheus_csv("processed_rate", t0, step, std::vector<double>(10, processed_rate)));
  const LoadedTrace loaded = load_trace_with_stats(dir.write("lag.csv", lag_csv), options);
  EXPECT_EQ(loaded.stats.nan_values, 3u);
  EXPECT_EQ(loaded.stats.gap_bins, 1u);
  EXPECT_EQ(loaded.stats.trimmed_bins, 2u);
  const Trace& t = loaded.trace;
  EXPECT_DOUBLE_EQ(t.start_epoch, 10);
  ASSERT_EQ(t.rates.size(), arrivals.size() - 1);  // intervals from t=10 to t=80
  // Untouched intervals are exact; around the NaN (t=30) and the gap (t=60) the two intervals
  // share their arrivals evenly, so their sum is exact.
  EXPECT_NEAR(t.rates[0], arrivals[1], 1e-9);
  EXPECT_NEAR(t.rates[1] + t.rates[2], arrivals[2] + arrivals[3], 1e-9);
  EXPECT_NEAR(t.rates[1], t.rates[2], 1e-9);
  EXPECT_NEAR(t.rates[3], arrivals[4], 1e-9);
  EXPECT_NEAR(t.rates[4] + t.rates[5], arrivals[5] + arrivals[6], 1e-9);
  EXPECT_NEAR(t.rates[6], arrivals[7], 1e-9);
}

TEST(TraceReaderLag, IdleConsumerGivesAnUpperBoundAndDropsAreClamped) {
  // 10 workers x 100/s = 1000/s capacity; lag 0 while arrivals stay below it.
  TempDir dir;
  TraceLoadOptions options;
  options.companion = dir.write("workers.csv", two_column_csv("workers", 0, 10, {10, 10, 10, 10}));
  options.per_worker_rate = 100;
  // lag 0 -> 0: idle, the true arrivals are anything up to 1000/s and 1000/s is reported;
  // 0 -> 5000: 1500/s; 5000 -> 0: 500/s (10000 processed minus the 5000 drop).
  const std::string lag = dir.write("lag.csv", prometheus_csv("lag", 0, 10, {0, 0, 5000, 0}));
  const LoadedTrace loaded = load_trace_with_stats(lag, options);
  expect_rates(loaded.trace.rates, {1000, 1500, 500});
  EXPECT_EQ(loaded.stats.clamped_bins, 0u);

  // A drop of 20000 in one interval is more than the capacity can explain: clamped to 0.
  const std::string drop =
      dir.write("drop.csv", prometheus_csv("lag", 0, 10, {30000, 10000, 10000, 10000}));
  const LoadedTrace dropped = load_trace_with_stats(drop, options);
  expect_rates(dropped.trace.rates, {0, 1000, 1000});
  EXPECT_EQ(dropped.stats.clamped_bins, 1u);
}

TEST(TraceReaderLag, CompanionCoverageTrimsTheEnds) {
  TempDir dir;
  TraceLoadOptions options;
  options.companion_kind = "processed_rate";
  // Companion from t=20 to t=50 (+ one 10 s step = 60); lag from 0 to 90.
  options.companion = dir.write("p.csv", two_column_csv("value", 20, 10, {5, 5, 5, 5}));
  const std::vector<double> lag = {0, 100, 200, 300, 400, 500, 600, 700, 800, 900};
  const LoadedTrace loaded =
      load_trace_with_stats(dir.write("lag.csv", prometheus_csv("lag", 0, 10, lag)), options);
  EXPECT_DOUBLE_EQ(loaded.trace.start_epoch, 20);
  expect_rates(loaded.trace.rates, {15, 15, 15, 15});  // intervals 20..60
  EXPECT_EQ(loaded.stats.trimmed_bins, 5u);

  options.companion = dir.write("late.csv", two_column_csv("value", 1000, 10, {5, 5}));
  const std::string path = dir.write("lag2.csv", prometheus_csv("lag", 0, 10, lag));
  EXPECT_NE(load_error(path, options).find("does not cover any lag interval"), std::string::npos);

  // A companion name that says neither workers nor processed rate needs companion_kind.
  TraceLoadOptions unknown;
  unknown.companion = dir.write("mystery.csv", two_column_csv("value", 0, 10, {5, 5, 5}));
  EXPECT_EQ(load_error(path, unknown),
            unknown.companion +
                ": cannot tell whether metric 'value' is a worker count or a processed rate; set "
                "companion_kind to workers or processed_rate");
}

}  // namespace
}  // namespace lagpilot::sim
