#pragma once
// The "batch" section of the config: deliver messages to the sink in batches (training
// feeders), instead of one at a time.
//
//   "batch": {
//     "max_messages": 100,        a batch is full at this many messages (1 to 1,000,000)
//     "max_wait_seconds": 2,      a batch that has not filled this long after its first message
//                                 arrived is delivered as it is (a trainer moves on)
//     "drop_last": false          ... or, with true, not delivered: its messages are counted
//   }                             (dropped_incomplete_batch), committed and, with
//                                 shedding.to_topic, produced there
//
// Absent: no batching (every message on its own, as before). Batches are formed per partition
// in offset order, whatever kafka.ordering says (LaneScheduler, lane_scheduler.h).
//
// Thread-safety: a plain value.

#include <nlohmann/json.hpp>
#include <string>

namespace lagpilot {

struct BatchConfig {
  bool enabled = false;  // a "batch" object was given
  int max_messages = 100;
  double max_wait_seconds = 2.0;
  bool drop_last = false;

  // Reads {"max_messages", "max_wait_seconds", "drop_last"} (enabled = true); throws
  // ConfigError naming the JSON path ("batch.max_messages: must be >= 1, got 0").
  static BatchConfig from_json(const nlohmann::json& j, const std::string& path = "batch");
  nlohmann::json to_json() const;
};

}  // namespace lagpilot
