// LaneScheduler's batch delivery (see "Batches" in lane_scheduler.h): a run delivers one batch
// of its partition's lane.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "controller/kafka/lane_scheduler.h"

namespace lagpilot {
namespace {

// Per-worker-thread scratch for batch runs: the messages the handler sees (their strings'
// capacity is reused from batch to batch) and the record ages.
struct BatchScratch {
  std::vector<SourceMessage> messages;
  std::vector<double> ages;
};
thread_local BatchScratch batch_scratch;

int64_t batch_epoch_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void fill_message(SourceMessage& msg, const PartitionState& part, const MessageBatch& batch,
                  const QueuedMessage& q) {
  const char* bytes = batch.bytes.data();
  msg.topic = part.topic;
  msg.partition = part.partition;
  msg.offset = q.offset;
  msg.timestamp_ms = q.timestamp_ms;
  msg.has_key = q.has_key;
  msg.key.assign(bytes + q.key_pos, q.key_len);
  msg.value.assign(bytes + q.value_pos, q.value_len);
  msg.headers.resize(q.header_count);
  for (uint32_t h = 0; h < q.header_count; ++h) {
    const QueuedHeader& qh = batch.headers[q.header_pos + h];
    msg.headers[h].first.assign(bytes + qh.name_pos, qh.name_len);
    msg.headers[h].second.assign(bytes + qh.value_pos, qh.value_len);
  }
}

}  // namespace

void LaneScheduler::set_batching(const BatchConfig& config, BatchHandler deliver,
                                 BatchHandler drop_incomplete) {
  if (!config.enabled) return;
  if (!deliver) throw std::invalid_argument("LaneScheduler::set_batching: no batch handler");
  batching_ = true;
  batch_ = config;
  batch_deliver_ = std::move(deliver);
  batch_drop_ = std::move(drop_incomplete);
}

double LaneScheduler::batch_due_locked(const Lane& lane) const {
  if (lane.arrivals.empty()) return -std::numeric_limits<double>::infinity();
  return lane.arrivals.front().second + batch_.max_wait_seconds;
}

bool LaneScheduler::batch_ready_locked(const Lane& lane) const {
  const std::size_t waiting = lane.waiting();
  if (waiting == 0) return false;
  if (waiting >= static_cast<std::size_t>(batch_.max_messages)) return true;
  if (lane.part->draining || settling_all_) return !batch_.drop_last;
  return clock_.now() >= batch_due_locked(lane);
}

int LaneScheduler::flush_due_batches() {
  std::lock_guard<std::mutex> lock(mu);
  if (!batching_ || closed.load(std::memory_order_relaxed)) return 0;
  int queued = 0;
  for (auto& [key, part] : partitions) {
    if (part->revoked.load(std::memory_order_relaxed)) continue;
    for (auto& [lane_key, lane] : part->lanes) {
      if (lane->state == LaneState::kIdle && batch_ready_locked(*lane)) {
        submit_or_buffer_locked(lane);
        ++queued;
      }
    }
  }
  return queued;
}

int64_t LaneScheduler::settle_batches_locked(bool all) {
  if (all) settling_all_ = true;
  int64_t left = 0;
  for (auto& [key, part] : partitions) {
    if (!all && !part->draining) continue;
    if (part->revoked.load(std::memory_order_relaxed)) continue;
    for (auto& [lane_key, lane] : part->lanes) {
      if (lane->state != LaneState::kIdle) continue;
      if (batch_ready_locked(*lane)) {
        submit_or_buffer_locked(lane);
      } else {
        left += static_cast<int64_t>(lane->waiting());  // drop_last: given up, not dropped
      }
    }
  }
  return left;
}

// One pool task: delivers the lane's next batch, when it is full or due; else leaves the lane
// idle (more messages, or flush_due_batches, queue it again).
void LaneScheduler::run_batch_lane(const std::shared_ptr<Lane>& lane_ptr) {
  Lane& lane = *lane_ptr;
  PartitionState& part = *lane.part;
  std::size_t begin = 0, n = 0;
  bool drop = false;
  {
    std::lock_guard<std::mutex> lock(mu);
    // Gather what waits into `running`, from running.messages[0].
    if (lane.next >= lane.running.size()) {
      lane.running.clear();
      std::swap(lane.running, lane.inbox);
    } else if (!lane.inbox.empty() || lane.next > 0) {
      MessageBatch gathered = spare_batch_locked();
      gathered.append_range(lane.running, lane.next);
      gathered.append(lane.inbox);
      lane.inbox.clear();
      lane.running.clear();
      std::swap(lane.running, gathered);
      recycle_locked(gathered);
    }
    lane.next = lane.completed = 0;
    lane.done.store(0, std::memory_order_relaxed);
    if (closed.load(std::memory_order_relaxed) || part.revoked.load(std::memory_order_relaxed) ||
        lane.running.empty()) {
      drop_lane_locked(lane);
      lane.state = LaneState::kIdle;
      forget_lane_locked(lane);
      drain_pending_locked();
      pool_.record_items({});  // (not a latency sample)
      return;
    }
    const std::size_t avail = lane.running.size();
    const auto max = static_cast<std::size_t>(batch_.max_messages);
    if (!batch_ready_locked(lane)) {
      lane.state = LaneState::kIdle;  // waits for more messages, or its due time
      drain_pending_locked();
      pool_.record_items({});
      return;
    }
    n = std::min(avail, max);
    drop = n < max && batch_.drop_last;
    lane.state = LaneState::kRunning;
    running_lanes_.push_back(&lane);
    ++part.running;
    begin = 0;
  }

  // Without the lock: running.messages[begin, begin + n) stay as they are until this lane's
  // next run.
  BatchScratch& scratch = batch_scratch;
  bool abandoned = false, failed = false;
  std::string error;
  double took = 0;
  try {
    if (scratch.messages.size() < n) scratch.messages.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      fill_message(scratch.messages[k], part, lane.running, lane.running.messages[begin + k]);
    }
    const std::span<const SourceMessage> batch(scratch.messages.data(), n);
    const double start = clock_.now();
    source_internal::shed_in_call = 0;
    try {
      if (!drop) {
        batch_deliver_(batch);
      } else if (batch_drop_) {
        batch_drop_(batch);
      }
    } catch (const MessageAbandoned&) {
      abandoned = true;
    } catch (const std::exception& e) {
      failed = true;
      error = e.what();
    } catch (...) {
      failed = true;
      error = "non-standard exception";
    }
    took = clock_.now() - start;
    scratch.ages.clear();
    if (!abandoned) {
      lane.done.store(begin + n, std::memory_order_release);
      const int64_t now_ms = batch_epoch_ms_now();
      for (std::size_t k = 0; k < n; ++k) {
        const int64_t ts = lane.running.messages[begin + k].timestamp_ms;
        if (ts >= 0) scratch.ages.push_back(static_cast<double>(now_ms - ts) / 1e3);
      }
    }
  } catch (...) {
    // Outside the handler (memory): nothing of the batch ran; the lane is dropped (not
    // committed: delivered again) and the exception goes on to the pool (see run_lane).
    std::lock_guard<std::mutex> lock(mu);
    abandon_run_locked(lane, begin, begin, 0);
    throw;
  }

  {
    std::lock_guard<std::mutex> lock(mu);
    const std::size_t end = abandoned ? begin : begin + n;
    // end_run_locked counts what ran as processed; a dropped or failed batch is recounted.
    end_run_locked(lane, begin, end, 0);
    const auto ran = static_cast<uint64_t>(end - begin);
    lane.taken += ran;
    while (!lane.arrivals.empty() && lane.arrivals.front().first <= lane.taken) {
      lane.arrivals.pop_front();
    }
    // Shed by the handler (count_as_shed): finished, not processed.
    const uint64_t shed = drop ? 0 : std::min<uint64_t>(source_internal::shed_in_call, ran);
    source_internal::shed_in_call = 0;
    counters.processed -= shed;
    counters.shed += shed;
    if (drop) {
      counters.processed -= ran;
      counters.dropped_incomplete_batch += ran;
    } else if (failed) {
      counters.processed -= ran - shed;
      counters.failed += ran - shed;
      {
        spdlog::warn("kafka {}@{}..{}: batch handler failed ({} failures so far): {}",
                     partition_name(part.topic, part.partition),
                     lane.running.messages[begin].offset, lane.running.messages[end - 1].offset,
                     counters.failed, error);
      }
    }
    if (!drop) max_handler_seconds = std::max(max_handler_seconds, took);
    for (const double age : scratch.ages) ages.add(age);
    lane.state = LaneState::kIdle;
    if (abandoned || closed.load(std::memory_order_relaxed) ||
        part.revoked.load(std::memory_order_relaxed)) {
      drop_lane_locked(lane);  // an abandoned batch with the rest of its lane
      forget_lane_locked(lane);
    } else if (lane.waiting() == 0) {
      forget_lane_locked(lane);
    } else if (batch_ready_locked(lane)) {
      submit_or_buffer_locked(lane_ptr);
    }  // else: idle with an incomplete batch (flush_due_batches queues it when due)
    drain_pending_locked();
  }
  // One latency sample per delivered batch (process latency is per batch).
  if (drop || abandoned) {
    pool_.record_items({});
  } else {
    const double seconds[1] = {took};
    pool_.record_items(seconds, failed ? 1 : 0);
  }
}

}  // namespace lagpilot
