#pragma once
// What the simulator benchmarks share (oracle_bench, sim_bench, tune_bench): where the World
// Cup 98 trace is, that trace scaled the way `lagpilot sim --peak-load 1.2` scales it, and a
// stopwatch that reads wall and CPU time together. Benchmark code: plain functions and a value
// type; a stopwatch belongs to the thread that reads it.

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <utility>

#include "policies/guards.h"
#include "sim/simulation.h"
#include "sim/trace_reader.h"

namespace lagpilot::sim::bench {

// The World Cup trace: $LAGPILOT_WC98_TRACE, else traces/ in the source tree.
inline std::string wc98_path() {
  if (const char* env = std::getenv("LAGPILOT_WC98_TRACE")) return env;
#ifdef LAGPILOT_SOURCE_DIR
  const std::filesystem::path root = LAGPILOT_SOURCE_DIR;
#else
  const std::filesystem::path root = std::filesystem::path(__FILE__).parent_path().parent_path();
#endif
  return (root / "traces" / "wc98_invocation_count.csv").string();
}

// The whole World Cup trace scaled to peak at 1.2 x capacity(max_workers).
inline Trace wc98_at_peak_load(const SimConfig& config, const GuardConfig& guards) {
  Trace trace = load_trace(wc98_path());
  return scale_to_peak(std::move(trace), 1.2 * config.model.capacity(guards.max_workers));
}

// Wall-clock (steady) and process CPU seconds since construction.
class Stopwatch {
 public:
  Stopwatch() : wall_start_(std::chrono::steady_clock::now()), cpu_start_(std::clock()) {}
  double wall_seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count();
  }
  double cpu_seconds() const { return double(std::clock() - cpu_start_) / CLOCKS_PER_SEC; }

 private:
  std::chrono::steady_clock::time_point wall_start_;
  std::clock_t cpu_start_;
};

}  // namespace lagpilot::sim::bench
