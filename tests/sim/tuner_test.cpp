// sim/tuner.h: search spaces, strategies, determinism, Nelder-Mead, the Pareto front.
#include "sim/tuner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "policies/config_reader.h"
#include "policies/policy_factory.h"
#include "sim/random.h"
#include "sim/report.h"
#include "sim_test_util.h"

namespace lagpilot::sim {
namespace {

using nlohmann::json;
using testing::constant_trace;

constexpr double kInf = std::numeric_limits<double>::infinity();

// A bursty trace that makes the pid parameters matter: quiet, a burst above the capacity of
// 4 workers, quiet again (1 s bins, ~20 simulated minutes), at a small message rate so a run
// takes milliseconds.
Trace bursty_trace() {
  Trace t;
  t.source = "bursty";
  t.bin_seconds = 1.0;
  for (int i = 0; i < 1200; ++i) {
    const bool burst = (i / 200) % 2 == 1;
    t.rates.push_back(burst ? 700.0 : 150.0);
  }
  return t;
}

SimConfig fast_config() {
  SimConfig c;
  c.fidelity = "batch";
  c.lag_slo = 3000;
  return c;
}

TuneOptions options(const std::string& strategy, int budget, int threads, uint64_t seed = 7) {
  TuneOptions o;
  o.strategy = strategy;
  o.budget = budget;
  o.threads = threads;
  o.seed = seed;
  return o;
}

// The identity of a search's outcome: every configuration with its numbers, in order.
std::vector<std::pair<std::vector<double>, std::vector<double>>> fingerprint(const TuneResult& r) {
  std::vector<std::pair<std::vector<double>, std::vector<double>>> out;
  for (const auto& e : r.evaluations) {
    out.push_back({e.values,
                   {e.objective, e.worker_seconds, e.seconds_above_slo, double(e.scale_actions),
                    double(e.on_pareto_front)}});
  }
  return out;
}

ConfigError space_error(const json& spec, const std::string& policy = "") {
  try {
    TuneSpace::from_json(spec, policy);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no ConfigError for " << spec.dump();
  return ConfigError("", "");
}

// ---------------------------------------------------------------------------------------------
// Objective

TEST(Objective, IsMeanWorkersPlusPenaltiesPerSecondOfTrace) {
  Kpis k;
  k.worker_seconds = 8000;
  k.seconds_above_slo = 30;
  k.scale_actions = 12;
  k.duration_seconds = 1000;
  ObjectiveWeights w;
  EXPECT_DOUBLE_EQ(run_objective(k, w), (8000 + 100.0 * 30 + 10.0 * 12) / 1000);
  w.slo = 0;
  w.actions = 0;
  EXPECT_DOUBLE_EQ(run_objective(k, w), 8.0);
  k.duration_seconds = 0;
  EXPECT_EQ(run_objective(k, w), kInf);
}

TEST(Objective, WeightsParseOnTopOfABase) {
  ObjectiveWeights base;
  base.slo = 5;
  base.actions = 7;
  const ObjectiveWeights w = ObjectiveWeights::parse("slo=50", base);
  EXPECT_EQ(w.slo, 50);
  EXPECT_EQ(w.actions, 7);
  EXPECT_EQ(ObjectiveWeights::parse("actions=0,slo=1", base).actions, 0);
  try {
    ObjectiveWeights::parse("slo=-1", base);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "--weights.slo");
  }
  try {
    ObjectiveWeights::parse("flaps=3", base);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "--weights.flaps");
  }
  EXPECT_THROW(ObjectiveWeights::parse("slo", base), ConfigError);
  EXPECT_THROW(ObjectiveWeights::parse("slo=abc", base), ConfigError);
}

// ---------------------------------------------------------------------------------------------
// Search space

TEST(TuneSpace, ReadsParamsAndMapsTheUnitCube) {
  const TuneSpace space = TuneSpace::from_json(json::parse(R"({
      "policy": "threshold",
      "fixed": {"steps": [{"above": 5000, "workers": 16}]},
      "params": {
        "steps[0].above": {"min": 100, "max": 10000, "log": true},
        "base_workers": {"min": 4, "max": 8},
        "hysteresis": {"min": 0.2, "max": 0.6, "points": 3}
      }})"));
  ASSERT_EQ(space.params.size(), 3u);
  // Sorted names (JSON object order).
  EXPECT_EQ(space.params[0].name, "base_workers");
  EXPECT_TRUE(space.params[0].integer) << "integer parameters are detected from the policy";
  EXPECT_EQ(space.params[1].name, "hysteresis");
  EXPECT_EQ(space.params[1].points, 3);
  EXPECT_FALSE(space.params[1].integer);
  EXPECT_TRUE(space.params[2].log_scale);

  const TuneParam& log_param = space.params[2];
  EXPECT_DOUBLE_EQ(log_param.value_at(0.0), 100);
  EXPECT_DOUBLE_EQ(log_param.value_at(1.0), 10000);
  EXPECT_NEAR(log_param.value_at(0.5), 1000, 1e-9);  // geometric middle
  EXPECT_NEAR(log_param.position_of(1000), 0.5, 1e-9);
  EXPECT_DOUBLE_EQ(log_param.value_at(-3), 100) << "clamped";

  // Integers: one equal bucket of u per value, and position_of lands inside the bucket.
  const TuneParam& ints = space.params[0];
  std::vector<int> hits(5, 0);
  for (int i = 0; i < 1000; ++i) {
    const double v = ints.value_at((i + 0.5) / 1000.0);
    ASSERT_EQ(v, std::floor(v));
    ASSERT_GE(v, 4);
    ASSERT_LE(v, 8);
    ++hits[static_cast<int>(v) - 4];
  }
  for (int h : hits) EXPECT_EQ(h, 200);
  for (int v = 4; v <= 8; ++v) EXPECT_EQ(ints.value_at(ints.position_of(v)), v);

  const json params = space.params_for({6, 0.3, 2500});
  EXPECT_EQ(params["base_workers"], 6);
  EXPECT_TRUE(params["base_workers"].is_number_integer());
  EXPECT_DOUBLE_EQ(params["hysteresis"].get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(params["steps"][0]["above"].get<double>(), 2500);
  EXPECT_EQ(params["steps"][0]["workers"], 16) << "fixed values stay";
  const auto back = space.position_of(make_policy("threshold", params)->params());
  EXPECT_EQ(space.values_at(back), (std::vector<double>{6, 0.3, 2500}));
}

TEST(TuneSpace, TunedPathMissingFromFixedStartsFromTheResolvedDefault) {
  const TuneSpace space = TuneSpace::from_json(
      json{{"policy", "threshold"}, {"params", {{"steps[0].workers", {{"min", 9}, {"max", 16}}}}}});
  const json params = space.params_for({12});
  ASSERT_TRUE(params["steps"].is_array());
  EXPECT_EQ(params["steps"][0]["workers"], 12);
  EXPECT_EQ(params["steps"][0]["above"], default_params("threshold")["steps"][0]["above"]);
  EXPECT_NO_THROW(make_policy("threshold", params));
}

TEST(TuneSpace, AcceptsATuneWrapperAndRoundTrips) {
  const json spec = json::parse(R"({"tune": {"policy": "pid", "fixed": {"metric": "lag"},
      "params": {"kp": {"min": 0.0001, "max": 0.01, "log": true, "points": 4}},
      "weights": {"slo": 20, "actions": 1}}})");
  const TuneSpace space = TuneSpace::from_json(spec, "pid");
  EXPECT_TRUE(space.has_weights);
  EXPECT_EQ(space.weights.slo, 20);
  const TuneSpace again = TuneSpace::from_json(space.to_json(), "pid");
  EXPECT_EQ(again.to_json(), space.to_json());
}

TEST(TuneSpace, BadSpecsNameTheJsonPath) {
  EXPECT_EQ(space_error(json{{"policy", "pid"}}).path(), "tune.params");
  EXPECT_EQ(space_error(json{{"policy", "pid"}, {"params", json::object()}}).path(), "tune.params");
  EXPECT_EQ(space_error(json{{"params", {{"kp", {{"min", 0.1}, {"max", 1}}}}}}).path(),
            "tune.policy")
      << "no policy anywhere";
  EXPECT_EQ(space_error(json{{"policy", "pdi"}, {"params", json::object()}}).path(), "tune.policy");
  EXPECT_EQ(
      space_error(json{{"policy", "hpa"}, {"params", {{"kp", {{"min", 0}, {"max", 1}}}}}}, "pid")
          .path(),
      "tune.policy")
      << "a space for another policy";
  EXPECT_EQ(space_error(json{{"params", {{"kp", {{"min", 0}, {"max", 1}}}}}}, "pdi").path(),
            "tune.policy")
      << "an unknown policy to tune";

  const ConfigError inverted =
      space_error(json{{"policy", "pid"}, {"params", {{"kp", {{"min", 0.02}, {"max", 0.01}}}}}});
  EXPECT_EQ(inverted.path(), "tune.params.kp.max");
  EXPECT_NE(std::string(inverted.what()).find("must be > min"), std::string::npos);

  const ConfigError unknown =
      space_error(json{{"policy", "pid"}, {"params", {{"kq", {{"min", 0}, {"max", 1}}}}}});
  EXPECT_EQ(unknown.path(), "tune.params.kq");
  EXPECT_NE(std::string(unknown.what()).find("kp"), std::string::npos)
      << "lists the numeric parameters: " << unknown.what();

  EXPECT_EQ(space_error(json{{"policy", "pid"}, {"params", {{"metric", {{"min", 0}, {"max", 1}}}}}})
                .path(),
            "tune.params.metric")
      << "not numeric";
  EXPECT_EQ(space_error(json{{"policy", "pid"},
                             {"params", {{"kp", {{"min", 0}, {"max", 1}, {"log", true}}}}}})
                .path(),
            "tune.params.kp.min");
  EXPECT_EQ(space_error(json{{"policy", "pid"},
                             {"params", {{"kp", {{"min", 0}, {"max", 1}, {"step", 2}}}}}})
                .path(),
            "tune.params.kp.step");
  EXPECT_EQ(space_error(json{{"policy", "pid"}, {"params", {{"kp", {{"max", 1}}}}}}).path(),
            "tune.params.kp.min");
  EXPECT_EQ(
      space_error(json{{"policy", "pid"}, {"params", {{"kp", {{"min", "0"}, {"max", 1}}}}}}).path(),
      "tune.params.kp.min");
  EXPECT_EQ(space_error(json{{"policy", "pid"},
                             {"params", {{"kp", {{"min", 0}, {"max", 1}, {"points", 0}}}}}})
                .path(),
            "tune.params.kp.points");
  EXPECT_EQ(space_error(json{{"policy", "threshold"},
                             {"params", {{"base_workers", {{"min", 4.5}, {"max", 8}}}}}})
                .path(),
            "tune.params.base_workers.min");
  EXPECT_EQ(space_error(
                json{{"policy", "threshold"},
                     {"params", {{"base_workers", {{"min", 4}, {"max", 8}, {"integer", false}}}}}})
                .path(),
            "tune.params.base_workers.integer");
  EXPECT_EQ(space_error(json{{"policy", "threshold"},
                             {"params", {{"steps[x].above", {{"min", 1}, {"max", 8}}}}}})
                .path(),
            "tune.params.steps[x].above");
  EXPECT_EQ(space_error(json{{"policy", "threshold"},
                             {"params", {{"steps[3].above", {{"min", 1}, {"max", 8}}}}}})
                .path(),
            "tune.params.steps[3].above")
      << "the default table has one step";
  EXPECT_EQ(space_error(json{{"policy", "pid"},
                             {"fixed", {{"kp", -1}}},
                             {"params", {{"ki", {{"min", 0}, {"max", 1}}}}}})
                .path(),
            "tune.fixed.kp");
  EXPECT_EQ(space_error(json{{"policy", "pid"},
                             {"params", {{"ki", {{"min", 0}, {"max", 1}}}}},
                             {"weights", {{"slo", -1}}}})
                .path(),
            "tune.weights.slo");
  EXPECT_EQ(
      space_error(
          json{{"policy", "pid"}, {"params", {{"ki", {{"min", 0}, {"max", 1}}}}}, {"colour", 1}})
          .path(),
      "tune.colour");
  EXPECT_EQ(space_error(json::array()).path(), "tune");
}

TEST(TuneSpace, DefaultSpacesGiveValidParamsEverywhere) {
  GuardConfig guards;  // 4..16 workers
  for (const std::string& policy : policy_names()) {
    const TuneSpace space = TuneSpace::default_for(policy, guards);
    ASSERT_FALSE(space.params.empty()) << policy;
    const std::size_t d = space.params.size();
    // Every corner of the cube and its centre.
    for (std::size_t mask = 0; mask <= (std::size_t{1} << d); ++mask) {
      std::vector<double> u(d);
      for (std::size_t i = 0; i < d; ++i) {
        u[i] = mask == (std::size_t{1} << d) ? 0.5 : double((mask >> i) & 1);
      }
      const json params = space.params_for(space.values_at(u));
      EXPECT_NO_THROW(make_policy(policy, params)) << policy << " " << params.dump();
    }
  }
  for (const auto& p : TuneSpace::default_for("static", guards).params) {
    EXPECT_EQ(p.min, 4);
    EXPECT_EQ(p.max, 16);
  }
  try {
    TuneSpace::default_for("nope", guards);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "--policy");
  }
}

// ---------------------------------------------------------------------------------------------
// Pareto front

TEST(ParetoFront, HandMadePoints) {
  const std::vector<std::pair<double, double>> points = {
      {1, 5},      // 0 front
      {2, 3},      // 1 front
      {3, 3},      // 2 dominated by 1 (same y, more x)
      {2, 4},      // 3 dominated by 1 (same x, more y)
      {4, 1},      // 4 front
      {5, 1},      // 5 dominated by 4
      {1, 5},      // 6 equal to 0: front too
      {0.5, NAN},  // 7 never
      {6, 0.5},    // 8 front
      {kInf, 0},   // 9 never
      {3.5, 2.9},  // 10 front (between 1 and 4)
      {10, 10},    // 11 dominated by everything
  };
  EXPECT_EQ(pareto_front(points), (std::vector<std::size_t>{0, 6, 1, 10, 4, 8}));
  EXPECT_TRUE(pareto_front({}).empty());
  EXPECT_EQ(pareto_front({{3, 3}}), (std::vector<std::size_t>{0}));
}

TEST(ParetoFront, MatchesTheDefinitionOnRandomPoints) {
  Rng rng(11);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::pair<double, double>> points;
    for (int i = 0; i < 60; ++i) {
      // Coarse values so that ties and duplicates happen.
      points.push_back({std::floor(rng.uniform() * 8), std::floor(rng.uniform() * 8)});
    }
    std::set<std::size_t> expected;
    for (std::size_t i = 0; i < points.size(); ++i) {
      bool dominated = false;
      for (std::size_t j = 0; j < points.size() && !dominated; ++j) {
        dominated = points[j].first <= points[i].first && points[j].second <= points[i].second &&
                    points[j] != points[i];
      }
      if (!dominated) expected.insert(i);
    }
    const auto front = pareto_front(points);
    EXPECT_EQ(std::set<std::size_t>(front.begin(), front.end()), expected);
    EXPECT_TRUE(std::is_sorted(front.begin(), front.end(), [&](std::size_t a, std::size_t b) {
      return points[a] < points[b];
    }));
  }
}

// ---------------------------------------------------------------------------------------------
// Nelder-Mead (the algorithm alone)

template <typename F>
NelderMead minimize(F f, std::vector<double> start, int max_iterations = 2000) {
  NelderMead nm(std::move(start));
  for (int i = 0; i < max_iterations && !nm.converged(); ++i) {
    std::vector<double> values;
    for (const auto& x : nm.ask()) values.push_back(f(x));
    nm.tell(values);
  }
  return nm;
}

TEST(NelderMead, FindsTheMinimumOfAValleyInsideTheBox) {
  auto f = [](const std::vector<double>& x) {
    return (x[0] - 0.3) * (x[0] - 0.3) + 10 * (x[1] - 0.7) * (x[1] - 0.7) +
           0.5 * (x[0] - 0.3) * (x[1] - 0.7);
  };
  const NelderMead nm = minimize(f, {0.9, 0.1});
  EXPECT_TRUE(nm.converged());
  EXPECT_NEAR(nm.best_point()[0], 0.3, 2e-3);
  EXPECT_NEAR(nm.best_point()[1], 0.7, 2e-3);
  EXPECT_LT(nm.best_value(), 1e-5);
}

TEST(NelderMead, StaysInTheBoxAndFindsABoundaryMinimum) {
  std::vector<std::vector<double>> asked;
  auto f = [&](const std::vector<double>& x) {
    asked.push_back(x);
    return (x[0] + 1) * (x[0] + 1) + (x[1] - 0.5) * (x[1] - 0.5) + (x[2] - 2) * (x[2] - 2);
  };
  const NelderMead nm = minimize(f, {0.5, 0.5, 0.5});
  for (const auto& x : asked) {
    for (double c : x) {
      ASSERT_GE(c, 0.0);
      ASSERT_LE(c, 1.0);
    }
  }
  EXPECT_NEAR(nm.best_point()[0], 0.0, 2e-3);
  EXPECT_NEAR(nm.best_point()[1], 0.5, 2e-3);
  EXPECT_NEAR(nm.best_point()[2], 1.0, 2e-3);
}

TEST(NelderMead, AsksSimplexFirstAndChecksTheCount) {
  NelderMead nm({0.5, 0.9});
  ASSERT_EQ(nm.ask().size(), 3u);
  EXPECT_EQ(nm.ask()[0], (std::vector<double>{0.5, 0.9}));
  EXPECT_EQ(nm.ask()[1], (std::vector<double>{0.75, 0.9}));
  EXPECT_EQ(nm.ask()[2], (std::vector<double>{0.5, 0.65})) << "steps back inside the box";
  EXPECT_THROW(nm.tell({1.0}), std::invalid_argument);
  nm.tell({3.0, 2.0, 1.0});
  EXPECT_EQ(nm.best_value(), 1.0);
  EXPECT_EQ(nm.ask().size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// tune()

// Known best: a static pool on a constant load. Below capacity the lag grows past the SLO for
// most of the run (a penalty of ~100 workers); at or above it the cost is the pool size. So the
// best size is the smallest N whose capacity covers the rate.
struct StaticCase {
  Trace trace;
  SimConfig config;
  GuardConfig guards;
  TuneSpace space;
  int best_workers = 0;
};

StaticCase static_case() {
  StaticCase c;
  c.config.fidelity = "message";
  c.config.model.service_mean_seconds = 0.1;  // 10 msg/s per idle worker: small runs
  c.config.initial_workers = 32;              // starts with no backlog whatever N is
  c.config.lag_slo = 200;
  c.guards = testing::open_guards();
  c.guards.min_workers = 1;
  c.guards.max_workers = 32;
  const double rate = 50.0;
  c.trace = constant_trace(rate, 1200);
  for (int n = 1; n <= 32; ++n) {
    if (c.config.model.capacity(n) > 1.05 * rate) {
      c.best_workers = n;
      break;
    }
  }
  c.space = TuneSpace::default_for("static", c.guards);
  return c;
}

TEST(Tune, GridEnumeratesExactlyTheProductOfPoints) {
  const TuneSpace space = TuneSpace::from_json(json::parse(R"({"policy": "pid",
      "params": {"setpoint": {"min": 1000, "max": 3000, "points": 3},
                 "kp": {"min": 0.001, "max": 0.01, "log": true, "points": 2}}})"));
  const TuneResult r =
      tune(space, {bursty_trace()}, GuardConfig{}, fast_config(), options("grid", 6, 2));
  ASSERT_EQ(r.evaluations.size(), 6u);
  EXPECT_EQ(r.proposals, 6);
  std::vector<std::vector<double>> got;
  for (const auto& e : r.evaluations) {
    got.push_back(e.values);
    EXPECT_TRUE(e.error.empty()) << e.error;
    EXPECT_EQ(e.kpis.size(), 1u);
    EXPECT_DOUBLE_EQ(e.params["kp"].get<double>(), e.values[0]);
    EXPECT_DOUBLE_EQ(e.params["setpoint"].get<double>(), e.values[1]);
  }
  // kp (first by name) outer, setpoint inner.
  EXPECT_EQ(
      got,
      (std::vector<std::vector<double>>{
          {0.001, 1000}, {0.001, 2000}, {0.001, 3000}, {0.01, 1000}, {0.01, 2000}, {0.01, 3000}}));
  EXPECT_THROW(tune(space, {bursty_trace()}, GuardConfig{}, fast_config(), options("grid", 5, 2)),
               std::invalid_argument)
      << "a grid larger than the budget is refused";
}

TEST(Tune, GridSharesTheBudgetAndCapsIntegerRanges) {
  StaticCase c = static_case();
  c.guards.min_workers = 4;
  c.guards.max_workers = 8;
  c.space = TuneSpace::default_for("static", c.guards);
  const TuneResult r =
      tune(c.space, {constant_trace(20, 120)}, c.guards, c.config, options("grid", 100, 2));
  std::vector<double> workers;
  for (const auto& e : r.evaluations) workers.push_back(e.values[0]);
  EXPECT_EQ(workers, (std::vector<double>{4, 5, 6, 7, 8}));

  // Two shared parameters and a budget of 10: floor(sqrt(10)) = 3 values each.
  const TuneSpace space = TuneSpace::from_json(json::parse(R"({"policy": "pid",
      "params": {"setpoint": {"min": 1000, "max": 3000}, "kp": {"min": 0.001, "max": 0.003}}})"));
  const TuneResult g =
      tune(space, {bursty_trace()}, GuardConfig{}, fast_config(), options("grid", 10, 2));
  ASSERT_EQ(g.evaluations.size(), 9u);
  EXPECT_EQ(g.evaluations[4].values, (std::vector<double>{0.002, 2000}));
}

TEST(Tune, DeterministicForASeedAndIndependentOfThreads) {
  const TuneSpace space = TuneSpace::default_for("pid", GuardConfig{});
  const std::vector<Trace> train = {bursty_trace(), constant_trace(300, 300)};
  for (const std::string strategy : {"random", "nelder-mead"}) {
    const TuneResult one =
        tune(space, train, GuardConfig{}, fast_config(), options(strategy, 14, 1));
    const TuneResult three =
        tune(space, train, GuardConfig{}, fast_config(), options(strategy, 14, 3));
    const TuneResult again =
        tune(space, train, GuardConfig{}, fast_config(), options(strategy, 14, 2));
    const TuneResult other =
        tune(space, train, GuardConfig{}, fast_config(), options(strategy, 14, 2, /*seed=*/8));
    EXPECT_EQ(one.evaluations.size(), 14u) << strategy;
    EXPECT_EQ(fingerprint(one), fingerprint(three)) << strategy << ": 1 vs 3 threads";
    EXPECT_EQ(fingerprint(one), fingerprint(again)) << strategy << ": same seed";
    EXPECT_EQ(one.best, three.best);
    EXPECT_EQ(one.pareto_front, three.pareto_front);
    EXPECT_NE(fingerprint(one), fingerprint(other)) << strategy << ": another seed";
    // The JSON is byte-identical too.
    EXPECT_EQ(to_json(one, space, ObjectiveWeights{}).dump(),
              to_json(three, space, ObjectiveWeights{}).dump());
    // Every evaluation saw both traces and its objective is the mean of the two.
    for (const auto& e : one.evaluations) {
      ASSERT_EQ(e.kpis.size(), 2u);
      EXPECT_DOUBLE_EQ(e.objective, (run_objective(e.kpis[0], ObjectiveWeights{}) +
                                     run_objective(e.kpis[1], ObjectiveWeights{})) /
                                        2);
      EXPECT_DOUBLE_EQ(e.worker_seconds, e.kpis[0].worker_seconds + e.kpis[1].worker_seconds);
    }
  }
}

TEST(Tune, GroupedRunsAndExtraParamsGiveEachRunsOwnKpis) {
  // tune() deals a round's runs of a trace into groups that share arrival counts and, while
  // their pools are equal, one model (simulate_all). A quiet start keeps every pid
  // configuration at the initial pool for 3000 ticks, then a burst parts them (the followers
  // leave late). Each configuration's KPIs, and the extra params' (the report's baseline), must
  // be what simulate() gives alone, whatever the threads.
  Trace trace = testing::constant_trace(60.0, 4500.0);
  trace.source = "quiet-then-burst";
  for (std::size_t i = 3000; i < 3200; ++i) trace.rates[i] = 900.0;
  const std::vector<Trace> train = {trace, bursty_trace()};
  const TuneSpace space = TuneSpace::default_for("pid", GuardConfig{});
  const json baseline = default_params("pid");
  std::string first_json;
  for (const int threads : {1, 2, 3, 8}) {
    TuneOptions o = options("random", 7, threads);
    o.extra_params = {baseline};
    const TuneResult r = tune(space, train, GuardConfig{}, fast_config(), o);
    SCOPED_TRACE(std::to_string(threads) + " threads");
    ASSERT_EQ(r.evaluations.size(), 7u);
    ASSERT_EQ(r.extra_kpis.size(), 1u);
    std::set<int> actions;
    for (const TuneEvaluation& e : r.evaluations) {
      ASSERT_TRUE(e.error.empty()) << e.error;
      const SetEvaluation alone =
          evaluate_on("pid", e.params, train, GuardConfig{}, fast_config(), ObjectiveWeights{}, 1);
      ASSERT_EQ(e.kpis.size(), 2u);
      for (std::size_t t = 0; t < train.size(); ++t) {
        EXPECT_EQ(kpis_to_json(e.kpis[t]).dump(), kpis_to_json(alone.runs[t].kpis).dump())
            << e.params.dump() << " on " << train[t].source;
      }
      EXPECT_EQ(e.objective, alone.objective);
      actions.insert(e.kpis[0].scale_actions);
    }
    EXPECT_GT(actions.size(), 1u) << "the configurations part at the burst";
    const SetEvaluation base =
        evaluate_on("pid", baseline, train, GuardConfig{}, fast_config(), ObjectiveWeights{}, 1);
    const SetEvaluation from_search = set_evaluation(r.extra_kpis[0], train, ObjectiveWeights{});
    for (std::size_t t = 0; t < train.size(); ++t) {
      EXPECT_EQ(kpis_to_json(r.extra_kpis[0][t]).dump(), kpis_to_json(base.runs[t].kpis).dump());
      EXPECT_EQ(from_search.runs[t].label, base.runs[t].label);
    }
    EXPECT_EQ(from_search.objective, base.objective);
    EXPECT_EQ(from_search.worker_seconds, base.worker_seconds);
    EXPECT_EQ(from_search.seconds_above_slo, base.seconds_above_slo);
    EXPECT_EQ(from_search.scale_actions, base.scale_actions);
    // Extra params change nothing in the search itself.
    const std::string j = to_json(r, space, ObjectiveWeights{}).dump();
    if (first_json.empty()) first_json = j;
    EXPECT_EQ(j, first_json);
    EXPECT_EQ(
        j, to_json(tune(space, train, GuardConfig{}, fast_config(), options("random", 7, threads)),
                   space, ObjectiveWeights{})
               .dump());
  }
  // Over several rounds (nelder-mead) the extras' KPIs are the first round's, kept to the end.
  TuneOptions nm = options("nelder-mead", 12, 2);
  nm.extra_params = {baseline};
  const TuneResult rounds = tune(space, train, GuardConfig{}, fast_config(), nm);
  ASSERT_GE(rounds.rounds, 2);
  ASSERT_EQ(rounds.extra_kpis.size(), 1u);
  ASSERT_EQ(rounds.extra_kpis[0].size(), 2u);
  const SetEvaluation base =
      evaluate_on("pid", baseline, train, GuardConfig{}, fast_config(), ObjectiveWeights{}, 1);
  EXPECT_EQ(kpis_to_json(rounds.extra_kpis[0][1]).dump(), kpis_to_json(base.runs[1].kpis).dump());
  TuneOptions bad = options("random", 3, 2);
  bad.extra_params = {json{{"kp", -1.0}}};
  EXPECT_THROW(tune(space, train, GuardConfig{}, fast_config(), bad), ConfigError);
}

TEST(Tune, BestIsTheLowestObjectiveAndTheFrontIsConsistent) {
  const TuneSpace space = TuneSpace::default_for("pid", GuardConfig{});
  const TuneResult r =
      tune(space, {bursty_trace()}, GuardConfig{}, fast_config(), options("random", 20, 2));
  ASSERT_EQ(r.evaluations.size(), 20u);
  for (const auto& e : r.evaluations) {
    EXPECT_GE(e.objective, r.best_evaluation().objective);
  }
  std::vector<std::pair<double, double>> points;
  for (const auto& e : r.evaluations) points.push_back({e.worker_seconds, e.seconds_above_slo});
  EXPECT_EQ(r.pareto_front, pareto_front(points));
  for (std::size_t i = 0; i < r.evaluations.size(); ++i) {
    const bool on =
        std::find(r.pareto_front.begin(), r.pareto_front.end(), i) != r.pareto_front.end();
    EXPECT_EQ(r.evaluations[i].on_pareto_front, on);
  }
  // The search result reproduces through evaluate_on (same SimConfig and seed).
  const SetEvaluation again = evaluate_on("pid", r.best_evaluation().params, {bursty_trace()},
                                          GuardConfig{}, fast_config(), ObjectiveWeights{}, 1);
  EXPECT_DOUBLE_EQ(again.objective, r.best_evaluation().objective);
  EXPECT_EQ(again.runs.at(0).label, "bursty");
}

TEST(Tune, NelderMeadFindsTheKnownBestStaticPool) {
  const StaticCase c = static_case();
  ASSERT_GT(c.best_workers, 2);
  ASSERT_LT(c.best_workers, 30);
  // Brute force agrees with the analysis...
  const TuneResult grid = tune(c.space, {c.trace}, c.guards, c.config, options("grid", 32, 2));
  ASSERT_EQ(grid.evaluations.size(), 32u);
  EXPECT_EQ(grid.best_evaluation().values[0], c.best_workers);
  // ...and Nelder-Mead, starting from the default (8 workers), finds it with fewer runs.
  TuneOptions o = options("nelder-mead", 14, 2);
  o.starts = 1;
  const TuneResult nm = tune(c.space, {c.trace}, c.guards, c.config, o);
  EXPECT_LE(nm.evaluations.size(), 14u);
  EXPECT_EQ(nm.best_evaluation().values[0], c.best_workers)
      << "objective " << nm.best_evaluation().objective;
  EXPECT_EQ(nm.evaluations[0].values[0], 8) << "the first start is the baseline";
  EXPECT_EQ(nm.best_evaluation().objective, grid.best_evaluation().objective);
}

TEST(Tune, NelderMeadImprovesOnTheBaselineOfAContinuousSpace) {
  const TuneSpace space = TuneSpace::default_for("hpa", GuardConfig{});
  TuneOptions o = options("nelder-mead", 30, 2);
  const TuneResult r = tune(space, {bursty_trace()}, GuardConfig{}, fast_config(), o);
  const SetEvaluation baseline = evaluate_on("hpa", default_params("hpa"), {bursty_trace()},
                                             GuardConfig{}, fast_config(), ObjectiveWeights{}, 1);
  EXPECT_LT(r.best_evaluation().objective, baseline.objective);
  EXPECT_EQ(r.evaluations[0].objective, baseline.objective) << "the first start is the baseline";
}

TEST(Tune, RejectedCandidatesAreRecordedNotFatal) {
  // Tuning "below" and "above" independently makes some tables invalid (below >= above).
  const TuneSpace space = TuneSpace::from_json(json::parse(R"({"policy": "threshold",
      "fixed": {"steps": [{"above": 5000, "below": 1000, "workers": 16}]},
      "params": {"steps[0].above": {"min": 1000, "max": 9000, "points": 3},
                 "steps[0].below": {"min": 500, "max": 8500, "points": 3}}})"));
  const TuneResult r =
      tune(space, {bursty_trace()}, GuardConfig{}, fast_config(), options("grid", 9, 2));
  int rejected = 0;
  for (const auto& e : r.evaluations) {
    const bool invalid = e.values[1] >= e.values[0];
    EXPECT_EQ(!e.error.empty(), invalid) << e.params.dump();
    if (invalid) {
      ++rejected;
      EXPECT_EQ(e.objective, kInf);
      EXPECT_FALSE(e.on_pareto_front);
      EXPECT_NE(e.error.find("below"), std::string::npos) << e.error;
    }
  }
  EXPECT_EQ(rejected, 3);  // (1000: 4500, 8500), (5000: 8500)
  EXPECT_TRUE(r.best_evaluation().error.empty());
  const json j = to_json(r, space, ObjectiveWeights{});
  for (const auto& ej : j["evaluations"]) {
    EXPECT_EQ(ej.contains("error"), ej["objective"].is_null()) << ej.dump();
  }
}

TEST(Tune, BadOptionsAreRefused) {
  const TuneSpace space = TuneSpace::default_for("pid", GuardConfig{});
  EXPECT_THROW(
      tune(space, {bursty_trace()}, GuardConfig{}, fast_config(), options("annealing", 5, 1)),
      std::invalid_argument);
  EXPECT_THROW(tune(space, {bursty_trace()}, GuardConfig{}, fast_config(), options("random", 0, 1)),
               std::invalid_argument);
  EXPECT_THROW(tune(space, {}, GuardConfig{}, fast_config(), options("random", 5, 1)),
               std::invalid_argument);
}

TEST(Tune, ProgressCountsEveryConfigurationOnce) {
  const TuneSpace space = TuneSpace::default_for("pid", GuardConfig{});
  TuneOptions o = options("random", 9, 3);
  std::vector<int> done;
  double last_best = kInf;
  o.progress = [&](const TuneProgress& p) {  // serialized by tune()
    done.push_back(p.done);
    EXPECT_EQ(p.total, 9);
    EXPECT_LE(p.best_objective, last_best);
    last_best = p.best_objective;
  };
  const TuneResult r =
      tune(space, {bursty_trace(), constant_trace(200, 200)}, GuardConfig{}, fast_config(), o);
  std::vector<int> expected(9);
  std::iota(expected.begin(), expected.end(), 1);
  EXPECT_EQ(done, expected);
  EXPECT_EQ(last_best, r.best_evaluation().objective);
}

}  // namespace
}  // namespace lagpilot::sim
