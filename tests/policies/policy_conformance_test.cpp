// The shared conformance suite: every policy, with its defaults and in a few
// configured variants, must
//   - keep its proposal within [obs.min_workers, obs.max_workers] over random observations;
//   - be deterministic: two instances fed the same observations propose the same;
//   - not flap under a constant load: in closed loop with a fluid plant, after a settling
//     period, the proposal makes zero direction reversals;
//   - stay calm under a noisy constant load: Poisson arrivals at a constant mean rate (seeded),
//     at most one direction reversal per 10 minutes of simulated time after settling;
//   - report params() that rebuild an identical policy.
//
// Which constant loads: a pool of integers cannot hold the lag constant under a load that
// needs a non-integer number of workers, or one between the levels of a step table; there a
// lag-driven policy necessarily alternates between neighbouring sizes (see the per-policy
// tests, which pin those limit cycles down). Every policy is held to "no reversal" where an
// equilibrium exists for it: a load below the minimum pool's capacity and one above the
// maximum pool's capacity for all; loads of exactly 8 and 12 workers for the policies whose
// output can rest on any pool size (static, pid) or on those levels (a finer threshold table).
// HPA and KEDA are not held to the mid loads: lag is an integrating metric, and a faithful
// HPA on it overshoots, drains the backlog, and scales down after its stabilization window
// (hpa_policy_test pins that cycle down).

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "policies/policy_factory.h"
#include "tests/policies/fluid_plant.h"
#include "tests/policies/policy_test_util.h"

namespace lagpilot {
namespace {

using testing::build_policy;
using testing::ClosedLoopRun;
using testing::direction_reversals;
using testing::FluidPlant;
using testing::run_closed_loop;

struct Variant {
  std::string spec;
  bool holds_mid_loads;  // see the file comment
};

// The policies whose defaults size the pool from the load itself (not from a lag table or an
// HPA formula on lag), so that they hold a mid load too.
bool sizes_from_load(const std::string& name) {
  return name == "static" || name == "pid" || name == "hybrid";
}

std::vector<Variant> variants() {
  std::vector<Variant> v;
  for (const auto& name : policy_names()) v.push_back({name, sizes_from_load(name)});
  v.push_back({"static:16", true});
  v.push_back({"pid:metric=drain_time", true});
  v.push_back({"pid:ki=0,kd=0", true});  // P only
  v.push_back({"pid:kp=0.001,ki=0.00005,kd=0", true});
  v.push_back(
      {"threshold:steps=[{\"above\":1500,\"workers\":6},{\"above\":2500,\"workers\":8},"
       "{\"above\":4000,\"workers\":12},{\"above\":6000,\"below\":3000,\"workers\":16}]",
       true});
  v.push_back({"hpa:target_lag_per_worker=500", false});
  v.push_back({"keda:lag_threshold=500,allow_idle_consumers=true", false});
  v.push_back({"keda:polling_interval_seconds=15,cooldown_period_seconds=60", false});
  return v;
}

// A random but plausible-to-hostile stream (testing::random_observations), starting later
// and with lags around 900..5100 for the fifth kind.
std::vector<Observation> random_observations(uint32_t seed, int n) {
  testing::RandomObservationShape shape;
  shape.start_time = 1000.0;
  shape.longest_step = 30.0;
  shape.bounds_change_odds = 50;
  shape.around_min_lag = 900;
  shape.around_max_lag = 5100;
  return testing::random_observations(seed, n, shape);
}

class PolicyConformance : public ::testing::TestWithParam<Variant> {};

// The variants whose policy declares that a tick may be skipped: the declaration test below is
// instantiated for these only (a GTEST_SKIP for every other variant would report as a pass).
std::vector<Variant> tick_skipping_variants() {
  std::vector<Variant> v;
  for (const Variant& variant : variants()) {
    if (build_policy(variant.spec)->tick_skipping() != TickSkipping::kNever) v.push_back(variant);
  }
  return v;
}

class TickSkippingConformance : public ::testing::TestWithParam<Variant> {};

// A policy that declares kIdempotentOnUnchangedObservation may have a repeated observation
// answered with its previous proposal: deciding the repeat must give the same count, leave its
// state unchanged, and keep it in lockstep with a twin that never saw the repeats.
TEST_P(TickSkippingConformance, DeclarationHolds) {
  auto policy = build_policy(GetParam().spec);
  ASSERT_EQ(policy->tick_skipping(), TickSkipping::kIdempotentOnUnchangedObservation)
      << GetParam().spec << ": a declaration this test does not know how to check";
  auto twin = build_policy(GetParam().spec);
  for (Observation obs : random_observations(7, 2000)) {
    obs.explain = false;
    const int first = policy->decide(obs).workers;
    ASSERT_EQ(twin->decide(obs).workers, first) << "t=" << obs.time;
    const nlohmann::json state = policy->state();
    Observation repeat = obs;
    repeat.time += 1.0;
    ASSERT_EQ(policy->decide(repeat).workers, first) << "t=" << obs.time;
    ASSERT_EQ(policy->state(), state) << "t=" << obs.time;
  }
}

TEST(PolicyTickSkipping, OnlyPoliciesWithoutMemoryOfTimeMaySkip) {
  for (const auto& name : policy_names()) {
    const bool skips = build_policy(name)->tick_skipping() != TickSkipping::kNever;
    if (name == "pid" || name == "hpa" || name == "keda" || name == "model") {
      EXPECT_FALSE(skips) << name << " keeps time (an integral, a sync schedule or a fit)";
    }
  }
  EXPECT_EQ(build_policy("static")->tick_skipping(),
            TickSkipping::kIdempotentOnUnchangedObservation);
  EXPECT_EQ(build_policy("threshold")->tick_skipping(),
            TickSkipping::kIdempotentOnUnchangedObservation);
}

// A policy that says it does not read the latencies (Policy::reads_latency) decides the same,
// tick for tick, when they are 0 (what the simulator then leaves them at) as when they carry
// values, and ends in the same state.
TEST_P(PolicyConformance, LatencyDeclarationHolds) {
  auto policy = build_policy(GetParam().spec);
  if (policy->reads_latency()) return;  // nothing declared: nothing to hold it to
  auto twin = build_policy(GetParam().spec);
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> latency(0.0, 5.0);
  for (Observation obs : random_observations(13, 3000)) {
    obs.explain = false;
    Observation with = obs;
    with.latency_p50 = latency(rng);
    with.latency_p99 = with.latency_p50 + latency(rng);
    with.record_age_p99 = with.latency_p99 + latency(rng);
    obs.latency_p50 = obs.latency_p99 = obs.record_age_p99 = 0.0;
    ASSERT_EQ(policy->decide(obs).workers, twin->decide(with).workers) << "t=" << obs.time;
  }
  EXPECT_EQ(policy->state(), twin->state());
}

TEST(PolicyLatency, TheSimulatedPoliciesDoNotReadLatencies) {
  for (const char* name : {"static", "threshold", "pid", "hpa", "keda", "model", "hybrid"}) {
    EXPECT_FALSE(build_policy(name)->reads_latency()) << name;
  }
}

// The Kubernetes baselines hold their scale-downs with behavior.scaleDown's window, and hybrid
// with its own price and holds: the guards' window would stack on theirs (a 360 s hold, not the
// HPA's 300 s), while every other policy relies on it.
TEST(PolicyStabilization, OnlyTheBaselinesAndHybridHoldTheirOwnScaleDowns) {
  for (const auto& name : policy_names()) {
    EXPECT_EQ(build_policy(name)->stabilizes_scale_down(),
              name == "hpa" || name == "keda" || name == "hybrid")
        << name;
  }
}

TEST_P(PolicyConformance, ProposalStaysWithinBounds) {
  auto policy = build_policy(GetParam().spec);
  for (const Observation& obs : random_observations(42, 3000)) {
    const Proposal p = policy->decide(obs);
    ASSERT_GE(p.workers, obs.min_workers) << "t=" << obs.time << " lag=" << obs.total_lag;
    ASSERT_LE(p.workers, obs.max_workers) << "t=" << obs.time << " lag=" << obs.total_lag;
    ASSERT_FALSE(p.reason.empty());
    ASSERT_TRUE(policy->state().is_object());
  }
}

TEST_P(PolicyConformance, ProposalStaysWithinBoundsInClosedLoop) {
  for (double arrival : {0.0, 200.0, 650.0, 1150.0, 5000.0}) {
    auto policy = build_policy(GetParam().spec);
    FluidPlant plant;
    plant.arrival = arrival;
    plant.lag = 30000;
    const ClosedLoopRun run = run_closed_loop(*policy, plant, 1200);
    for (int w : run.proposals) {
      ASSERT_GE(w, plant.min_workers);
      ASSERT_LE(w, plant.max_workers);
    }
  }
}

TEST_P(PolicyConformance, IsDeterministic) {
  auto a = build_policy(GetParam().spec);
  auto b = build_policy(GetParam().spec);
  const auto stream = random_observations(7, 2000);
  for (const Observation& obs : stream) {
    const Proposal pa = a->decide(obs);
    const Proposal pb = b->decide(obs);
    ASSERT_EQ(pa.workers, pb.workers) << "t=" << obs.time;
    ASSERT_EQ(pa.reason, pb.reason) << "t=" << obs.time;
  }
  EXPECT_EQ(a->state(), b->state());
}

TEST_P(PolicyConformance, NoFlappingUnderConstantLoad) {
  // Loads in workers' worth at 100 msg/s per worker; the pool is bounded to [4, 16].
  std::vector<double> loads = {200.0, 2400.0};
  if (GetParam().holds_mid_loads) {
    loads.push_back(800.0);
    loads.push_back(1200.0);
  }
  const double settle = 1800.0, total = 3600.0;
  for (double arrival : loads) {
    for (double backlog : {0.0, 20000.0}) {
      auto policy = build_policy(GetParam().spec);
      FluidPlant plant;
      plant.arrival = arrival;
      plant.lag = backlog;
      const ClosedLoopRun run = run_closed_loop(*policy, plant, total);
      EXPECT_EQ(direction_reversals(run.proposals, static_cast<std::size_t>(settle)), 0)
          << "arrival " << arrival << " msg/s, initial lag " << backlog << ": final "
          << run.proposals.back() << " workers, final lag " << run.lags.back();
    }
  }
}

// Closed loop as run_closed_loop, but each tick's arrivals are Poisson(mean x dt) (seeded), so
// the observed arrival rate and the lag carry the noise a real constant load has.
testing::ClosedLoopRun run_noisy_closed_loop(Policy& policy, FluidPlant plant, double mean_rate,
                                             double seconds, uint32_t seed) {
  std::mt19937 rng(seed);
  std::poisson_distribution<int> arrivals(mean_rate);  // per 1 s tick
  testing::ClosedLoopRun run;
  for (int i = 0; i < static_cast<int>(seconds); ++i) {
    const Observation obs = plant.observe();
    const Proposal p = policy.decide(obs);
    run.proposals.push_back(p.workers);
    run.lags.push_back(plant.lag);
    plant.workers = p.workers;
    plant.arrival = arrivals(rng);
    plant.step(1.0);
  }
  return run;
}

TEST_P(PolicyConformance, CalmUnderNoisyConstantLoad) {
  // Mean loads in workers' worth (100 msg/s each), between whole pool sizes too: 5.5 and 9.3
  // workers fit no integer pool, so a policy must choose one and stay.
  // A step table holds only its own levels (8 and 12 workers in the finer table).
  std::vector<double> loads = {200.0, 2400.0};
  if (GetParam().holds_mid_loads) {
    const bool table = GetParam().spec.rfind("threshold", 0) == 0;
    loads.push_back(table ? 800.0 : 550.0);
    loads.push_back(table ? 1200.0 : 930.0);
  }
  const double settle = 600.0, total = 3600.0;
  const int allowed = static_cast<int>((total - settle) / 600.0);  // one per 10 minutes
  uint32_t seed = 1;
  for (double rate : loads) {
    auto policy = build_policy(GetParam().spec);
    FluidPlant plant;
    plant.arrival = rate;
    const testing::ClosedLoopRun run = run_noisy_closed_loop(*policy, plant, rate, total, seed++);
    EXPECT_LE(direction_reversals(run.proposals, static_cast<std::size_t>(settle)), allowed)
        << "mean arrival " << rate << " msg/s (Poisson): final " << run.proposals.back()
        << " workers, final lag " << run.lags.back();
  }
}

TEST_P(PolicyConformance, ParamsRoundTrip) {
  const PolicySpec s = parse_policy_spec(GetParam().spec);
  auto policy = make_policy(s.name, s.params);
  const nlohmann::json params = policy->params();
  auto again = make_policy(s.name, params);
  EXPECT_EQ(again->params(), params);
  EXPECT_EQ(again->name(), s.name);
}

std::string variant_name(const ::testing::TestParamInfo<Variant>& info) {
  return testing::spec_test_name(info.param.spec, info.index, 60);
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, PolicyConformance, ::testing::ValuesIn(variants()),
                         variant_name);
INSTANTIATE_TEST_SUITE_P(DeclaringTickSkipping, TickSkippingConformance,
                         ::testing::ValuesIn(tick_skipping_variants()), variant_name);

// The instantiation above is not empty (static and threshold declare it), and every variant it
// leaves out says it needs every tick.
TEST(PolicyTickSkipping, EveryVariantIsCheckedOrNeedsEveryTick) {
  std::size_t skipping = 0;
  for (const Variant& variant : variants()) {
    if (build_policy(variant.spec)->tick_skipping() != TickSkipping::kNever) ++skipping;
  }
  EXPECT_GE(skipping, 2u);
  EXPECT_EQ(skipping, tick_skipping_variants().size());
}

// A check on the harness itself: the reversal counter and the plant can see flapping, so the
// suite above can fail. A policy that alternates every tick is caught.
class Alternating : public Policy {
 public:
  std::string name() const override { return "alternating"; }
  Proposal decide(const Observation& obs) override {
    flip_ = !flip_;
    return {flip_ ? obs.min_workers : obs.max_workers, "test"};
  }
  nlohmann::json params() const override { return nlohmann::json::object(); }

 private:
  bool flip_ = false;
};

TEST(PolicyConformanceHarness, DetectsFlapping) {
  Alternating policy;
  FluidPlant plant;
  plant.arrival = 800;
  const ClosedLoopRun run = run_closed_loop(policy, plant, 100);
  EXPECT_GT(direction_reversals(run.proposals, 50), 40);
  EXPECT_EQ(direction_reversals({4, 5, 6, 6, 6}), 0);
  EXPECT_EQ(direction_reversals({4, 6, 5, 7}), 2);
  EXPECT_EQ(direction_reversals({4, 6, 5, 7}, 3), 1);
}

TEST(PolicyConformanceHarness, PlantConservesMessages) {
  FluidPlant plant;
  plant.arrival = 650;
  plant.lag = 1000;
  plant.workers = 5;
  double processed = 0;
  for (int i = 0; i < 100; ++i) {
    plant.step(1.0);
    processed += plant.processed_rate;
  }
  EXPECT_NEAR(plant.lag, 1000 + 650 * 100 - processed, 1e-6);
  EXPECT_NEAR(plant.lag, 1000 + (650 - 500) * 100, 1e-6);
}

}  // namespace
}  // namespace lagpilot
