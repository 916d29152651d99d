#pragma once
// What the tests that run every policy by its spec text share (policy_conformance_test,
// explain_test): building a policy from a spec ("pid:kp=0.001"), a seeded stream of random,
// often hostile observations to feed it, and a GoogleTest parameter name made from a spec.
// Test code: plain functions, no state, any thread.

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "policies/observation.h"
#include "policies/policy.h"
#include "policies/policy_factory.h"

namespace lagpilot::testing {

// The policy a spec text names, with the spec's params over the defaults.
inline std::unique_ptr<Policy> build_policy(const std::string& spec) {
  const PolicySpec s = parse_policy_spec(spec);
  return make_policy(s.name, s.params);
}

// What varies between the users of random_observations().
struct RandomObservationShape {
  double start_time = 100.0;      // the first observation's time is this plus one step
  double longest_step = 40.0;     // time steps are drawn from {0, 0.5, 1, 1, 1, 5, 15, this}
  int bounds_change_odds = 40;    // the bounds change at a tick with probability 1 / (odds + 1)
  int64_t around_min_lag = 700;   // the fifth kind of lag: uniform in [around_min, around_max],
  int64_t around_max_lag = 6100;  // i.e. around the thresholds of the policies under test
};

// A seeded, plausible-to-hostile observation stream: bounds that change, empty and huge lags,
// zero rates, pools outside the bounds, repeated timestamps; partition lags on about half the
// ticks that have partitions. The same seed and shape always give the same stream.
inline std::vector<Observation> random_observations(uint32_t seed, int n,
                                                    const RandomObservationShape& shape) {
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  std::vector<Observation> out;
  double t = shape.start_time;
  int min_w = 4, max_w = 16;
  for (int i = 0; i < n; ++i) {
    Observation o;
    const double steps[] = {0.0, 0.5, 1.0, 1.0, 1.0, 5.0, 15.0, shape.longest_step};
    t += steps[pick(0, 7)];
    o.time = t;
    if (pick(0, shape.bounds_change_odds) == 0) {
      min_w = pick(1, 8);
      max_w = pick(min_w, 32);
    }
    o.min_workers = min_w;
    o.max_workers = max_w;
    const int kind = pick(0, 4);
    o.total_lag = kind == 0   ? 0
                  : kind == 1 ? pick(0, 2000)
                  : kind == 2 ? pick(0, 20000)
                  : kind == 3 ? static_cast<int64_t>(pick(0, 1000000)) * 1000
                              : pick(static_cast<int>(shape.around_min_lag),
                                     static_cast<int>(shape.around_max_lag));
    o.assigned_partitions = pick(0, 24);
    if (o.assigned_partitions > 0 && pick(0, 1) == 0) {
      int64_t rest = o.total_lag;
      for (int p = 0; p < o.assigned_partitions; ++p) {
        const int64_t lag = p + 1 == o.assigned_partitions ? rest : rest / 2;
        o.partition_lag.push_back({"t", p, lag});
        rest -= lag;
      }
    }
    o.arrival_rate = pick(0, 3) == 0 ? 0.0 : uniform(0.0, 3000.0);
    o.processed_rate = pick(0, 3) == 0 ? 0.0 : uniform(0.0, 3000.0);
    o.lag_slope = o.arrival_rate - o.processed_rate;
    o.latency_p50 = uniform(0.0, 0.1);
    o.latency_p99 = 3 * o.latency_p50;
    o.current_workers = pick(0, 40);
    o.busy_workers = uniform(0.0, o.current_workers);
    out.push_back(o);
  }
  return out;
}

// A GoogleTest parameter name for a spec: its letters and digits (anything else becomes '_'),
// cut to `max_chars`, then "_<index>" to keep the names unique.
inline std::string spec_test_name(const std::string& spec, std::size_t index,
                                  std::size_t max_chars) {
  std::string out;
  for (char c : spec) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out.substr(0, max_chars) + "_" + std::to_string(index);
}

}  // namespace lagpilot::testing
