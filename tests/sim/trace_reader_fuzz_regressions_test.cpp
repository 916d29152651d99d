// The trace fuzzer's kept inputs (fuzz/regressions/trace_fuzzer: failures found and fixed;
// fuzz/corpus/trace_fuzzer: seeds) replayed through the same contract check, so the normal test
// suite (and its ASan+UBSan run) covers them; the fixes themselves pinned down; and the
// in-memory entry point parse_trace checked against load_trace on the real traces.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/kept_inputs.h"
#include "fuzz/trace_check.h"
#include "sim/trace_reader.h"

namespace lagpilot::sim {
namespace {

const std::string kFuzzTraces = std::string(LAGPILOT_SOURCE_DIR) + "/traces/";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string parse_error(const std::string& text, const TraceLoadOptions& options = {}) {
  try {
    parse_trace(text, "mem.csv", options);
  } catch (const TraceError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no TraceError for:\n" << text;
  return "";
}

TEST(TraceReaderFuzzRegressions, KeptInputsKeepTheContract) {
  const auto inputs = lagpilot::fuzz::kept_fuzz_inputs(LAGPILOT_SOURCE_DIR, "trace_fuzzer");
  ASSERT_GE(inputs.size(), 10u) << "the seed corpus fuzz/corpus/trace_fuzzer is missing";
  int accepted = 0;
  for (const auto& input : inputs) {
    std::string bad;
    EXPECT_NO_THROW(bad = fuzz::check_trace_input(input.data)) << input.path;
    EXPECT_EQ(bad, "") << input.path;
    // Count the seeds that load, so that a corpus of nothing but errors is noticed.
    const fuzz::TraceFuzzInput in = fuzz::decode_trace_fuzz_input(input.data);
    try {
      parse_trace(in.text, "x.csv", in.options, in.companion_text);
      ++accepted;
    } catch (const TraceError&) {
    }
  }
  EXPECT_GE(accepted, 10) << "most seeds should be valid traces";
}

// Found by trace_fuzzer: three rows, one of them years before the others, made a 15-million-bin
// trace of zeros (up to 10^8 bins, 800 MB, were allowed) and timed out. A mostly-gap trace is
// now refused, naming the row.
TEST(TraceReaderFuzzRegressions, MostlyGapTraceIsRefusedNamingTheRow) {
  const std::string error = parse_error(
      "timestamp,__name__,value\n1414863909,input_rate,0\n1648143924,input_rate,5.5\n"
      "1648143939,input_rate,7\n");
  EXPECT_NE(error.find("mem.csv:3: timestamp is 15552001 bins after the first row"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("a trace of 3 rows may span at most 1000000 bins"), std::string::npos)
      << error;

  // Events: the same limit on the bins the events span.
  TraceLoadOptions events;
  events.format = "events";
  const std::string event_error =
      parse_error("timestamp,x,y\n0,1,1\n1,1,1\n20000000,1,1\n", events);
  EXPECT_NE(event_error.find("mem.csv:4: the events span 20000001 bins of 1 s"), std::string::npos)
      << event_error;

  // Events 339 years apart: their nanosecond difference overflowed int64 (UB) before.
  const std::string centuries = parse_error(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n1684-11-16 18:16:03.978,110,27\n"
      "2023-12-16 18:17:05.5,1,2\n",
      events);
  EXPECT_NE(centuries.find("mem.csv:3: the events span 10700294463 bins of 1 s"), std::string::npos)
      << centuries;
}

TEST(TraceReaderFuzzRegressions, SparseButPlausibleTracesStillLoad) {
  // Under the free allowance: 3 rows spanning 900,000 bins.
  const Trace t = parse_trace("timestamp,value\n0,1\n1,1\n900000,1\n", "mem.csv");
  EXPECT_EQ(t.rates.size(), 900001u);
  // Past it, 1000 bins per row: 2000 rows 1 s apart, then one 2 million bins on (2001 rows
  // may span 2,001,000 bins)...
  std::string text = "timestamp,value\n";
  for (int i = 0; i < 2000; ++i) text += std::to_string(i) + ",1\n";
  text += "1999999,1\n";
  const Trace sparse = parse_trace(text, "mem.csv");
  EXPECT_EQ(sparse.rates.size(), 2000000u);
  // ... but not one more row 3,000 bins further (2002 rows: 2,002,000 bins at most).
  EXPECT_NE(parse_error(text + "2003000,1\n")
                .find("mem.csv:2003: timestamp is 2003000 bins "
                      "after the first row; a trace of 2002 rows "
                      "may span at most 2002000 bins"),
            std::string::npos);
}

TEST(TraceReaderFuzzRegressions, ParseTraceMatchesLoadTraceOnTheRealTraces) {
  int compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kFuzzTraces)) {
    if (entry.path().extension() != ".csv") continue;
    const std::string path = entry.path().string();
    TraceLoadOptions options;
    if (path.find("_lag.csv") != std::string::npos) options.format = "prometheus";
    LoadedTrace from_file;
    try {
      from_file = load_trace_with_stats(path, options);
    } catch (const TraceError&) {
      continue;  // the reader's own tests say which files load; here only the parity matters
    }
    const LoadedTrace from_memory = parse_trace_with_stats(read_file(path), path, options);
    EXPECT_EQ(from_memory.trace.rates, from_file.trace.rates) << path;
    EXPECT_EQ(from_memory.trace.bin_seconds, from_file.trace.bin_seconds) << path;
    EXPECT_EQ(from_memory.trace.start_epoch, from_file.trace.start_epoch) << path;
    EXPECT_EQ(from_memory.trace.source, path);
    EXPECT_EQ(from_memory.stats.format, from_file.stats.format) << path;
    ++compared;
  }
  EXPECT_GE(compared, 5);

  // A lag recording with its companion given in memory: the same as from the two files.
  TraceLoadOptions lag;
  lag.companion = kFuzzTraces + "espa_q1_cosine_HPA50_taskmanager.csv";
  lag.per_worker_rate = 100;
  const std::string lag_path = kFuzzTraces + "espa_q1_cosine_HPA50_lag.csv";
  const LoadedTrace from_files = load_trace_with_stats(lag_path, lag);
  const LoadedTrace from_memory =
      parse_trace_with_stats(read_file(lag_path), lag_path, lag, read_file(lag.companion));
  EXPECT_EQ(from_memory.trace.rates, from_files.trace.rates);
  EXPECT_EQ(from_memory.stats.companion_kind, "workers");
  EXPECT_EQ(from_memory.stats.clamped_bins, from_files.stats.clamped_bins);

  // In memory, nothing is read from disk: the companion's name only labels errors.
  TraceLoadOptions missing;
  missing.companion = "/nonexistent/companion.csv";
  try {
    parse_trace(read_file(lag_path), lag_path, missing, "");
    ADD_FAILURE() << "an empty companion must be an error";
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/companion.csv:1: file is empty");
  }
}

}  // namespace
}  // namespace lagpilot::sim
