// Observation::explain: with it false, policies and guards skip their text, and must decide
// exactly the same numbers. Every policy (and the guard chain) runs over the same observation
// sequences three times: always explaining, never explaining, and explaining on a random
// subset of ticks (as the simulator does once it stops recording decisions); the workers, the
// state and the guard outcomes must be identical tick by tick.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "policies/control_loop.h"
#include "policies/guards.h"
#include "policies/policy_factory.h"
#include "tests/policies/fluid_plant.h"
#include "tests/policies/policy_test_util.h"

namespace lagpilot {
namespace {

using testing::build_policy;

std::vector<std::string> specs() {
  std::vector<std::string> v = policy_names();
  v.push_back("static:16");  // outside small bounds: the clamped text
  v.push_back("static:2");
  v.push_back("pid:metric=drain_time");
  v.push_back("pid:output_hysteresis=0.3,tracking_time_seconds=20");
  v.push_back(
      "threshold:steps=[{\"above\":1500,\"workers\":6},{\"above\":2500,\"workers\":8},"
      "{\"above\":6000,\"below\":3000,\"workers\":16}]");
  v.push_back("hpa:target_lag_per_worker=500,scale_down_stabilization_seconds=30");
  v.push_back("keda:lag_threshold=500,allow_idle_consumers=true");
  // Short poll and cooldown, activation above zero: the idle branch is taken often.
  v.push_back(
      "keda:polling_interval_seconds=5,cooldown_period_seconds=20,activation_lag_threshold=800");
  return v;
}

// A hostile open-loop stream: testing::random_observations with its default shape.
std::vector<Observation> random_observations(uint32_t seed, int n) {
  return testing::random_observations(seed, n, testing::RandomObservationShape{});
}

// Which ticks explain in the "mixed" run: long stretches of each, like the simulator (explains
// first, then stops), plus isolated flips.
std::vector<bool> mixed_explain(uint32_t seed, int n) {
  std::mt19937 rng(seed);
  std::vector<bool> out;
  bool on = true;
  for (int i = 0; i < n; ++i) {
    if (std::uniform_int_distribution<int>(0, 60)(rng) == 0) on = !on;
    out.push_back(std::uniform_int_distribution<int>(0, 9)(rng) == 0 ? !on : on);
  }
  return out;
}

class PolicyExplain : public ::testing::TestWithParam<std::string> {};

TEST_P(PolicyExplain, SameNumbersWithAndWithoutTextOnRandomObservations) {
  const int n = 4000;
  const auto stream = random_observations(11, n);
  const auto mixed = mixed_explain(12, n);
  auto with_text = build_policy(GetParam());
  auto without_text = build_policy(GetParam());
  auto mixed_text = build_policy(GetParam());
  int explained = 0;
  for (int i = 0; i < n; ++i) {
    Observation obs = stream[i];
    obs.explain = true;
    const Proposal a = with_text->decide(obs);
    obs.explain = false;
    const Proposal b = without_text->decide(obs);
    obs.explain = mixed[i];
    const Proposal c = mixed_text->decide(obs);
    ASSERT_EQ(a.workers, b.workers) << GetParam() << " tick " << i << " t=" << obs.time;
    ASSERT_EQ(a.workers, c.workers) << GetParam() << " tick " << i << " t=" << obs.time;
    ASSERT_FALSE(a.reason.empty()) << "tick " << i;
    EXPECT_TRUE(b.reason.empty()) << "no text asked for, got: " << b.reason;
    if (mixed[i]) {
      ASSERT_EQ(c.reason, a.reason) << "tick " << i;  // text does not depend on earlier ticks
      ++explained;
    }
  }
  EXPECT_GT(explained, n / 10);
  EXPECT_LT(explained, n - n / 10);
  EXPECT_EQ(with_text->state(), without_text->state());
  EXPECT_EQ(with_text->state(), mixed_text->state());
}

TEST_P(PolicyExplain, SameNumbersWithAndWithoutTextInClosedLoop) {
  // Each instance drives its own plant: any difference would make the plants diverge.
  for (double arrival : {150.0, 650.0, 1150.0, 2400.0}) {
    testing::FluidPlant plant_a, plant_b;
    plant_a.arrival = plant_b.arrival = arrival;
    plant_a.lag = plant_b.lag = 15000;
    auto with_text = build_policy(GetParam());
    auto without_text = build_policy(GetParam());
    for (int i = 0; i < 1500; ++i) {
      Observation oa = plant_a.observe();
      Observation ob = plant_b.observe();
      ob.explain = false;
      const Proposal a = with_text->decide(oa);
      const Proposal b = without_text->decide(ob);
      ASSERT_EQ(a.workers, b.workers) << GetParam() << " arrival " << arrival << " tick " << i;
      plant_a.workers = a.workers;
      plant_b.workers = b.workers;
      plant_a.step(1.0);
      plant_b.step(1.0);
    }
    EXPECT_EQ(plant_a.lag, plant_b.lag);
    EXPECT_EQ(with_text->state(), without_text->state());
  }
}

std::string spec_name(const ::testing::TestParamInfo<std::string>& info) {
  return testing::spec_test_name(info.param, info.index, 50);
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, PolicyExplain, ::testing::ValuesIn(specs()), spec_name);

// The texts are written without snprintf (faster); they must still be exactly printf's. The PID
// reason is rebuilt here with snprintf from state() and params(); the variants make the terms
// land on rounding ties (kp = 0.125 on whole lags gives .125, .375, ...), on negative values
// and on -0.00, and the drain-time metric on arbitrary fractions.
std::string printf_text(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

TEST(ReasonText, PidMatchesPrintf) {
  for (const char* spec :
       {"pid", "pid:metric=drain_time", "pid:kp=0.125,ki=0,kd=0,dead_band=0,setpoint=1000",
        "pid:kp=0.005,ki=0.0025,kd=0.5,dead_band=0,setpoint=100,tracking_time_seconds=0",
        "pid:kp=0.001,setpoint=3.5,dead_band=0.75,measurement_filter_seconds=3"}) {
    auto policy = build_policy(spec);
    const nlohmann::json params = policy->params();
    const bool drain = params["metric"] == "drain_time";
    int checked = 0;
    for (const Observation& obs : random_observations(21, 3000)) {
      const Proposal p = policy->decide(obs);
      const nlohmann::json st = policy->state();
      std::string expected =
          drain ? "drain time " + printf_text("%.1f", st["measurement"].get<double>()) + " s"
                : "lag " + printf_text("%.0f", st["measurement"].get<double>());
      expected += " vs setpoint " + printf_text("%.6g", params["setpoint"].get<double>()) +
                  (drain ? " s" : "");
      if (st["effective_error"].get<double>() == 0.0) {
        expected +=
            " (within dead band " + printf_text("%.6g", params["dead_band"].get<double>()) + ")";
      }
      expected +=
          ": P " + printf_text("%+.2f", st["p"].get<double>()) + " I " +
          printf_text("%.2f", st["i"].get<double>()) + " D " +
          printf_text("%+.2f", st["d"].get<double>()) + " = " +
          printf_text("%.2f", st["output"].get<double>()) + " -> " +
          (st["floored"].get<bool>()
               ? "held at " + std::to_string(p.workers) + " (busy " +
                     printf_text("%.1f", st["busy"].get<double>()) + " workers at most " +
                     printf_text("%.6g", params["scale_down_utilization"].get<double>() * 100) +
                     "% of the pool)"
               : std::to_string(p.workers));
      ASSERT_EQ(p.reason, expected) << spec << " t=" << obs.time;
      ++checked;
    }
    EXPECT_EQ(checked, 3000);
  }
}

// The threshold reason names the threshold crossed (or the band held), in %.6g.
TEST(ReasonText, ThresholdMatchesPrintf) {
  for (const char* spec :
       {"threshold",
        "threshold:steps=[{\"above\":1500.5,\"below\":0.125,\"workers\":6},{\"above\":2500,"
        "\"workers\":8},{\"above\":1234567,\"below\":999999.5,\"workers\":16}]"}) {
    auto policy = build_policy(spec);
    const nlohmann::json steps = policy->params()["steps"];
    int from = -1;
    for (const Observation& obs : random_observations(23, 3000)) {
      const Proposal p = policy->decide(obs);
      const int level = policy->state()["level"].get<int>();
      if (from < 0) {  // the first tick starts from the highest level the pool already has
        from = 0;
        for (int l = 1; l <= static_cast<int>(steps.size()); ++l) {
          if (steps[l - 1]["workers"].get<int>() <= obs.current_workers) from = l;
        }
      }
      std::string expected = "lag " + std::to_string(obs.total_lag);
      const int level_workers = policy->state()["level_workers"].get<int>();
      if (level > from) {
        expected += " above " + printf_text("%.6g", steps[level - 1]["above"].get<double>()) +
                    ": step up to ";
      } else if (level < from) {
        expected += " below " + printf_text("%.6g", steps[level]["below"].get<double>()) +
                    ": step down to ";
      } else {
        const int top = static_cast<int>(steps.size());
        expected +=
            " within [" +
            (level > 0 ? printf_text("%.6g", steps[level - 1]["below"].get<double>()) : "-") +
            ", " + (level < top ? printf_text("%.6g", steps[level]["above"].get<double>()) : "-") +
            "]: hold ";
      }
      expected += std::to_string(level_workers);
      ASSERT_EQ(p.reason.substr(0, expected.size()), expected) << spec << " t=" << obs.time;
      from = level;
    }
  }
}

// Guard notes print seconds with %.3g; whole windows take a shortcut, the rest to_chars.
TEST(ReasonText, GuardNotesMatchPrintf) {
  for (double window : {60.0, 7.5, 999.0, 1000.0, 1234.0, 0.001}) {
    GuardConfig c;
    c.scale_down_window_seconds = window;
    GuardChain chain(c);
    Observation obs;
    obs.time = 100.0;
    obs.current_workers = 12;
    chain.apply({12, ""}, "t", obs);
    obs.time += window / 2;
    const Decision d = chain.apply({5, ""}, "t", obs);
    ASSERT_EQ(d.workers, 12) << window;
    ASSERT_EQ(d.guards.size(), 1u);
    EXPECT_EQ(d.guards[0], "stabilization: 12 recommended within " + printf_text("%.3g s", window) +
                               ", holding 12 instead of 5");
  }
}

// The hold texts between HPA syncs and of an idle KEDA print periods with %.6g.
TEST(ReasonText, PeriodsMatchPrintf) {
  Observation obs;
  obs.time = 10.0;
  obs.current_workers = 6;
  obs.min_workers = 4;
  obs.max_workers = 16;
  for (double period : {15.0, 7.5, 0.25, 86400.0}) {
    auto hpa = build_policy("hpa:sync_period_seconds=" + printf_text("%.17g", period));
    hpa->decide(obs);
    Observation next = obs;
    next.time += period / 2;
    EXPECT_EQ(hpa->decide(next).reason,
              "between syncs (every " + printf_text("%.6g", period) + " s): hold 4");
    auto keda = build_policy("keda:cooldown_period_seconds=" + printf_text("%.17g", period) +
                             ",activation_lag_threshold=10");
    obs.total_lag = 100;  // active: the cooldown starts here
    keda->decide(obs);
    next.total_lag = 0;
    next.time = obs.time + 30.0 + period;  // the next poll, inactive, past the cooldown
    EXPECT_EQ(keda->decide(next).reason, "lag 0 <= activation threshold 10 for the cooldown (" +
                                             printf_text("%.6g", period) + " s): idle at min 4");
    obs.total_lag = 0;
  }
}

// Every guard enabled; proposals and latencies random; an operator pin now and then.
GuardConfig all_guards() {
  GuardConfig c;
  c.min_workers = 3;
  c.max_workers = 20;
  c.hard_min_workers = 1;
  c.hard_max_workers = 40;
  c.max_step_up = 4;
  c.max_step_down = 3;
  c.scale_down_window_seconds = 30;
  c.latency_ceiling_seconds = 0.2;
  c.latency_ceiling_judge_seconds = 5;
  return c;
}

TEST(GuardExplain, SameDecisionsWithAndWithoutNotes) {
  const int n = 6000;
  const auto mixed = mixed_explain(5, n);
  GuardChain with_notes(all_guards()), without_notes(all_guards()), mixed_notes(all_guards());
  std::mt19937 rng(3);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int current = 6;
  double t = 0;
  std::vector<std::string> kinds_seen;
  for (int i = 0; i < n; ++i) {
    t += pick(0, 4) == 0 ? 3.0 : 1.0;
    if (pick(0, 400) == 0) {
      const ManualOverride pin{pick(1, 40), t + pick(1, 30), pick(0, 1) ? "drill" : ""};
      with_notes.set_override(pin);
      without_notes.set_override(pin);
      mixed_notes.set_override(pin);
    }
    Observation obs;
    obs.time = t;
    obs.current_workers = current;
    obs.latency_p99 = pick(0, 2) == 0 ? 0.5 : 0.05;
    obs.processed_rate = 100.0 * current * (pick(0, 3) == 0 ? 0.5 : 1.0);
    const Proposal proposal{pick(0, 30), "p"};
    obs.explain = true;
    const Decision a = with_notes.apply(proposal, "test", obs);
    obs.explain = false;
    const Decision b = without_notes.apply(proposal, "test", obs);
    obs.explain = mixed[i];
    const Decision c = mixed_notes.apply(proposal, "test", obs);
    for (const Decision* d : {&b, &c}) {
      ASSERT_EQ(d->workers, a.workers) << "tick " << i;
      ASSERT_EQ(d->policy_workers, a.policy_workers);
      ASSERT_EQ(d->previous_workers, a.previous_workers);
      ASSERT_EQ(d->source, a.source);
      ASSERT_EQ(d->reason, a.reason);
    }
    EXPECT_TRUE(b.guards.empty()) << b.guards.front();
    if (mixed[i]) {
      ASSERT_EQ(c.guards, a.guards) << "tick " << i;
    }
    for (const auto& note : a.guards) {
      const std::string kind = note.substr(0, note.find(':'));
      if (std::find(kinds_seen.begin(), kinds_seen.end(), kind) == kinds_seen.end()) {
        kinds_seen.push_back(kind);
      }
    }
    current = pick(0, 5) == 0 ? pick(1, 30) : a.workers;  // now and then the pool disagrees
  }
  // The run exercised every guard, so the comparison above covers each of them.
  std::sort(kinds_seen.begin(), kinds_seen.end());
  EXPECT_EQ(kinds_seen, (std::vector<std::string>{"bounds", "latency ceiling", "override",
                                                  "stabilization", "step limit"}));
}

// Stabilization keeps only the recommendations that can still be the window's highest; the
// outcome must be that of the plain rule: the highest recommendation of the last window wins.
TEST(GuardExplain, StabilizationMatchesTheHighestInTheWindow) {
  for (double window : {1.0, 7.0, 30.0, 300.0}) {
    GuardConfig c;
    c.min_workers = c.hard_min_workers = 1;
    c.max_workers = c.hard_max_workers = 64;
    c.scale_down_window_seconds = window;
    GuardChain chain(c);
    std::deque<std::pair<double, int>> reference;  // every recommendation, pruned by time only
    std::mt19937 rng(static_cast<uint32_t>(window));
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    double t = 0;
    int current = 10;
    for (int i = 0; i < 5000; ++i) {
      t += pick(0, 3) == 0 ? 0.0 : pick(1, 5) * 0.5;  // repeated times too
      const int proposed = pick(1, 64);
      while (!reference.empty() && reference.front().first < t - window) reference.pop_front();
      reference.emplace_back(t, proposed);
      int expected = proposed;
      if (proposed < current) {
        int highest = proposed;
        for (const auto& [time, rec] : reference) highest = std::max(highest, rec);
        expected = std::max(proposed, std::min(highest, current));
      }
      Observation obs;
      obs.time = t;
      obs.current_workers = current;
      obs.explain = (i % 3) != 0;
      const Decision d = chain.apply({proposed, ""}, "t", obs);
      ASSERT_EQ(d.workers, expected) << "window " << window << " tick " << i << " t=" << t;
      current = pick(0, 3) == 0 ? pick(1, 64) : d.workers;
    }
  }
}

// The ControlLoop passes the sampler's explain through to the policy and the guards untouched,
// and its recycled history entries hold exactly the latest decisions.
TEST(ControllerExplain, PassesExplainThroughAndKeepsHistoryExact) {
  struct Sampler1 : Sampler {
    bool explain = true;
    int current = 4;
    Observation sample(double now) override {
      Observation o;
      o.time = now;
      o.current_workers = current;
      o.explain = explain;
      return o;
    }
  };
  struct Actuator1 : Actuator {
    Sampler1* sampler = nullptr;
    void resize(int n) override { sampler->current = n; }
  };
  // Proposes 30 (clamped by bounds: a guard note) on odd ticks, 8 on even ones; says in its
  // reason whether it was asked to explain.
  struct Policy1 : Policy {
    std::vector<bool> seen;
    int tick = 0;
    std::string name() const override { return "p1"; }
    Proposal decide(const Observation& o) override {
      seen.push_back(o.explain);
      ++tick;
      return {tick % 2 ? 30 : 8, o.explain ? "tick " + std::to_string(tick) + " explained" : ""};
    }
    nlohmann::json params() const override { return nlohmann::json::object(); }
  };
  Sampler1 sampler;
  Actuator1 actuator;
  actuator.sampler = &sampler;
  auto policy = std::make_unique<Policy1>();
  Policy1* raw = policy.get();
  GuardConfig g;
  g.scale_down_window_seconds = 0;
  ControlLoop controller(sampler, actuator, std::move(policy), g, /*decision_history=*/3);
  std::vector<bool> asked;
  for (int i = 1; i <= 11; ++i) {
    sampler.explain = (i % 3) != 0;
    asked.push_back(sampler.explain);
    const Decision d = controller.tick(i);
    EXPECT_EQ(d.workers, i % 2 ? 16 : 8);
    EXPECT_EQ(d.guards.empty(), !(sampler.explain && i % 2)) << "tick " << i;
  }
  EXPECT_EQ(raw->seen, asked);
  const std::vector<Decision> recent = controller.recent_decisions(10);
  ASSERT_EQ(recent.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    const int i = 9 + k;
    const bool explained = (i % 3) != 0;
    EXPECT_EQ(recent[k].time, i);
    EXPECT_EQ(recent[k].workers, i % 2 ? 16 : 8);
    EXPECT_EQ(recent[k].reason, explained ? "tick " + std::to_string(i) + " explained" : "");
    EXPECT_EQ(recent[k].guards.size(), explained && i % 2 ? 1u : 0u) << "tick " << i;
  }
  EXPECT_EQ(controller.last_decision()->time, 11);
}

}  // namespace
}  // namespace lagpilot
