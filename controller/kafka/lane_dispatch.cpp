// LaneScheduler::dispatch: one poll's records sorted into lanes (see lane_scheduler.h).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "controller/kafka/lane_scheduler.h"
#include "controller/kafka/lane_staging.h"

namespace lagpilot {

// -------------------------------------------------------------------------------------------
// Poll thread: dispatch

// Dispatch of one poll, in two steps so that the lock is held briefly:
//  1. stage (poll thread, no lock): sorts the messages into groups, one per lane they go to,
//     copying keys, values and headers into the groups' buffers; filters messages that are not
//     ours, refused (paused) or duplicates, and finds gaps. It reads only state that the poll
//     thread alone writes (the assignment, pause flags, the trackers' next offsets).
//  2. dispatch_staged_locked (under mu): records the offsets in the trackers (in offset
//     order), hands each group's buffers to its lane (a swap when the lane's inbox is empty),
//     and queues each lane that was idle, once.
void LaneScheduler::dispatch(std::span<const MessageRecord> records, std::vector<OffsetGap>& gaps) {
  if (records.empty()) return;
  stage(records, gaps);
  std::lock_guard<std::mutex> lock(mu);
  dispatch_staged_locked();
}

void LaneScheduler::stage(std::span<const MessageRecord> records, std::vector<OffsetGap>& gaps) {
  Staging& st = *staging_;
  st.reset();
  // Chunks (unordered messages) are split so that every worker gets some.
  const std::size_t workers = static_cast<std::size_t>(std::max(1, pool_.size()));
  const std::size_t chunk_limit =
      std::clamp<std::size_t>((records.size() + workers - 1) / workers, 1, kMaxRunMessages);
  const char* last_topic = nullptr;  // the previous record's topic (pointer: same string)
  int32_t last_partition = -1;
  StagedPartition* sp = nullptr;
  std::size_t last_group = 0;  // groups index + 1 of the previous message's group; 0: none
  for (const MessageRecord& m : records) {
    if (m.topic.data() != last_topic || m.partition != last_partition) {
      last_topic = m.topic.data();
      last_partition = m.partition;
      last_group = 0;
      sp = nullptr;
      auto it = partitions.find({std::string(m.topic), m.partition});
      if (it != partitions.end() && !it->second->revoked.load(std::memory_order_relaxed)) {
        for (std::size_t i = 0; i < st.n_parts && sp == nullptr; ++i) {
          if (st.parts[i].part == it->second) sp = &st.parts[i];
        }
        if (sp == nullptr) sp = &st.add_partition(it->second);
      }
    }
    if (sp == nullptr) {
      // Not ours (any more): not dispatched, not committed; the owner gets it.
      spdlog::debug("kafka {}@{}: message for an unassigned partition ignored",
                    partition_name(std::string(m.topic), m.partition), m.offset);
      continue;
    }
    const PartitionState& part = *sp->part;
    if (part.paused || refuse_all || part.refetch_from >= 0) {
      // Paused (or not yet pausable, see flow_control.cpp) but a message arrived: do not take it
      // nor any later one of this partition; pause (again), and fetch again from the first
      // refused offset when resuming (wake_fetchers seeks there).
      ++sp->refused;
      if (sp->refused_from < 0 || m.offset < sp->refused_from) sp->refused_from = m.offset;
      continue;
    }
    if (sp->next >= 0 && m.offset < sp->next) {
      ++sp->duplicates;
      if (sp->backward_gap == 0) {
        gaps.push_back(OffsetGap{sp->part, sp->next, m.offset, 0});
        sp->backward_gap = gaps.size();
      }
      OffsetGap& back = gaps[sp->backward_gap - 1];
      back.offset = std::min(back.offset, m.offset);
      ++back.count;
      continue;
    }
    if (sp->next >= 0 && m.offset > sp->next)
      gaps.push_back(OffsetGap{sp->part, sp->next, m.offset});
    sp->next = m.offset + 1;
    sp->offsets.push_back(m.offset);
    sp->bytes += m.value.size() + m.key.size();

    std::size_t g = 0;  // groups index + 1
    // Batching: one lane per partition, in every ordering mode (batch_run.cpp).
    if (batching_ || ordering_ == Ordering::kPartition ||
        (ordering_ == Ordering::kKey && m.has_key)) {
      const std::string_view key =
          batching_ || ordering_ == Ordering::kPartition ? std::string_view() : m.key;
      if (last_group != 0 && st.groups[last_group - 1].ordered &&
          st.groups[last_group - 1].key == key) {
        g = last_group;
      } else {
        auto [it, added] = sp->key_groups.try_emplace(key, 0);
        if (added) it->second = st.add_group(sp->part, key, true) + 1;
        g = it->second;
      }
    } else {
      if (sp->open_chunk == 0 || st.groups[sp->open_chunk - 1].batch.size() >= chunk_limit) {
        sp->open_chunk = st.add_group(sp->part, std::string_view(), false) + 1;
      }
      g = sp->open_chunk;
    }
    last_group = g;
    st.groups[g - 1].batch.append(m);
  }
}

void LaneScheduler::dispatch_staged_locked() {
  Staging& st = *staging_;
  for (std::size_t i = 0; i < st.n_parts; ++i) {
    StagedPartition& sp = st.parts[i];
    PartitionState& part = *sp.part;
    part.started = true;  // a message arrived: librdkafka has started its fetcher
    if (sp.refused > 0) {
      counters.refused_while_paused += sp.refused;
      if (part.refetch_from < 0 || sp.refused_from < part.refetch_from) {
        part.refetch_from = sp.refused_from;
      }
      part.repause = true;
    }
    counters.duplicates_skipped += sp.duplicates;
    for (const int64_t offset : sp.offsets) part.tracker.dispatch(offset);
    const auto n = static_cast<int64_t>(sp.offsets.size());
    part.unfinished += n;
    unfinished_count += n;
    counters.consumed += static_cast<uint64_t>(n);
    consumed_bytes += sp.bytes;
  }
  max_unfinished_seen = std::max(max_unfinished_seen, unfinished_count);
  for (std::size_t i = 0; i < st.n_groups; ++i) {
    StagedGroup& g = st.groups[i];
    std::shared_ptr<Lane> lane;
    if (g.ordered) {
      auto it = g.part->lanes.find(g.key);
      if (it == g.part->lanes.end()) {
        auto created = std::make_shared<Lane>(g.part, std::string(g.key), true);
        created->inbox = spare_batch_locked();
        it = g.part->lanes.emplace(created->key, std::move(created)).first;
      }
      lane = it->second;
    } else {
      lane = std::make_shared<Lane>(g.part, std::string(), false);
      lane->inbox = spare_batch_locked();
    }
    if (batching_) {
      lane->appended += g.batch.size();
      lane->arrivals.emplace_back(lane->appended, clock_.now());
    }
    if (lane->inbox.empty()) {
      lane->inbox.take(g.batch);  // g.batch keeps the inbox's old (empty) buffers
    } else {
      lane->inbox.append(g.batch);
      g.batch.clear();
    }
    // A lane that was idle got messages; a queued or running lane picks them up itself.
    if (lane->state == LaneState::kIdle) st.to_queue.push_back(std::move(lane));
  }
  queue_lanes_locked(st.to_queue);
}

}  // namespace lagpilot
