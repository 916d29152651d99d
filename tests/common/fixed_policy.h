#pragma once
// A policy that always asks for the same number of workers: the stand-in where a test (or a
// benchmark) needs a policy but not a decision, e.g. to see what the guards or the loop do.
//
// Thread-safety: as Policy; decide() keeps no state.

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "policies/observation.h"
#include "policies/policy.h"

namespace lagpilot::testing {

struct FixedPolicy : Policy {
  int n;
  std::string policy_name;  // "fixed-<n>" unless given
  std::string reason;       // the Proposal's reason; empty costs nothing per tick

  explicit FixedPolicy(int workers, std::string name = "", std::string why = "fixed")
      : n(workers),
        policy_name(name.empty() ? "fixed-" + std::to_string(workers) : std::move(name)),
        reason(std::move(why)) {}
  std::string name() const override { return policy_name; }
  Proposal decide(const Observation&) override { return {n, reason}; }
  nlohmann::json params() const override { return {{"workers", n}}; }
};

}  // namespace lagpilot::testing
