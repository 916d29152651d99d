#pragma once
// What one control tick saw and did: the runtime produces it (ConsumerRuntime::tick), the
// metrics, the status API and the status line read it. A plain value.

#include <string>

#include "controller/kafka/kafka_source.h"
#include "controller/pool/worker_pool.h"
#include "policies/observation.h"

namespace lagpilot {

// When a tick ran against its schedule (every tick_seconds on the control clock).
struct TickSchedule {
  double late_seconds = 0;  // start minus scheduled start
  int skipped = 0;          // whole periods missed before this tick (not run, not caught up)
  std::string late;         // why it was late; "" when on schedule (within 5 % of a period)
};

struct TickReport {
  TickSchedule schedule;
  Observation observation;
  Decision decision;
  SourceStats source;
  PoolWindow pool;  // the pool's statistics over the tick window (latency histogram)
};

}  // namespace lagpilot
