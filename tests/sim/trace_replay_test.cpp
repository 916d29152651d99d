// Every recorded trace in traces/ loads and replays under real policies, conservation holding.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "policies/policy_factory.h"
#include "sim/simulation.h"
#include "sim/trace_reader.h"

namespace lagpilot::sim {
namespace {

namespace fs = std::filesystem;

const fs::path kTraceDir = fs::path(LAGPILOT_SOURCE_DIR) / "traces";

std::vector<fs::path> trace_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kTraceDir)) {
    if (entry.path().extension() == ".csv") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TraceLoadOptions options_for(const fs::path& file) {
  TraceLoadOptions options;
  const std::string name = file.filename().string();
  // A lag recording needs its companion: the replica count recorded in the same run.
  if (name.find("_lag.csv") != std::string::npos) {
    std::string companion = name;
    companion.replace(companion.find("_lag.csv"), 8, "_taskmanager.csv");
    options.companion = (file.parent_path() / companion).string();
    options.per_worker_rate = 20000.0;  // records/s per Flink task manager (roughly)
  }
  return options;
}

TEST(TraceReplay, EveryTraceFileReplaysUnderRealPolicies) {
  const std::vector<fs::path> files = trace_files();
  ASSERT_GE(files.size(), 5u) << "no traces in " << kTraceDir;
  const std::vector<std::string> names = policy_names();
  SimConfig config;
  config.fidelity = "auto";
  config.auto_message_limit = 2'000'000;
  const double peak = 1.2 * config.model.capacity(GuardConfig{}.max_workers);
  std::size_t turn = 0;
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.filename().string());
    Trace trace = load_trace(file.string(), options_for(file));
    ASSERT_FALSE(trace.rates.empty());
    // At most half an hour of simulated time, peaking at 1.2 x the capacity at max workers.
    const double speedup = std::max(1.0, trace.duration() / 1800.0);  // before trace moves
    trace = compress_time(std::move(trace), speedup);
    trace = scale_to_peak(std::move(trace), peak);
    ASSERT_LE(trace.duration(), 1800.0 + 1e-6);
    for (int k = 0; k < 2; ++k) {  // two policies per trace, in turn through all of them
      const PolicySpec spec = parse_policy_spec(names[turn++ % names.size()]);
      const RunResult r = simulate(trace, spec, GuardConfig{}, config);
      SCOPED_TRACE(r.label + " " + r.fidelity);
      EXPECT_EQ(r.kpis.arrived, r.kpis.processed + r.kpis.final_lag);
      const double expected = trace.total_messages();
      EXPECT_NEAR(double(r.kpis.arrived), expected, 5.0 * std::sqrt(expected) + 1.0);
      EXPECT_GE(r.kpis.max_workers, GuardConfig{}.min_workers);
      EXPECT_LE(r.kpis.max_workers, GuardConfig{}.max_workers);
      EXPECT_GT(r.kpis.worker_seconds, 0.0);
    }
  }
}

}  // namespace
}  // namespace lagpilot::sim
