#pragma once
// The contract of the trace readers (sim/trace_reader.h), checked on arbitrary inputs by
// fuzz/trace_fuzzer.cpp and on the kept inputs (fuzz/corpus/trace_fuzzer,
// fuzz/regressions/trace_fuzzer) by tests/sim/trace_reader_fuzz_regressions_test.cpp.
//
// For any file contents and options, parse_trace_with_stats returns a usable trace (at least
// one bin, a finite bin width > 0, finite rates >= 0, a finite start) with consistent stats, or
// throws TraceError with a message that names the file; never another exception. A trace it
// returned goes through compress_time (or is refused by it with std::invalid_argument) and
// scale_to_peak with finite, non-negative rates.
//
// Input layout (so that one byte string carries the options too):
//   byte 0   bits 0-2: format, value % 5 -> auto, rate, prometheus, events, lag
//            bits 3-4: companion_kind -> auto, workers, processed_rate, auto
//            bit 5: metric option "m" (else "")
//            bit 6: a companion is given (always for format lag)
//   byte 1   bits 0-2: event_bin_seconds -> 1, 60, 0.5, 1e-9, 1e9, 0, -1, NaN
//            bits 3-5: per_worker_rate -> 0, 1, 100, 1e-300, 1e300, -1, inf, NaN
//   rest     the file; with a companion, the part before the first NUL byte is the file and
//            the part after it the companion.
// Shorter inputs are read as the file with default options.
//
// Thread-safety: pure; any thread.

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include "sim/trace_reader.h"

namespace lagpilot::sim::fuzz {

inline constexpr const char* kTraceFuzzName = "fuzz.csv";
inline constexpr const char* kTraceFuzzCompanionName = "companion.csv";

struct TraceFuzzInput {
  TraceLoadOptions options;
  std::string_view text;
  std::string_view companion_text;
};

inline TraceFuzzInput decode_trace_fuzz_input(std::string_view data) {
  TraceFuzzInput in;
  if (data.size() < 2) {
    in.text = data;
    return in;
  }
  const auto b0 = static_cast<unsigned char>(data[0]);
  const auto b1 = static_cast<unsigned char>(data[1]);
  static constexpr const char* kFormats[] = {"auto", "rate", "prometheus", "events", "lag"};
  static constexpr const char* kKinds[] = {"auto", "workers", "processed_rate", "auto"};
  constexpr double kInf = std::numeric_limits<double>::infinity();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  const double kBins[] = {1, 60, 0.5, 1e-9, 1e9, 0, -1, kNaN};
  const double kPerWorker[] = {0, 1, 100, 1e-300, 1e300, -1, kInf, kNaN};
  in.options.format = kFormats[(b0 & 7) % 5];
  in.options.companion_kind = kKinds[(b0 >> 3) & 3];
  if (b0 & 0x20) in.options.metric = "m";
  in.options.event_bin_seconds = kBins[b1 & 7];
  in.options.per_worker_rate = kPerWorker[(b1 >> 3) & 7];
  in.text = data.substr(2);
  if ((b0 & 0x40) || in.options.format == "lag") {
    in.options.companion = kTraceFuzzCompanionName;
    const std::size_t nul = in.text.find('\0');
    if (nul != std::string_view::npos) {
      in.companion_text = in.text.substr(nul + 1);
      in.text = in.text.substr(0, nul);
    }
  }
  return in;
}

// "" when the reader kept its contract on `data` (decoded as above), else what went wrong.
// Any exception other than TraceError escapes.
inline std::string check_trace_input(std::string_view data) {
  const TraceFuzzInput in = decode_trace_fuzz_input(data);
  LoadedTrace loaded;
  try {
    loaded = parse_trace_with_stats(in.text, kTraceFuzzName, in.options, in.companion_text);
  } catch (const TraceError& e) {
    const std::string what = e.what();
    if (what.rfind(kTraceFuzzName, 0) != 0 && what.rfind(kTraceFuzzCompanionName, 0) != 0) {
      return "TraceError does not start with the file name: " + what;
    }
    return "";
  }
  const Trace& t = loaded.trace;
  if (t.rates.empty()) return "empty trace";
  if (!std::isfinite(t.bin_seconds) || !(t.bin_seconds > 0)) {
    return "bin_seconds " + std::to_string(t.bin_seconds);
  }
  if (!std::isfinite(t.start_epoch)) return "start_epoch not finite";
  for (std::size_t i = 0; i < t.rates.size(); ++i) {
    if (!std::isfinite(t.rates[i]) || t.rates[i] < 0) {
      return "rate[" + std::to_string(i) + "] = " + std::to_string(t.rates[i]);
    }
  }
  const TraceLoadStats& s = loaded.stats;
  if (s.format != "rate" && s.format != "prometheus" && s.format != "events" && s.format != "lag") {
    return "stats.format " + s.format;
  }
  if (in.options.format != "auto" && s.format != in.options.format) {
    return "format " + in.options.format + " read as " + s.format;
  }
  if (s.gap_bins > t.rates.size() && s.format != "lag") return "more gap bins than bins";

  for (double speedup : {4.0, 1e300}) {
    Trace faster;
    try {
      faster = compress_time(t, speedup);
    } catch (const std::invalid_argument&) {
      continue;  // documented: the result would have an infinite rate or a zero bin width
    }
    if (!(faster.bin_seconds > 0)) return "compress_time gave bin width 0";
    for (double r : faster.rates) {
      if (!std::isfinite(r) || r < 0) return "compress_time gave rate " + std::to_string(r);
    }
  }
  if (t.peak_rate() > 0) {
    const Trace scaled = scale_to_peak(t, 1000.0);
    if (scaled.peak_rate() != 1000.0) {
      return "scale_to_peak peak " + std::to_string(scaled.peak_rate());
    }
    for (double r : scaled.rates) {
      if (!std::isfinite(r) || r < 0 || r > 1000.0) {
        return "scale_to_peak gave rate " + std::to_string(r);
      }
    }
  }
  return "";
}

}  // namespace lagpilot::sim::fuzz
