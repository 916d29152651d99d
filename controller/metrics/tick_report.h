#pragma once
// What one control tick saw and did: the runtime produces it (ConsumerRuntime::tick), the
// metrics, the status API and the status line read it. A plain value.

#include "controller/kafka/kafka_source.h"
#include "controller/pool/worker_pool.h"
#include "policies/observation.h"

namespace lagpilot {

struct TickReport {
  Observation observation;
  Decision decision;
  SourceStats source;
  PoolWindow pool;  // the pool's statistics over the tick window (latency histogram)
};

}  // namespace lagpilot
