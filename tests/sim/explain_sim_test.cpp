// The simulator asks for the decisions' text (Observation::explain) only while it still records
// decisions; runs that keep fewer decisions, and so skip more text, decide exactly the same.

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "policies/policy_factory.h"
#include "sim/simulation.h"
#include "tests/sim/sim_test_util.h"

namespace lagpilot::sim {
namespace {

using testing::burst_trace;
using testing::constant_trace;
using testing::open_guards;
using testing::ScriptedPolicy;

TEST(Explain, AskedOnlyWhileDecisionsAreRecorded) {
  for (int max_decisions : {0, 4, 1000}) {
    SimConfig config;
    config.fidelity = "message";
    config.max_decisions = max_decisions;
    std::vector<Observation> seen;
    // A scale action every tick: 5, 7, 5, 7, ... from 4.
    auto policy = std::make_unique<ScriptedPolicy>(
        [&seen](const Observation&) { return seen.size() % 2 ? 5 : 7; }, &seen);
    const RunResult r =
        simulate(constant_trace(300.0, 20.0), std::move(policy), "alt", open_guards(), config);
    ASSERT_EQ(seen.size(), 20u);
    ASSERT_EQ(r.kpis.scale_actions, 20);
    ASSERT_EQ(r.decisions.size(), std::min<std::size_t>(20, max_decisions));
    for (std::size_t i = 0; i < seen.size(); ++i) {
      EXPECT_EQ(seen[i].explain, static_cast<int>(i) < max_decisions)
          << "max_decisions " << max_decisions << " tick " << i + 1;
    }
    for (const Decision& d : r.decisions) EXPECT_EQ(d.reason, "scripted");
  }
}

void expect_same_kpis(const Kpis& a, const Kpis& b) {
  EXPECT_EQ(a.lag_integral, b.lag_integral);
  EXPECT_EQ(a.max_lag, b.max_lag);
  EXPECT_EQ(a.p99_lag, b.p99_lag);
  EXPECT_EQ(a.seconds_above_slo, b.seconds_above_slo);
  EXPECT_EQ(a.worker_seconds, b.worker_seconds);
  EXPECT_EQ(a.scale_actions, b.scale_actions);
  EXPECT_EQ(a.reversals, b.reversals);
  EXPECT_EQ(a.max_workers, b.max_workers);
  EXPECT_EQ(a.arrived, b.arrived);
  EXPECT_EQ(a.processed, b.processed);
  EXPECT_EQ(a.final_lag, b.final_lag);
  EXPECT_EQ(a.mean_wait_seconds, b.mean_wait_seconds);
  EXPECT_EQ(a.mean_service_seconds, b.mean_service_seconds);
  EXPECT_EQ(a.ticks, b.ticks);
}

TEST(Explain, RunsThatKeepFewerDecisionsDecideTheSame) {
  // Every policy, with stabilization, step limits and a latency ceiling on, so that the guards'
  // notes are skipped too once nothing is recorded.
  GuardConfig guards;
  guards.max_step_up = 3;
  guards.max_step_down = 2;
  guards.latency_ceiling_seconds = 0.05;
  std::vector<PolicySpec> specs;
  for (const std::string& name : policy_names()) specs.push_back(parse_policy_spec(name));
  specs.push_back(parse_policy_spec("static:16"));
  specs.push_back(parse_policy_spec("pid:metric=drain_time"));
  specs.push_back(parse_policy_spec("keda:polling_interval_seconds=5,cooldown_period_seconds=20"));
  const Trace trace = burst_trace(150.0, 1400.0, 150.0, 80.0);
  for (const PolicySpec& spec : specs) {
    SCOPED_TRACE(spec.label.empty() ? spec.name : spec.label);
    std::vector<RunResult> runs;
    for (int max_decisions : {0, 3, 1'000'000}) {
      SimConfig config;
      config.fidelity = "batch";
      config.batch_size = 10;
      config.max_decisions = max_decisions;
      runs.push_back(simulate(trace, spec, guards, config));
    }
    const RunResult& all = runs[2];
    ASSERT_GE(all.kpis.scale_actions, 1);
    ASSERT_EQ(all.decisions.size(), static_cast<std::size_t>(all.kpis.scale_actions));
    expect_same_kpis(runs[0].kpis, all.kpis);
    expect_same_kpis(runs[1].kpis, all.kpis);
    EXPECT_TRUE(runs[0].decisions.empty());
    // The decisions kept are the same, text included, whatever was skipped after them.
    ASSERT_EQ(runs[1].decisions.size(), std::min<std::size_t>(3, all.decisions.size()));
    for (std::size_t i = 0; i < runs[1].decisions.size(); ++i) {
      const Decision& a = runs[1].decisions[i];
      const Decision& b = all.decisions[i];
      EXPECT_EQ(a.time, b.time);
      EXPECT_EQ(a.workers, b.workers);
      EXPECT_EQ(a.reason, b.reason);
      EXPECT_EQ(a.guards, b.guards);
    }
    for (const Decision& d : all.decisions) ASSERT_FALSE(d.reason.empty()) << "t=" << d.time;
  }
}

}  // namespace
}  // namespace lagpilot::sim
