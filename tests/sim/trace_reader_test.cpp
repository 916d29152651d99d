#include "sim/trace_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/sim/trace_test_files.h"

namespace lagpilot::sim {
namespace {

using testing::expect_rates;
using testing::load_error;
using testing::TempDir;

namespace fs = std::filesystem;

const std::string kTraces = std::string(LAGPILOT_SOURCE_DIR) + "/traces/";

TraceLoadOptions with_format(const std::string& format) {
  TraceLoadOptions options;
  options.format = format;
  return options;
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  const double ma = sum(a) / n, mb = sum(b) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

// ---------------------------------------------------------------------------------------------
// The recorded traces in traces/ (facts from traces/SOURCES.md)

TraceLoadOptions espa_lag_options(double per_worker_rate) {
  TraceLoadOptions options;
  options.companion = kTraces + "espa_q1_cosine_HPA50_taskmanager.csv";
  options.per_worker_rate = per_worker_rate;
  return options;
}

TEST(TraceReaderFiles, EveryTraceFileLoadsWithAutoFormat) {
  std::set<std::string> seen;
  for (const auto& entry : fs::directory_iterator(kTraces)) {
    if (entry.path().extension() != ".csv") continue;
    const std::string name = entry.path().filename().string();
    seen.insert(name);
    TraceLoadOptions options;
    if (name.find("_lag") != std::string::npos) options = espa_lag_options(18000);
    SCOPED_TRACE(name);
    LoadedTrace loaded;
    ASSERT_NO_THROW(loaded = load_trace_with_stats(entry.path().string(), options));
    const Trace& trace = loaded.trace;
    EXPECT_EQ(trace.source, entry.path().string());
    EXPECT_GT(trace.bin_seconds, 0);
    EXPECT_GT(trace.rates.size(), 50u);
    EXPECT_GT(trace.peak_rate(), 0);
    EXPECT_GT(trace.start_epoch, 8.9e8);  // 1998 or later
    for (double r : trace.rates) {
      ASSERT_TRUE(std::isfinite(r) && r >= 0) << r;
    }
  }
  EXPECT_EQ(seen.size(), 7u) << "traces/ should hold the 7 copied traces";
}

TEST(TraceReaderFiles, WorldCup98) {
  const LoadedTrace loaded = load_trace_with_stats(kTraces + "wc98_invocation_count.csv");
  EXPECT_EQ(loaded.stats.format, "rate");
  EXPECT_EQ(loaded.stats.metric, "count");
  EXPECT_EQ(loaded.stats.data_rows, 125300u);
  // SOURCES.md says "no gaps", but 10 minutes are missing (e.g. 1998-05-08 03:22, five around
  // 1998-05-17 09:42); they become zero-rate bins, so 1998-04-30 21:30 .. 1998-07-26 21:59 is
  // 87 days + 30 min = 125,310 one-minute bins.
  EXPECT_EQ(loaded.stats.gap_bins, 10u);
  const Trace& t = loaded.trace;
  EXPECT_EQ(t.rates.size(), 125310u);
  EXPECT_DOUBLE_EQ(t.bin_seconds, 60);
  EXPECT_DOUBLE_EQ(t.start_epoch, 893971800);  // 1998-04-30 21:30:00 UTC
  EXPECT_NEAR(t.total_messages(), 1352804107.0, 1.0);
  EXPECT_DOUBLE_EQ(t.peak_rate(), 229426.0 / 60);
  // The peak is the semi-final, 1998-07-07 21:41 GMT.
  const auto peak = std::max_element(t.rates.begin(), t.rates.end()) - t.rates.begin();
  EXPECT_DOUBLE_EQ(t.start_epoch + static_cast<double>(peak) * t.bin_seconds, 899847660);
  // The gap minute 1998-05-08 03:22 is a zero bin.
  EXPECT_EQ(t.rates[static_cast<std::size_t>((894597720 - 893971800) / 60)], 0.0);
}

TEST(TraceReaderFiles, NycTaxi) {
  const LoadedTrace loaded = load_trace_with_stats(kTraces + "nab_nyc_taxi.csv");
  const Trace& t = loaded.trace;
  EXPECT_EQ(loaded.stats.format, "rate");
  EXPECT_EQ(t.rates.size(), 10320u);
  EXPECT_EQ(loaded.stats.gap_bins, 0u);
  EXPECT_DOUBLE_EQ(t.bin_seconds, 1800);
  EXPECT_DOUBLE_EQ(t.start_epoch, 1404172800);  // 2014-07-01 00:00:00
  EXPECT_DOUBLE_EQ(t.peak_rate(), 39197.0 / 1800);
  EXPECT_DOUBLE_EQ(*std::min_element(t.rates.begin(), t.rates.end()), 8.0 / 1800);
  EXPECT_DOUBLE_EQ(median(t.rates), 16778.0 / 1800);
}

TEST(TraceReaderFiles, TwitterAapl) {
  const LoadedTrace loaded = load_trace_with_stats(kTraces + "nab_Twitter_volume_AAPL.csv");
  const Trace& t = loaded.trace;
  EXPECT_EQ(t.rates.size(), 15902u);
  EXPECT_DOUBLE_EQ(t.bin_seconds, 300);
  EXPECT_DOUBLE_EQ(t.start_epoch, 1424986973);  // 2015-02-26 21:42:53
  EXPECT_DOUBLE_EQ(t.peak_rate(), 13479.0 / 300);
  EXPECT_EQ(*std::min_element(t.rates.begin(), t.rates.end()), 0.0);
  EXPECT_DOUBLE_EQ(median(t.rates), 47.0 / 300);
}

TEST(TraceReaderFiles, AzureLlmEventsPerSecondAndPerMinute) {
  const std::string path = kTraces + "azure_AzureLLMInferenceTrace_code.csv";
  const LoadedTrace per_second = load_trace_with_stats(path);
  EXPECT_EQ(per_second.stats.format, "events");
  EXPECT_EQ(per_second.stats.data_rows, 8819u);
  EXPECT_DOUBLE_EQ(per_second.trace.bin_seconds, 1);
  EXPECT_NEAR(per_second.trace.total_messages(), 8819, 1e-6);
  EXPECT_DOUBLE_EQ(per_second.trace.peak_rate(), 67);  // "at most 67 requests in one second"
  EXPECT_DOUBLE_EQ(per_second.trace.start_epoch, 1700158623);  // 2023-11-16 18:17:03 (floored)
  // 18:17:03 .. 19:14:19 inclusive.
  EXPECT_EQ(per_second.trace.rates.size(), 57u * 60 + 17);

  TraceLoadOptions minutes;
  minutes.event_bin_seconds = 60;
  const Trace per_minute = load_trace(path, minutes);
  EXPECT_DOUBLE_EQ(per_minute.start_epoch, 1700158620);  // bins start on whole minutes
  EXPECT_EQ(per_minute.rates.size(), 58u);
  EXPECT_NEAR(per_minute.total_messages(), 8819, 1e-6);
  // SOURCES.md: 0 to 632 requests per minute (binned from the first request).
  EXPECT_LE(per_minute.peak_rate() * 60, 632);
  EXPECT_GT(per_minute.peak_rate() * 60, 300);
  EXPECT_EQ(*std::min_element(per_minute.rates.begin(), per_minute.rates.end()), 0.0);
}

TEST(TraceReaderFiles, EspaInputRateIsAPrometheusRate) {
  const LoadedTrace loaded = load_trace_with_stats(kTraces + "espa_q1_cosine_HPA50_input_rate.csv");
  const Trace& t = loaded.trace;
  EXPECT_EQ(loaded.stats.format, "prometheus");
  EXPECT_EQ(loaded.stats.metric, "input_rate");
  EXPECT_EQ(t.rates.size(), 624u);
  EXPECT_DOUBLE_EQ(t.bin_seconds, 15);
  EXPECT_DOUBLE_EQ(t.start_epoch, 1648143909);
  EXPECT_NEAR(t.peak_rate(), 256577, 1);  // values are rates already: not divided by 15
  EXPECT_NEAR(median(t.rates), 144401, 1);
}

TEST(TraceReaderFiles, EspaTaskmanagerLoadsAsAGauge) {
  const Trace t = load_trace(kTraces + "espa_q1_cosine_HPA50_taskmanager.csv");
  EXPECT_EQ(t.rates.size(), 614u);
  EXPECT_DOUBLE_EQ(t.peak_rate(), 15);
  EXPECT_DOUBLE_EQ(*std::min_element(t.rates.begin(), t.rates.end()), 1);
}

TEST(TraceReaderFiles, EspaLagWithoutCompanionIsRefusedUnderAuto) {
  const std::string path = kTraces + "espa_q1_cosine_HPA50_lag.csv";
  EXPECT_NE(load_error(path).find("looks like consumer lag, not arrivals"), std::string::npos);
  // An explicit format reads the lag values as they are (13 NaN samples interpolated).
  const LoadedTrace raw = load_trace_with_stats(path, with_format("prometheus"));
  EXPECT_EQ(raw.stats.nan_values, 13u);
  EXPECT_EQ(raw.trace.rates.size(), 613u);
  EXPECT_NEAR(raw.trace.peak_rate(), 4833637, 1);
}

// Reconstruct the espa arrivals from lag + replicas and compare with the recorded input rate
// of the same run. The per-worker rate is estimated from the recordings themselves: the
// messages that arrived minus the lag growth, over the worker-seconds. This checks the reader
// on real data (NaN samples, trimming, alignment, the per-worker factor) and that the result is
// plausible. It cannot check the lag term closely: the recorded lag is an upper-bound estimate
// with restart spikes, and the replica count alone already tracks the input (HPA follows it).
// The exactness of the reconstruction is checked on synthetic recordings below.
TEST(TraceReaderFiles, EspaLagReconstructionFollowsTheRecordedInputRate) {
  const Trace input = load_trace(kTraces + "espa_q1_cosine_HPA50_input_rate.csv");
  const Trace workers = load_trace(kTraces + "espa_q1_cosine_HPA50_taskmanager.csv");
  const Trace lag = load_trace(kTraces + "espa_q1_cosine_HPA50_lag.csv", with_format("prometheus"));
  ASSERT_DOUBLE_EQ(input.bin_seconds, 15);
  ASSERT_DOUBLE_EQ(workers.bin_seconds, 15);
  auto bin_of = [](const Trace& t, double epoch) {
    return static_cast<std::size_t>(std::llround((epoch - t.start_epoch) / t.bin_seconds));
  };
  // The lag's first sample is NaN: the reconstruction starts at the second one.
  const double begin = lag.start_epoch + 15, end = lag.start_epoch + 15 * (lag.rates.size() - 1);
  double arrived = 0, worker_seconds = 0;
  for (double t = begin; t < end; t += 15) {
    arrived += input.rates[bin_of(input, t)] * 15;
    worker_seconds += workers.rates[bin_of(workers, t)] * 15;
  }
  const double lag_growth = lag.rates.back() - lag.rates[1];
  const double per_worker_rate = (arrived - lag_growth) / worker_seconds;
  EXPECT_GT(per_worker_rate, 10000);  // sanity: 15 workers carry a ~250k/s peak
  EXPECT_LT(per_worker_rate, 30000);

  const LoadedTrace loaded = load_trace_with_stats(kTraces + "espa_q1_cosine_HPA50_lag.csv",
                                                   espa_lag_options(per_worker_rate));
  const Trace& rebuilt = loaded.trace;
  EXPECT_EQ(loaded.stats.format, "lag");
  EXPECT_EQ(loaded.stats.companion_kind, "workers");
  EXPECT_EQ(loaded.stats.nan_values, 13u);
  EXPECT_EQ(loaded.stats.trimmed_bins, 1u);  // the leading NaN
  EXPECT_DOUBLE_EQ(rebuilt.start_epoch, begin);
  EXPECT_DOUBLE_EQ(rebuilt.bin_seconds, 15);
  ASSERT_EQ(rebuilt.rates.size(), 611u);
  // Totals agree up to the clamped bins (lag drops faster than the workers' capacity).
  EXPECT_LT(loaded.stats.clamped_bins, 20u);
  EXPECT_NEAR(rebuilt.total_messages(), arrived, 0.02 * arrived);
  // Over 5-minute windows (20 bins), the rebuilt arrivals follow the recorded cosine input.
  std::vector<double> rebuilt_windows, input_windows;
  for (std::size_t i = 0; i + 20 <= rebuilt.rates.size(); i += 20) {
    double r = 0, in = 0;
    for (std::size_t j = i; j < i + 20; ++j) {
      r += rebuilt.rates[j];
      in += input.rates[bin_of(input, rebuilt.start_epoch + 15.0 * static_cast<double>(j))];
    }
    rebuilt_windows.push_back(r);
    input_windows.push_back(in);
  }
  EXPECT_GT(correlation(rebuilt_windows, input_windows), 0.75);
}

// ---------------------------------------------------------------------------------------------
// Layout: line endings, blank lines, headers, quoting

TEST(TraceReaderLayout, CrlfAndMissingFinalNewlineReadLikeLf) {
  TempDir dir;
  const Trace lf = load_trace(dir.write("lf.csv", "timestamp,value\n0,60\n60,120\n120,30\n"));
  const Trace crlf =
      load_trace(dir.write("crlf.csv", "timestamp,value\r\n0,60\r\n60,120\r\n120,30"));
  const Trace cr = load_trace(dir.write("cr.csv", "timestamp,value\r0,60\r60,120\r120,30\r"));
  const std::vector<double> expected = {1.0, 2.0, 0.5};  // counts per 60 s bin / 60
  expect_rates(lf.rates, expected);
  expect_rates(crlf.rates, expected);
  expect_rates(cr.rates, expected);
  EXPECT_DOUBLE_EQ(crlf.bin_seconds, 60);
}

TEST(TraceReaderLayout, BlankLinesAreSkippedButCounted) {
  TempDir dir;
  const std::string path =
      dir.write("blank.csv", "\ntimestamp,value\r\n\r\n0,1\n   \n1,2\n\n\n2,3\n\n");
  const LoadedTrace loaded = load_trace_with_stats(path);
  expect_rates(loaded.trace.rates, {1, 2, 3});
  EXPECT_EQ(loaded.stats.blank_lines, 6u);
  // Line numbers still count blank lines: line 6 is "1,2", line 9 is "2,x".
  const std::string bad = dir.write("bad.csv", "\ntimestamp,value\r\n\r\n0,1\n   \n1,2\n\n\n2,x\n");
  EXPECT_EQ(load_error(bad), bad + ":9: value 'x' is not a number");
}

TEST(TraceReaderLayout, HeaderlessQuotedAndSpacedFields) {
  TempDir dir;
  const Trace headerless = load_trace(dir.write("no_header.csv", "100,5\n101,6\n"));
  expect_rates(headerless.rates, {5, 6});
  EXPECT_DOUBLE_EQ(headerless.start_epoch, 100);
  const Trace quoted = load_trace(dir.write(
      "quoted.csv",
      "\"period\",\"count\"\n\"2020-01-01 00:00:00\", 10 \n\t\"2020-01-01 00:00:01\",20\n"));
  expect_rates(quoted.rates, {10, 20});
  EXPECT_DOUBLE_EQ(quoted.start_epoch, 1577836800);
  // A UTF-8 byte-order mark before the header is ignored.
  const Trace bom = load_trace(dir.write("bom.csv", "\xEF\xBB\xBFtimestamp,value\n0,1\n1,1\n"));
  EXPECT_EQ(bom.rates.size(), 2u);
}

TEST(TraceReaderLayout, EmptyAndHeaderOnlyFiles) {
  TempDir dir;
  const std::string empty = dir.write("empty.csv", "");
  EXPECT_EQ(load_error(empty), empty + ":1: file is empty");
  const std::string blank = dir.write("blank.csv", "\r\n\n  \n");
  EXPECT_EQ(load_error(blank), blank + ":1: file is empty");
  const std::string header = dir.write("header.csv", "timestamp,value\n");
  EXPECT_EQ(load_error(header), header + ":1: header but no data rows");
  const std::string header_blank =
      dir.write("header_blank.csv", "\ntimestamp,__name__,value\r\n\r\n");
  EXPECT_EQ(load_error(header_blank), header_blank + ":2: header but no data rows");
  const std::string one_row = dir.write("one_row.csv", "timestamp,value\n0,5\n");
  EXPECT_EQ(load_error(one_row),
            one_row + ": at least two rows are needed to detect the bin width (found 1)");
  const std::string missing = dir.write("x.csv", "") + ".missing";
  EXPECT_EQ(load_error(missing), missing + ": cannot open: No such file or directory");
}

// ---------------------------------------------------------------------------------------------
// Timestamps

TEST(TraceReaderTimestamps, EpochSecondsIntegerAndFractional) {
  TempDir dir;
  const Trace integer =
      load_trace(dir.write("int.csv", "timestamp,value\n1648143909,15\n1648143924,30\n"));
  EXPECT_DOUBLE_EQ(integer.start_epoch, 1648143909);
  EXPECT_DOUBLE_EQ(integer.bin_seconds, 15);
  expect_rates(integer.rates, {1, 2});
  const Trace fractional = load_trace(dir.write(
      "frac.csv", "timestamp,value\n1648143909.25,1\n1648143909.50,2\n1648143909.75,3\n"));
  EXPECT_DOUBLE_EQ(fractional.start_epoch, 1648143909.25);
  EXPECT_DOUBLE_EQ(fractional.bin_seconds, 0.25);
  expect_rates(fractional.rates, {4, 8, 12});
  const Trace exponent =
      load_trace(dir.write("exp.csv", "timestamp,value\n1.6e9,1\n1.60000001e9,1\n"));
  EXPECT_DOUBLE_EQ(exponent.start_epoch, 1.6e9);
  EXPECT_DOUBLE_EQ(exponent.bin_seconds, 10);
}

TEST(TraceReaderTimestamps, DatesAreUtcWithHundredNanosecondFractions) {
  TempDir dir;
  // Azure-style 7 fractional digits: 100 ns apart must stay 100 ns apart.
  const Trace fine = load_trace(
      dir.write("fine.csv",
                "timestamp,value\n2023-11-16 18:17:03.9799600,1\n2023-11-16 18:17:03.9799601,2\n"
                "2023-11-16 18:17:03.9799602,3\n"));
  EXPECT_NEAR(fine.bin_seconds, 1e-7, 1e-16);
  ASSERT_EQ(fine.rates.size(), 3u);
  EXPECT_NEAR(fine.rates[0], 1e7, 1e-3);  // a count of 1 in 100 ns
  EXPECT_NEAR(fine.start_epoch, 1700158623.97996, 1e-6);

  TraceLoadOptions events;
  events.format = "events";
  events.event_bin_seconds = 1e-7;
  const Trace binned = load_trace(dir.write("ev.csv",
                                            "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
                                            "2023-11-16 18:17:03.9799600,1,1\r\n"
                                            "2023-11-16 18:17:03.9799601,1,1\r\n"
                                            "2023-11-16 18:17:03.9799601,1,1\r\n"
                                            "2023-11-16 18:17:03.9799603,1,1"),
                                  events);
  ASSERT_EQ(binned.rates.size(), 4u);
  EXPECT_NEAR(binned.rates[0] * 1e-7, 1, 1e-9);
  EXPECT_NEAR(binned.rates[1] * 1e-7, 2, 1e-9);  // equal event times are fine
  EXPECT_EQ(binned.rates[2], 0.0);
  EXPECT_NEAR(binned.rates[3] * 1e-7, 1, 1e-9);

  // Other date spellings: T separator, Z suffix, date only, leap day; all UTC.
  const Trace iso =
      load_trace(dir.write("iso.csv", "time,count\n2024-02-29T00:00:00Z,1\n2024-03-01,1\n"));
  EXPECT_DOUBLE_EQ(iso.start_epoch, 1709164800);
  EXPECT_DOUBLE_EQ(iso.bin_seconds, 86400);
  const Trace old = load_trace(dir.write("old.csv", "t,v\n1969-12-31 23:59:59,1\n1970-01-01,1\n"));
  EXPECT_DOUBLE_EQ(old.start_epoch, -1);
}

TEST(TraceReaderTimestamps, GapsBecomeZeroBinsAndJitterIsRounded) {
  TempDir dir;
  const LoadedTrace gaps = load_trace_with_stats(
      dir.write("gaps.csv", "timestamp,value\n0,60\n60,120\n240,180\n300,60\n"));
  expect_rates(gaps.trace.rates, {1, 2, 0, 0, 3, 1});
  EXPECT_EQ(gaps.stats.gap_bins, 2u);
  EXPECT_DOUBLE_EQ(gaps.trace.total_messages(), 420);

  const Trace jitter = load_trace(
      dir.write("jitter.csv", "timestamp,__name__,value\n0,r,1\n15.2,r,2\n29.9,r,3\n45.001,r,4\n"));
  EXPECT_DOUBLE_EQ(jitter.bin_seconds, 15.101);  // the median step of 15.2, 14.7, 15.101
  expect_rates(jitter.rates, {1, 2, 3, 4});
}

// ---------------------------------------------------------------------------------------------
// NaN values

TEST(TraceReaderNan, RateNanValuesAreInterpolatedAndCounted) {
  TempDir dir;
  const LoadedTrace loaded = load_trace_with_stats(dir.write(
      "nan.csv", "timestamp,value\n0,NaN\n10,10\n20,nan\n30,-nan\n40,40\n60,60\n70,NaN\n"));
  // 0: nearest value 10; 20, 30: between 10 and 40; 50: gap (zero); 70: nearest value 60.
  expect_rates(loaded.trace.rates, {1, 1, 2, 3, 4, 0, 6, 6});
  EXPECT_EQ(loaded.stats.nan_values, 4u);
  EXPECT_EQ(loaded.stats.gap_bins, 1u);

  const std::string all_nan = dir.write("all_nan.csv", "timestamp,value\n0,NaN\n10,NaN\n");
  EXPECT_EQ(load_error(all_nan), all_nan + ": all 2 values are NaN");
}

// ---------------------------------------------------------------------------------------------
// Malformed rows: exact "path:line: what" messages

struct MalformedCase {
  const char* name;
  const char* content;
  const char* format;
  const char* message;  // after "path:"
};

TEST(TraceReaderErrors, MalformedRowsNameFileAndLine) {
  const MalformedCase cases[] = {
      {"too_many_columns", "timestamp,value\n0,1\n60,2,3\n", "auto",
       "3: expected 2 columns (timestamp,value) but found 3"},
      {"too_few_columns", "period,count\r\n0,1\r\n60\r\n", "auto",
       "3: expected 2 columns (period,count) but found 1"},
      {"headerless_columns", "0,1\n60,2,\n", "auto", "2: expected 2 columns but found 3"},
      {"not_a_number", "timestamp,value\n0,1\n60,12abc\n", "auto",
       "3: value '12abc' is not a number"},
      {"empty_value", "timestamp,value\n0,1\n60,\n", "auto", "3: value is empty"},
      {"infinite", "timestamp,__name__,value\n0,r,1\n15,r,+Inf\n", "auto",
       "3: value '+Inf' is infinite"},
      {"negative", "timestamp,value\n0,1\n60,2\n120,-3\n", "auto",
       "4: negative value '-3' (counts, rates, lag and workers must be >= 0)"},
      {"bad_timestamp", "timestamp,value\n0,1\nyesterday,2\n", "auto",
       "3: bad timestamp 'yesterday': expected epoch seconds or YYYY-MM-DD HH:MM:SS[.fraction]"},
      {"bad_month", "timestamp,value\n2020-12-01 00:00:00,1\n2020-13-01 00:00:00,1\n", "auto",
       "3: bad timestamp '2020-13-01 00:00:00': month out of range"},
      {"bad_day", "timestamp,value\n2021-02-28 00:00:00,1\n2021-02-29 00:00:00,1\n", "auto",
       "3: bad timestamp '2021-02-29 00:00:00': day out of range for the month"},
      {"bad_hour", "timestamp,value\n2021-02-28 23:00:00,1\n2021-02-28 24:00:00,1\n", "auto",
       "3: bad timestamp '2021-02-28 24:00:00': hour out of range"},
      {"truncated_time", "timestamp,value\n2021-02-28 23:00:00,1\n2021-02-28 23:00,1\n", "auto",
       "3: bad timestamp '2021-02-28 23:00': expected epoch seconds or YYYY-MM-DD "
       "HH:MM:SS[.fraction]"},
      {"epoch_milliseconds", "timestamp,value\n1648143909000,1\n1648143924000,1\n", "rate",
       "2: bad timestamp '1648143909000': out of range (years 1678 to 2261)"},
      {"empty_timestamp", "timestamp,value\n0,1\n,2\n", "auto", "3: timestamp is empty"},
      {"unsorted", "timestamp,value\n0,1\n120,2\n60,3\n", "auto",
       "4: timestamp '60' is earlier than the one on line 3; rows must be sorted by time"},
      {"duplicate", "timestamp,value\n0,1\n\n60,2\n60,3\n", "auto",
       "5: duplicate timestamp '60' (also on line 4)"},
      {"same_bin", "timestamp,value\n0,1\n60,2\n120,3\n130,4\n", "auto",
       "5: timestamp falls into the same 60 s bin as line 4 (irregular timestamps; the bin width "
       "is the median step)"},
      {"unsorted_events", "TIMESTAMP,a,b\n2023-01-01 00:00:01,1,1\n2023-01-01 00:00:00,1,1\n",
       "auto",
       "3: timestamp '2023-01-01 00:00:00' is earlier than the one on line 2; rows must be sorted "
       "by time"},
      {"event_columns", "TIMESTAMP,a,b\r\n2023-01-01 00:00:01,1,1\r\n2023-01-01 00:00:02,1\r\n",
       "auto", "3: expected 3 columns (TIMESTAMP,a,b) but found 2"},
      {"several_metrics", "timestamp,__name__,value\n0,a,1\n15,a,2\n0,b,3\n", "auto",
       "4: the file holds several metrics ('a' from line 2, 'b' here); choose one with the "
       "metric option"},
      {"prometheus_needs_name", "timestamp,value\n0,1\n1,2\n", "prometheus",
       "1: a Prometheus export needs timestamp, __name__ and value columns; the header is "
       "(timestamp,value)"},
      {"rate_needs_two_columns", "timestamp,a,b\n0,1,1\n1,2,2\n", "rate",
       "1: the rate format needs 2 columns (timestamp,value), found 3 (timestamp,a,b)"},
  };
  TempDir dir;
  for (const MalformedCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir.write(std::string(c.name) + ".csv", c.content);
    EXPECT_EQ(load_error(path, with_format(c.format)), path + ":" + c.message);
    try {
      load_trace(path, with_format(c.format));
    } catch (const TraceError& e) {
      EXPECT_EQ(e.path(), path);
      EXPECT_EQ(std::to_string(e.line()), std::string(c.message).substr(0, 1));
    }
  }
}

TEST(TraceReaderErrors, BadOptions) {
  TempDir dir;
  const std::string path = dir.write("ok.csv", "timestamp,value\n0,1\n60,2\n");
  EXPECT_EQ(load_error(path, with_format("csv")),
            path + ": unknown format 'csv' (expected auto, rate, prometheus, events or lag)");
  EXPECT_EQ(load_error(path, with_format("lag")),
            path + ": format lag needs a companion recording (worker count or processed rate)");
  TraceLoadOptions metric;
  metric.metric = "x";
  EXPECT_EQ(
      load_error(path, metric),
      path + ": the metric option ('x') needs a Prometheus export, but the file is read as rate");
  TraceLoadOptions companion = with_format("rate");
  companion.companion = path;
  EXPECT_EQ(load_error(path, companion),
            path + ": a companion is only used with format lag, not rate");
  TraceLoadOptions kind;
  kind.companion = path;
  kind.companion_kind = "pods";
  EXPECT_EQ(load_error(path, kind),
            path + ": unknown companion_kind 'pods' (expected auto, workers or processed_rate)");
  TraceLoadOptions bin = with_format("events");
  bin.event_bin_seconds = 0;
  EXPECT_EQ(load_error(path, bin),
            path + ": event_bin_seconds must be between 1e-9 and 1e9, got 0");
}

// ---------------------------------------------------------------------------------------------
// Prometheus exports

TEST(TraceReaderPrometheus, MetricSelectionAndColumnOrder) {
  TempDir dir;
  const std::string two = dir.write(
      "two.csv",
      "timestamp,__name__,value\n0,in,1\n0,out,5\n15,in,2\n15,out,6\n30,in,3\n30,out,7\n");
  TraceLoadOptions out;
  out.metric = "out";
  const LoadedTrace loaded = load_trace_with_stats(two, out);
  expect_rates(loaded.trace.rates, {5, 6, 7});
  EXPECT_EQ(loaded.stats.skipped_rows, 3u);
  EXPECT_EQ(loaded.stats.metric, "out");
  TraceLoadOptions missing;
  missing.metric = "lag";
  EXPECT_EQ(load_error(two, missing),
            two + ": metric 'lag' not found (the file holds 'in', 'out')");

  // Columns found by name, with an extra label column.
  const Trace reordered = load_trace(
      dir.write("reordered.csv", "__name__,job,value,timestamp\nr,a,1.5,100\nr,a,2.5,160\n"));
  expect_rates(reordered.rates, {1.5, 2.5});
  EXPECT_DOUBLE_EQ(reordered.start_epoch, 100);
  EXPECT_DOUBLE_EQ(reordered.bin_seconds, 60);
}

// ---------------------------------------------------------------------------------------------
// compress_time / scale_to_peak

Trace sample_trace() {
  Trace t;
  t.source = "sample";
  t.start_epoch = 1000;
  t.bin_seconds = 60;
  t.rates = {0, 1.5, 4, 2, 0.25};
  return t;
}

TEST(TraceTransforms, CompressTimeKeepsEveryBinsMessages) {
  const Trace original = sample_trace();
  const Trace fast = compress_time(original, 8);
  EXPECT_DOUBLE_EQ(fast.bin_seconds, 7.5);
  EXPECT_DOUBLE_EQ(fast.duration(), original.duration() / 8);
  EXPECT_DOUBLE_EQ(fast.start_epoch, original.start_epoch);
  EXPECT_DOUBLE_EQ(fast.peak_rate(), original.peak_rate() * 8);
  EXPECT_DOUBLE_EQ(fast.total_messages(), original.total_messages());
  for (std::size_t i = 0; i < original.rates.size(); ++i) {
    EXPECT_DOUBLE_EQ(fast.rates[i] * fast.bin_seconds, original.rates[i] * original.bin_seconds);
  }
  const Trace slow = compress_time(original, 0.5);
  EXPECT_DOUBLE_EQ(slow.bin_seconds, 120);
  EXPECT_DOUBLE_EQ(slow.total_messages(), original.total_messages());
  EXPECT_THROW(compress_time(original, 0), std::invalid_argument);
  EXPECT_THROW(compress_time(original, -2), std::invalid_argument);
  EXPECT_THROW(compress_time(original, std::nan("")), std::invalid_argument);
  EXPECT_THROW(compress_time(original, INFINITY), std::invalid_argument);
}

TEST(TraceTransforms, CompressTimeOnARealTraceKeepsTheTotal) {
  const Trace wc98 = load_trace(kTraces + "wc98_invocation_count.csv");
  const Trace fast = compress_time(wc98, 60);  // one minute per second
  EXPECT_DOUBLE_EQ(fast.bin_seconds, 1);
  EXPECT_NEAR(fast.total_messages(), 1352804107.0, 1.0);
  EXPECT_DOUBLE_EQ(fast.peak_rate(), 229426);
}

TEST(TraceTransforms, ScaleToPeakKeepsTheShape) {
  const Trace original = sample_trace();
  const Trace scaled = scale_to_peak(original, 1000);
  EXPECT_EQ(scaled.peak_rate(), 1000);
  EXPECT_DOUBLE_EQ(scaled.bin_seconds, original.bin_seconds);
  EXPECT_EQ(scaled.rates.size(), original.rates.size());
  EXPECT_DOUBLE_EQ(scaled.total_messages(), original.total_messages() * 250);
  for (std::size_t i = 0; i < original.rates.size(); ++i) {
    EXPECT_DOUBLE_EQ(scaled.rates[i], original.rates[i] * 250);
  }
  // An awkward factor still lands exactly on the peak.
  const Trace taxi = load_trace(kTraces + "nab_nyc_taxi.csv");
  EXPECT_EQ(scale_to_peak(taxi, 12345.678).peak_rate(), 12345.678);
  EXPECT_THROW(scale_to_peak(original, 0), std::invalid_argument);
  EXPECT_THROW(scale_to_peak(original, -1), std::invalid_argument);
  Trace zeros = original;
  std::fill(zeros.rates.begin(), zeros.rates.end(), 0.0);
  EXPECT_THROW(scale_to_peak(zeros, 10), std::invalid_argument);
}

}  // namespace
}  // namespace lagpilot::sim
