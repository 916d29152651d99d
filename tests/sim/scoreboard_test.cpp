// The multi-trace scoreboard against a case computed by hand: two traces, two policies, with the
// oracle and HPA as references.
#include "sim/scoreboard.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace lagpilot::sim {
namespace {

RunResult run(const std::string& label, const std::string& policy, double worker_seconds,
              double above_slo, int actions, int reversals, int max_workers) {
  RunResult r;
  r.label = label;
  r.policy = policy;
  r.kpis.worker_seconds = worker_seconds;
  r.kpis.seconds_above_slo = above_slo;
  r.kpis.scale_actions = actions;
  r.kpis.reversals = reversals;
  r.kpis.max_workers = max_workers;
  return r;
}

std::vector<TraceRuns> two_traces() {
  return {{"a",
           {run("p1", "pid", 1100, 30, 10, 4, 12), run("p2", "model", 1300, 200, 30, 2, 50),
            run("hpa", "hpa", 1200, 110, 20, 8, 10), run("oracle", "oracle", 1000, 10, 6, 2, 16)}},
          {"b",
           {run("p1", "pid", 2400, 150, 4, 3, 12), run("p2", "model", 2000, 0, 0, 0, 8),
            run("hpa", "hpa", 2100, 400, 10, 6, 16), run("oracle", "oracle", 2000, 0, 8, 4, 16)}}};
}

TEST(Scoreboard, MatchesAHandComputedCase) {
  const Scoreboard b = build_scoreboard(two_traces(), 44.3);
  ASSERT_EQ(b.policies.size(), 4u);
  EXPECT_TRUE(b.has_oracle);
  EXPECT_TRUE(b.has_hpa);

  // p1: ratios 1.1 (a) and 1.2 (b). Avoidable: 30 - 10 = 20 against HPA's 110 - 10 = 100
  // (limit 0.25 x 100 + 60 = 85), 150 against 400 (limit 160). Actions 10 <= 0.5 x 20 and
  // 4 <= 0.5 x 10; reversals 4 <= 0.5 x 8 and 3 <= 0.5 x 6. Only b's 1.2x misses a goal.
  const PolicyScore& p1 = b.policies[0];
  EXPECT_EQ(p1.label, "p1");
  EXPECT_DOUBLE_EQ(p1.worst_worker_seconds_ratio, 1.2);
  EXPECT_NEAR(p1.geomean_worker_seconds_ratio, std::sqrt(1.1 * 1.2), 1e-12);
  EXPECT_DOUBLE_EQ(p1.avoidable_seconds, 170);
  EXPECT_DOUBLE_EQ(p1.hpa_avoidable_seconds, 500);
  EXPECT_EQ(p1.scale_actions, 14);
  EXPECT_EQ(p1.hpa_scale_actions, 30);
  EXPECT_DOUBLE_EQ(p1.worst_actions_ratio, 0.5);
  EXPECT_EQ(p1.reversals, 7);
  EXPECT_EQ(p1.hpa_reversals, 14);
  EXPECT_DOUBLE_EQ(p1.worst_reversals_ratio, 0.5);
  EXPECT_EQ(p1.worker_seconds_misses, 1);
  EXPECT_EQ(p1.slo_misses, 0);
  EXPECT_EQ(p1.actions_misses, 0);
  EXPECT_EQ(p1.reversals_misses, 0);
  EXPECT_EQ(p1.peak_misses, 0);
  EXPECT_TRUE(p1.traces[0].worker_seconds_ok);
  EXPECT_FALSE(p1.traces[1].worker_seconds_ok);

  // p2 on a: 1.3x, 190 s avoidable (> 85), 30 actions (> 10), 2 reversals (<= 4), 50 workers
  // above N* = 44.3; on b: 1.0x and nothing else. Reversal ratios 2/8 and 0/6.
  const PolicyScore& p2 = b.policies[1];
  EXPECT_DOUBLE_EQ(p2.worst_worker_seconds_ratio, 1.3);
  EXPECT_NEAR(p2.geomean_worker_seconds_ratio, std::sqrt(1.3), 1e-12);
  EXPECT_DOUBLE_EQ(p2.avoidable_seconds, 190);
  EXPECT_DOUBLE_EQ(p2.worst_actions_ratio, 1.5);
  EXPECT_DOUBLE_EQ(p2.worst_reversals_ratio, 0.25);
  EXPECT_EQ(p2.worker_seconds_misses, 1);
  EXPECT_EQ(p2.slo_misses, 1);
  EXPECT_EQ(p2.actions_misses, 1);
  EXPECT_EQ(p2.reversals_misses, 0);
  EXPECT_EQ(p2.peak_misses, 1);
  EXPECT_EQ(p2.max_workers, 50);

  // The references: HPA 1.2x and 1.05x; the oracle 1x, with its own actions reported.
  EXPECT_TRUE(b.policies[2].is_hpa);
  EXPECT_NEAR(b.policies[2].geomean_worker_seconds_ratio, std::sqrt(1.2 * 1.05), 1e-12);
  EXPECT_TRUE(b.policies[3].is_oracle);
  EXPECT_DOUBLE_EQ(b.policies[3].worst_worker_seconds_ratio, 1.0);
  EXPECT_EQ(b.policies[3].scale_actions, 14);
  EXPECT_EQ(b.policies[3].reversals, 6);

  const std::string text = format_scoreboard(b);
  EXPECT_NE(text.find("FAIL 1/2"), std::string::npos) << text;
  EXPECT_NE(text.find("p2 misses: [a: ws 1.30x slo 190s (HPA's 100) actions 30 (HPA's 20) max "
                      "workers 50]"),
            std::string::npos)
      << text;
  const nlohmann::json j = scoreboard_to_json(b);
  EXPECT_EQ(j["policies"][0]["traces_missing"]["worker_seconds"], 1);
  EXPECT_EQ(j["policies"][1]["meets_all_goals"], false);
  EXPECT_EQ(j["policies"][3]["reference"], "oracle");
  std::ostringstream html;
  write_scoreboard_table(html, b);
  EXPECT_NE(html.str().find("<table id=\"scoreboard\""), std::string::npos);
}

TEST(Scoreboard, ActionsAgainstAnIdleHpaAreTooMany) {
  std::vector<TraceRuns> t = {
      {"idle",
       {run("p", "pid", 100, 0, 1, 0, 4), run("hpa", "hpa", 100, 0, 0, 0, 4),
        run("oracle", "oracle", 100, 0, 0, 0, 4)}}};
  const Scoreboard b = build_scoreboard(t, 44.3);
  EXPECT_TRUE(std::isinf(b.policies[0].worst_actions_ratio));
  EXPECT_EQ(b.policies[0].actions_misses, 1);
  EXPECT_EQ(b.policies[0].worst_reversals_ratio, 0.0);  // 0 against 0
  EXPECT_EQ(b.policies[0].reversals_misses, 0);
}

TEST(Scoreboard, ActionBoundsMarkTracesWhereTheGoalsCannotBeMetTogether) {
  // K from HPA's actions: floor(0.5 x 20) = 10 on a, floor(0.5 x 10) = 5 on b.
  EXPECT_EQ(action_budget_of(two_traces()[0].runs), 10);
  EXPECT_EQ(action_budget_of(two_traces()[1].runs), 5);
  EXPECT_EQ(action_budget_of({run("p", "pid", 1, 0, 0, 0, 1)}), -1);

  Scoreboard b = build_scoreboard(two_traces(), 44.3);
  // b (p1 misses 1.2x there): the least with 5 actions is 1.2x the oracle's: impossible. a: the
  // bound is 1.05x and a schedule with 10 actions reaches 1.1x: possible.
  TraceActionBound on_a;
  on_a.trace = "a";
  on_a.hpa_scale_actions = 20;
  on_a.hpa_reversals = 8;
  on_a.bound.budget = 10;
  on_a.bound.oracle_worker_ticks = 1000;
  on_a.bound.bound_worker_ticks = 1050;
  on_a.bound.has_witness = true;
  on_a.bound.witness_worker_ticks = 1100;
  on_a.bound.witness_actions = 9;
  TraceActionBound on_b;
  on_b.trace = "b";
  on_b.hpa_scale_actions = 10;
  on_b.hpa_reversals = 6;
  on_b.bound.budget = 5;
  on_b.bound.oracle_worker_ticks = 2000;
  on_b.bound.bound_worker_ticks = 2400;
  // And with at most floor(0.5 x 6) = 3 reversals on b: impossible too (1.3x).
  on_b.has_reversal_bound = true;
  on_b.reversal_bound.reversals = true;
  on_b.reversal_bound.budget = 3;
  on_b.reversal_bound.oracle_worker_ticks = 2000;
  on_b.reversal_bound.bound_worker_ticks = 2600;
  // Both budgets together on b: at least 1.35x, and a schedule with 4 actions and 2 reversals
  // at 1.45x.
  on_b.joint.bound_worker_ticks = 2700;
  on_b.joint.has_witness = true;
  on_b.joint.witness_worker_ticks = 2900;
  on_b.joint.witness_actions = 4;
  on_b.joint.witness_reversals = 2;
  b.action_bounds = {on_a, on_b};
  EXPECT_STREQ(action_budget_verdict(on_a.bound, 1.15), "possible");
  EXPECT_STREQ(action_budget_verdict(on_b.bound, 1.15), "impossible");
  on_a.bound.witness_worker_ticks = 1200;
  EXPECT_STREQ(action_budget_verdict(on_a.bound, 1.15), "open");

  const std::string text = format_scoreboard(b);
  EXPECT_NE(text.find("[b: ws 1.20x (ws and actions together: impossible) (ws and reversals "
                      "together: impossible)]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("1.300x"), std::string::npos) << text;
  EXPECT_NE(text.find("1.350x"), std::string::npos) << text;
  EXPECT_NE(text.find("1.450x (4, 2)"), std::string::npos) << text;
  EXPECT_EQ(reversal_budget_of(two_traces()[1].runs), 3);
  EXPECT_NE(text.find("1.200x"), std::string::npos) << text;
  EXPECT_NE(text.find("1.050x"), std::string::npos) << text;
  const nlohmann::json j = scoreboard_to_json(b);
  ASSERT_EQ(j["action_bounds"].size(), 2u);
  EXPECT_EQ(j["action_bounds"][1]["verdict"], "impossible");
  EXPECT_EQ(j["action_bounds"][1]["budget"], 5);
  EXPECT_EQ(j["action_bounds"][1]["reversals"]["verdict"], "impossible");
  EXPECT_FALSE(j["action_bounds"][0].contains("reversals"));
  EXPECT_DOUBLE_EQ(j["action_bounds"][0]["bound_ratio"].get<double>(), 1.05);
  std::ostringstream html;
  write_scoreboard_table(html, b);
  EXPECT_NE(html.str().find("<table id=\"action-bound\""), std::string::npos);
  EXPECT_NE(html.str().find("<table id=\"reversal-bound\""), std::string::npos);
}

TEST(Scoreboard, TheSloAllowanceBoundDecidesWhetherWsAndReversalsAreImpossible) {
  // A: 0.25 x HPA's avoidable + 60 s, in ticks: a 0.25 x (110 - 10) + 60 = 85 s, b
  // 0.25 x 400 + 60 = 160 s; at 2 s ticks 42 and 80 (whole ticks, down).
  EXPECT_EQ(slo_allowance_ticks_of(two_traces()[0].runs, 1.0), 85);
  EXPECT_EQ(slo_allowance_ticks_of(two_traces()[0].runs, 2.0), 42);
  EXPECT_EQ(slo_allowance_ticks_of(two_traces()[1].runs, 2.0), 80);
  EXPECT_EQ(slo_allowance_ticks_of({run("p", "pid", 1, 0, 0, 0, 1)}, 1.0), -1);

  // b: within the SLO, 3 reversals need 1.3x (impossible); with 160 ticks above it allowed the
  // bound is only 1.1x and no witness is known: open, so the mark goes.
  Scoreboard b = build_scoreboard(two_traces(), 44.3);
  TraceActionBound on_b;
  on_b.trace = "b";
  on_b.hpa_reversals = 6;
  on_b.bound.oracle_worker_ticks = 2000;
  on_b.bound.bound_worker_ticks = 2000;
  on_b.has_reversal_bound = true;
  on_b.reversal_bound.reversals = true;
  on_b.reversal_bound.budget = 3;
  on_b.reversal_bound.oracle_worker_ticks = 2000;
  on_b.reversal_bound.bound_worker_ticks = 2600;
  on_b.has_slo_bound = true;
  on_b.slo_bound = on_b.reversal_bound;
  on_b.slo_bound.slo_allowance_ticks = 160;
  on_b.slo_bound.bound_worker_ticks = 2200;
  b.action_bounds = {on_b};
  std::string text = format_scoreboard(b);
  EXPECT_EQ(text.find("(ws and reversals together: impossible)"), std::string::npos) << text;
  EXPECT_NE(text.find("1.100x"), std::string::npos) << text;
  nlohmann::json j = scoreboard_to_json(b);
  EXPECT_EQ(j["action_bounds"][0]["reversals"]["verdict"], "impossible");
  EXPECT_EQ(j["action_bounds"][0]["reversals_and_slo_allowance"]["verdict"], "open");
  EXPECT_EQ(j["action_bounds"][0]["reversals_and_slo_allowance"]["slo_allowance_ticks"], 160);
  // Both carry the budget's fields; neither has a witness here.
  for (const char* key : {"reversals", "reversals_and_slo_allowance"}) {
    const nlohmann::json& r = j["action_bounds"][0][key];
    EXPECT_EQ(r["budget"], 3) << key;
    EXPECT_EQ(r["budget_feasible"], true) << key;
    EXPECT_TRUE(r["witness_worker_seconds"].is_null()) << key;
    EXPECT_TRUE(r["witness_reversals"].is_null()) << key;
  }
  EXPECT_DOUBLE_EQ(j["action_bounds"][0]["reversals"]["bound_ratio"].get<double>(), 1.3);
  EXPECT_DOUBLE_EQ(
      j["action_bounds"][0]["reversals_and_slo_allowance"]["bound_ratio"].get<double>(), 1.1);
  EXPECT_TRUE(j["action_bounds"][0]["reversals"]["witness_scale_actions"].is_null());
  EXPECT_TRUE(
      j["action_bounds"][0]["reversals_and_slo_allowance"]["witness_ticks_above_slo"].is_null());
  // With the allowance spent the bound is still 1.2x: impossible, marked.
  b.action_bounds[0].slo_bound.bound_worker_ticks = 2400;
  text = format_scoreboard(b);
  EXPECT_NE(text.find("(ws and reversals together: impossible)"), std::string::npos) << text;
  j = scoreboard_to_json(b);
  EXPECT_EQ(j["action_bounds"][0]["reversals_and_slo_allowance"]["verdict"], "impossible");
  // A trace whose bound within the SLO already has a witness needs no allowance bound.
  b.action_bounds[0].has_slo_bound = false;
  EXPECT_NE(format_scoreboard(b).find("not needed"), std::string::npos);
  EXPECT_FALSE(scoreboard_to_json(b)["action_bounds"][0].contains("reversals_and_slo_allowance"));
}

TEST(Scoreboard, TracesMustHaveTheSameRuns) {
  std::vector<TraceRuns> t = two_traces();
  std::swap(t[1].runs[0], t[1].runs[1]);
  EXPECT_THROW(build_scoreboard(t, 44.3), std::invalid_argument);
  t[1].runs.pop_back();
  EXPECT_THROW(build_scoreboard(t, 44.3), std::invalid_argument);
  EXPECT_THROW(build_scoreboard({}, 44.3), std::invalid_argument);
}

}  // namespace
}  // namespace lagpilot::sim
