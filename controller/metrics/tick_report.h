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

// The consumer group as a whole (every partition of the subscribed topics, this member's or
// not), from the source's group view (SourceStats::group): rates over the last two views.
struct GroupSample {
  double arrival_rate = 0;  // messages/s into all partitions (slope of their high watermarks)
  // The partition that receives the most, and the mean over all partitions (messages/s).
  std::string hottest_partition;
  double hottest_rate = 0;
  double mean_partition_rate = 0;
  // This member's partitions' share of the arrivals (0..1), and of the partitions; -1 until
  // two views have been seen.
  double own_arrival_share = -1;
  double own_partition_share = -1;
};

struct TickReport {
  TickSchedule schedule;
  Observation observation;
  Decision decision;
  SourceStats source;
  GroupSample group;
  PoolWindow pool;  // the pool's statistics over the tick window (latency histogram)
};

}  // namespace lagpilot
