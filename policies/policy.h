#pragma once
// The Policy interface: turns an Observation into a desired worker count.
//
// Thread-safety contract: a Policy is NOT thread-safe. The ControlLoop calls decide() from its
// one control thread (or the simulator's event loop) and serialises every other access. A policy
// never reads a clock: the only time it knows is Observation::time.

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "policies/observation.h"

namespace lagpilot {

// The policy's proposal, before guards.
struct Proposal {
  int workers = 0;
  std::string reason;  // human-readable: "lag 7200 above 5000: step to 16"
};

class Policy {
 public:
  virtual ~Policy() = default;
  // Short name as used on the command line and in configs: "pid", "threshold", ...
  virtual std::string name() const = 0;
  // Called once per control tick with the current observation.
  virtual Proposal decide(const Observation& obs) = 0;
  // The parameters in effect, as the JSON object accepted by make_policy().
  virtual nlohmann::json params() const = 0;
  // Internal state for logs and debugging (PID terms, fit quality, ...). Empty by default.
  virtual nlohmann::json state() const { return nlohmann::json::object(); }
};

}  // namespace lagpilot
