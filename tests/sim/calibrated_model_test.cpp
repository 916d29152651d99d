// "The simulator can use a calibrated model instead of hand-set service parameters": a consumer
// model built from a `lagpilot calibrate` fit (ConsumerModelConfig::from_usl, or the sim.model
// JSON that `calibrate --write-config` writes) delivers, when saturated in the simulator, the
// throughput the fit predicts at every pool size.

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "policies/usl_fit.h"
#include "sim/consumer_model.h"
#include "sim/simulation.h"
#include "sim_test_util.h"

namespace lagpilot::sim {
namespace {

// A table measured by `lagpilot calibrate` (defaults: embedded broker, steps 1..16, dwell 5 s)
// on this machine, with the synthetic handler at 5 ms and a downstream capacity of 2000/s (see
// docs/calibrate.md): workers -> messages/s. Its fit: lambda 197, sigma 0, kappa 0.0024.
const std::vector<UslSample> kMeasured = {
    {1, 194.1}, {2, 369.2}, {4, 745.1}, {8, 1456.6}, {16, 1999.1},
};

UslModel measured_fit() {
  UslFitOptions o;
  o.min_distinct_workers = 1;
  return UslFit::fit(kMeasured, o);
}

ConsumerModelConfig calibrated(const UslModel& fit) {
  ConsumerModelConfig base;
  base.service_distribution = "lognormal";
  base.service_cv = 0.5;
  base.warmup_seconds = 0;
  return ConsumerModelConfig::from_usl(fit.lambda, fit.sigma, fit.kappa, base);
}

// Throughput of `workers` always-busy simulated workers: a static pool fed at twice its
// capacity for 40 s (a standing backlog all along), processed / duration.
double simulated_throughput(const ConsumerModelConfig& model, int workers,
                            const std::string& fidelity) {
  SimConfig sc;
  sc.model = model;
  sc.fidelity = fidelity;
  sc.initial_workers = workers;
  sc.seed = 7;
  const double seconds = 40;
  const Trace trace = testing::constant_trace(2 * model.capacity(workers), seconds);
  const RunResult r =
      simulate(trace, testing::fixed_policy(workers), "static", testing::open_guards(), sc);
  return static_cast<double>(r.kpis.processed) / r.kpis.duration_seconds;
}

TEST(CalibratedModel, CapacityIsTheFittedCurve) {
  const UslModel fit = measured_fit();
  ASSERT_TRUE(fit.valid);
  const ConsumerModelConfig model = calibrated(fit);
  EXPECT_DOUBLE_EQ(model.service_mean_seconds, 1 / fit.lambda);
  for (int n : {1, 2, 3, 4, 8, 12, 16, 32}) {
    EXPECT_NEAR(model.capacity(n), fit.throughput(n), 1e-9 * fit.throughput(n)) << n;
  }
  // And the fit itself follows the measurements (so the simulator follows the real consumer),
  // within what a smooth curve can do with a hard downstream ceiling.
  for (const UslSample& s : kMeasured) {
    EXPECT_NEAR(fit.throughput(s.workers), s.throughput, 0.08 * s.throughput) << s.workers;
  }
}

TEST(CalibratedModel, SaturatedSimulationDeliversTheFittedThroughput) {
  const UslModel fit = measured_fit();
  ASSERT_TRUE(fit.valid);
  const ConsumerModelConfig model = calibrated(fit);
  for (const std::string fidelity : {"message", "batch"}) {
    for (int n : {1, 2, 4, 8, 16}) {
      const double x = simulated_throughput(model, n, fidelity);
      EXPECT_NEAR(x, fit.throughput(n), 0.03 * fit.throughput(n)) << fidelity << " N=" << n;
    }
  }
}

TEST(CalibratedModel, TheWrittenConfigLoadsToTheSameModel) {
  const UslModel fit = measured_fit();
  const ConsumerModelConfig model = calibrated(fit);
  // What `lagpilot calibrate --write-config` puts under "sim".
  const nlohmann::json sim_json = {{"model", model.to_json()}, {"partitions", 8}};
  const SimConfig loaded = SimConfig::from_json(sim_json, "sim");
  for (int n : {1, 4, 16}) {
    EXPECT_NEAR(loaded.model.capacity(n), fit.throughput(n), 1e-9 * fit.throughput(n));
  }
  // A hand-set model (the defaults) is a different consumer altogether.
  EXPECT_GT(std::fabs(ConsumerModelConfig{}.capacity(16) - fit.throughput(16)),
            0.2 * fit.throughput(16));
}

TEST(CalibratedModel, OutOfRangeFitsAreRejected) {
  const ConsumerModelConfig base;
  EXPECT_THROW(ConsumerModelConfig::from_usl(0, 0.1, 0, base), std::invalid_argument);
  EXPECT_THROW(ConsumerModelConfig::from_usl(100, -0.1, 0, base), std::invalid_argument);
  EXPECT_THROW(ConsumerModelConfig::from_usl(100, 0.1, 1.5, base), std::invalid_argument);
  EXPECT_THROW(ConsumerModelConfig::from_usl(NAN, 0.1, 0, base), std::invalid_argument);
  const ConsumerModelConfig ok = ConsumerModelConfig::from_usl(100, 0.1, 0.01, base);
  EXPECT_EQ(ok.warmup_seconds, base.warmup_seconds);  // the rest comes from the base
  EXPECT_EQ(ok.downstream_capacity, 0.0);
}

}  // namespace
}  // namespace lagpilot::sim
