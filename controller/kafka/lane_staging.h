#pragma once
// The poll thread's scratch for one LaneScheduler::dispatch (lane_dispatch.cpp), kept between
// dispatches for its buffers. Internal to the scheduler.
//
// Thread-safety: poll thread only.

#include <cstddef>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "controller/kafka/lane_scheduler.h"

namespace lagpilot {

// One pool task runs at most this many messages of its lane (see lane_scheduler.cpp); an
// unordered chunk holds at most this many too.
constexpr std::size_t kMaxRunMessages = 512;

// What one dispatch's messages will add to one lane (a group), staged by the poll thread
// without the lock; `key` points into a record, which outlives the dispatch.
struct StagedGroup {
  PartitionPtr part;
  std::string_view key;  // lane key (ordered groups)
  bool ordered = false;  // false: an unordered chunk (a new lane)
  MessageBatch batch;
};

// What one dispatch adds to one partition.
struct StagedPartition {
  PartitionPtr part;
  std::vector<int64_t> offsets;  // accepted, in offset order (for the tracker)
  int64_t next = -1;             // the tracker's next_offset() as it will be after `offsets`
  uint64_t bytes = 0;            // keys + values accepted
  uint64_t duplicates = 0;       // below next: delivered before
  std::size_t backward_gap = 0;  // gaps index + 1 of this poll's backward gap; 0: none
  uint64_t refused = 0;          // arrived while paused
  int64_t refused_from = -1;     // lowest offset refused
  std::size_t open_chunk = 0;    // groups index + 1 of the chunk being filled; 0: none
  std::unordered_map<std::string_view, std::size_t> key_groups;  // lane key -> groups index
};

struct LaneScheduler::Staging {
  std::vector<StagedGroup> groups;  // [0, n_groups) in use
  std::size_t n_groups = 0;
  std::vector<StagedPartition> parts;  // [0, n_parts) in use
  std::size_t n_parts = 0;
  std::vector<std::shared_ptr<Lane>> to_queue;  // idle lanes that got messages

  void reset() {
    for (std::size_t i = 0; i < n_groups; ++i) {
      groups[i].part.reset();
      groups[i].batch.clear();
    }
    n_groups = 0;
    for (std::size_t i = 0; i < n_parts; ++i) {
      StagedPartition& p = parts[i];
      p.part.reset();
      p.offsets.clear();
      p.bytes = p.duplicates = p.refused = 0;
      p.refused_from = -1;
      p.backward_gap = 0;
      p.open_chunk = 0;
      p.key_groups.clear();
    }
    n_parts = 0;
  }
  StagedPartition& add_partition(PartitionPtr part) {
    if (n_parts == parts.size()) parts.emplace_back();
    StagedPartition& p = parts[n_parts++];
    p.next = part->tracker.next_offset();
    p.part = std::move(part);
    return p;
  }
  std::size_t add_group(const PartitionPtr& part, std::string_view key, bool ordered) {
    if (n_groups == groups.size()) groups.emplace_back();
    StagedGroup& g = groups[n_groups];
    g.part = part;
    g.key = key;
    g.ordered = ordered;
    return n_groups++;
  }
};

}  // namespace lagpilot
