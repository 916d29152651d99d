#pragma once
// Fakes for driving the ControlLoop in tests (controller_loop_test, controller_events_test):
// a sampler whose lag the test sets and that reports the actuator's size as the current
// workers, an actuator that counts its resizes and the two wired together (and, from tests/common,
// a policy that asks for a fixed size).
//
// Thread-safety: as the ControlLoop's own contract says, the sampler and the actuator are called
// only from tick(), on the one control thread; the test reads and sets their fields between
// ticks (or after joining the control thread).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "policies/control_loop.h"
#include "policies/guards.h"
#include "policies/observation.h"
#include "policies/policy.h"
#include "tests/common/fixed_policy.h"

namespace lagpilot::testing {

// Lag set by the test; current workers = whatever `workers` points at (the actuator's size).
struct FakeSampler : Sampler {
  int64_t lag = 0;
  const int* workers = nullptr;
  Observation sample(double now) override {
    Observation o;
    o.time = now;
    o.total_lag = lag;
    o.current_workers = *workers;
    return o;
  }
};

// Remembers the last size and counts the resize() calls.
struct FakeActuator : Actuator {
  int workers = 4;
  int calls = 0;
  void resize(int n) override {
    workers = n;
    ++calls;
  }
};

// A FakeActuator and a FakeSampler that reports its size. Not copyable: the sampler points into
// the actuator.
struct FakeSamplerAndActuator {
  FakeActuator actuator;
  FakeSampler sampler;
  FakeSamplerAndActuator() { sampler.workers = &actuator.workers; }
  FakeSamplerAndActuator(const FakeSamplerAndActuator&) = delete;
  FakeSamplerAndActuator& operator=(const FakeSamplerAndActuator&) = delete;
};

// The default guards without the scale-down stabilization window, so that a policy's proposal
// takes effect on the tick it is made.
inline GuardConfig guards_without_window() {
  GuardConfig g;
  g.scale_down_window_seconds = 0;
  return g;
}

}  // namespace lagpilot::testing
