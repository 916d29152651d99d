// Regression test of the default policy's control quality: `hybrid`, with every default (config,
// guards, consumer model, seed 7), on three 40-minute stretches of the evaluation set's test
// split (traces/eval/test, never used for tuning), scaled as `--peak-load 1.2` scales the whole
// trace. Each must meet every goal of the scoreboard (sim/scoreboard.h) against the oracle and
// the default HPA on the same arrivals. The full-set scoreboard is a benchmark
// (bench/control_quality.sh, docs/control-quality.md).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policies/guards.h"
#include "policies/policy_factory.h"
#include "sim/oracle.h"
#include "sim/scoreboard.h"
#include "sim/simulation.h"
#include "sim/trace_reader.h"

namespace lagpilot::sim {
namespace {

struct Stretch {
  std::string file;  // under traces/eval/test
  double start_seconds;
  double seconds;
};

// The whole trace scaled to 1.2 x capacity(max_workers) at its peak, then cut to the stretch.
Trace load_stretch(const Stretch& s, const SimConfig& config, const GuardConfig& guards) {
  Trace whole = load_trace(std::string(LAGPILOT_SOURCE_DIR) + "/traces/eval/test/" + s.file);
  whole = scale_to_peak(std::move(whole), 1.2 * config.model.capacity(guards.max_workers));
  Trace cut = whole;
  const auto first = static_cast<std::size_t>(s.start_seconds / whole.bin_seconds);
  const auto bins = static_cast<std::size_t>(s.seconds / whole.bin_seconds);
  EXPECT_LE(first + bins, whole.rates.size()) << s.file;
  cut.rates.assign(whole.rates.begin() + first, whole.rates.begin() + first + bins);
  return cut;
}

TEST(ControlQuality, DefaultPolicyMeetsEveryGoalOnTestStretches) {
  const std::vector<Stretch> stretches = {
      {"steps_staircase.csv", 1800, 2400},   // a step from 20 % to 45 % of the peak
      {"steps_staircase.csv", 6600, 2400},   // from 45 % to 70 %
      {"wc98_round16_day.csv", 36000, 2400}  // a match's flash crowd, above capacity
  };
  SimConfig config;
  config.seed = 7;
  const GuardConfig guards;
  const std::string default_policy = "hybrid";  // AppConfig's default (controller/app_config.h)
  ASSERT_EQ(default_params(default_policy), make_policy(default_policy, {})->params());
  std::vector<TraceRuns> all;
  for (const Stretch& s : stretches) {
    const Trace trace = load_stretch(s, config, guards);
    TraceRuns t{s.file + "@" + std::to_string(static_cast<int>(s.start_seconds)), {}};
    t.runs = simulate_all(trace, {parse_policy_spec(default_policy), parse_policy_spec("hpa")},
                          guards, config, 2);
    t.runs.push_back(solve_oracle(trace, config, guards).run);
    all.push_back(std::move(t));
  }
  const Scoreboard board = build_scoreboard(all, model_peak_workers(config.model));
  ASSERT_EQ(board.policies.front().label, default_policy);
  EXPECT_TRUE(board.policies.front().meets_all()) << format_scoreboard(board);
  // The references were found, and the stretches are not trivial: HPA acts on each of them.
  EXPECT_TRUE(board.has_oracle && board.has_hpa);
  for (const TraceScore& s : board.policies.front().traces) {
    EXPECT_GT(s.hpa_scale_actions, 2) << s.trace;
  }
}

}  // namespace
}  // namespace lagpilot::sim
