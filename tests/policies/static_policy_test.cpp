#include "policies/static_policy.h"

#include <gtest/gtest.h>

#include "policies/config_reader.h"

namespace lagpilot {
namespace {

Observation bounded(int min_w, int max_w, int64_t lag = 0) {
  Observation o;
  o.min_workers = min_w;
  o.max_workers = max_w;
  o.total_lag = lag;
  o.current_workers = 5;
  return o;
}

TEST(StaticPolicy, HoldsItsWorkersWhateverTheLag) {
  StaticPolicy policy;  // default 8
  for (int64_t lag : {0, 1000, 1000000}) {
    EXPECT_EQ(policy.decide(bounded(1, 64, lag)).workers, 8);
  }
  // The decision log prefixes the policy's name; the reason must not repeat it.
  EXPECT_EQ(policy.decide(bounded(1, 64)).reason, "hold 8 workers");
}

TEST(StaticPolicy, ClampsToTheBoundsInForce) {
  StaticPolicy policy(StaticParams{16});
  const Proposal p = policy.decide(bounded(4, 12));
  EXPECT_EQ(p.workers, 12);
  EXPECT_NE(p.reason.find("clamped to 12"), std::string::npos) << p.reason;
  EXPECT_EQ(policy.decide(bounded(20, 30)).workers, 20);
}

TEST(StaticPolicy, TheReasonFollowsTheBoundsAsTheyChange) {
  StaticPolicy policy(StaticParams{16});
  EXPECT_EQ(policy.decide(bounded(4, 12)).reason,
            "hold 16 workers (clamped to 12 by bounds [4, 12])");
  EXPECT_EQ(policy.decide(bounded(4, 12)).reason,
            "hold 16 workers (clamped to 12 by bounds [4, 12])");
  EXPECT_EQ(policy.decide(bounded(1, 64)).reason, "hold 16 workers");
  EXPECT_EQ(policy.decide(bounded(20, 30)).reason,
            "hold 16 workers (clamped to 20 by bounds [20, 30])");
  Observation quiet = bounded(1, 64);
  quiet.explain = false;
  EXPECT_EQ(policy.decide(quiet).reason, "");
  EXPECT_EQ(policy.decide(bounded(1, 64)).reason, "hold 16 workers");
}

TEST(StaticPolicy, ReadsAndValidatesWorkers) {
  EXPECT_EQ(StaticParams::from_json({{"workers", 3}}, "p").workers, 3);
  EXPECT_EQ(StaticParams::from_json(nullptr, "p").workers, 8);
  try {
    StaticParams::from_json({{"workers", 0}}, "policy.params");
    FAIL() << "workers 0 accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "policy.params.workers");
  }
  EXPECT_THROW(StaticParams::from_json({{"workers", 2.5}}, "p"), ConfigError);
  EXPECT_THROW(StaticParams::from_json({{"worker", 2}}, "p"), ConfigError);
}

}  // namespace
}  // namespace lagpilot
