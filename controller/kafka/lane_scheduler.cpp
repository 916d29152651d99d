#include "controller/kafka/lane_scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "controller/kafka/lane_staging.h"
#include "policies/config_reader.h"

namespace lagpilot {
namespace {

// One pool task runs at most kMaxRunMessages (lane_staging.h) of its lane, and stops after
// the message that crosses kRunBudgetSeconds (by the injected clock), so that a long lane does
// not delay a shrink. The rest runs in a new task at the front of the pool queue: it is older
// than anything queued since. (At the back, every queued lane would run a slice in turn: all
// of them part done, the commit offset far behind what was processed, and the lag flat while
// the consumer works.) New messages that a lane got meanwhile queue at the back.
constexpr double kRunBudgetSeconds = 0.01;
// Lanes queued by one dispatch share a pool task while their messages are expected (from the
// mean handler time so far) to take less than this together: waking a worker costs more than
// running a few hundred fast messages.
constexpr double kMinTaskSeconds = 100e-6;
constexpr double kInitialHandlerSeconds = 1e-3;  // the mean's prior: one lane per task
// Handler timing: each message is timed on its own unless the handler is very fast (below
// kTimeEachAboveSeconds per message); then groups of up to kMaxTimedGroup messages are timed
// and each is recorded with its group's mean, so that reading the clock (tens of ns) does not
// cost more than the handler itself.
constexpr double kTimeEachAboveSeconds = 2e-6;
constexpr std::size_t kMaxTimedGroup = 64;
// Message buffers of finished lanes are kept for reuse, so that lanes created per dispatch do
// not allocate: at most kMaxSpareBatches, each up to the sizes below (bounding the memory kept).
constexpr std::size_t kMaxSpareBatches = 64;
constexpr std::size_t kMaxSpareBatchMessages = 4096;
constexpr std::size_t kMaxSpareBatchBytes = 1 << 20;

int64_t epoch_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Per-worker-thread scratch for runs, so that a run allocates nothing once it has grown.
struct RunScratch {
  SourceMessage message;
  std::vector<double> seconds;                            // handler run time per message
  std::vector<double> ages;                               // record age per message with a timestamp
  std::vector<std::pair<int64_t, std::string>> failures;  // offset, error
};
thread_local RunScratch run_scratch;

// Refills msg.headers from a queued message's headers, reusing the strings' capacity.
void fill_headers(SourceMessage& msg, const MessageBatch& batch, const QueuedMessage& q) {
  if (q.header_count == 0) {
    msg.headers.clear();
    return;
  }
  msg.headers.resize(q.header_count);
  const char* bytes = batch.bytes.data();
  for (uint32_t h = 0; h < q.header_count; ++h) {
    const QueuedHeader& qh = batch.headers[q.header_pos + h];
    msg.headers[h].first.assign(bytes + qh.name_pos, qh.name_len);
    msg.headers[h].second.assign(bytes + qh.value_pos, qh.value_len);
  }
}

}  // namespace

namespace source_internal {
thread_local std::size_t shed_in_call = 0;
}  // namespace source_internal

void count_as_shed(std::size_t messages) {
  source_internal::shed_in_call += messages;
}

Ordering parse_ordering(const std::string& s) {
  if (s == "key") return Ordering::kKey;
  if (s == "partition") return Ordering::kPartition;
  if (s == "unordered") return Ordering::kUnordered;
  throw ConfigError("kafka.ordering",
                    "must be one of key, partition, unordered, got \"" + s + "\"");
}

SteadyTime steady_now() {
  return std::chrono::steady_clock::now();
}

SteadyTime steady_after(double seconds) {
  seconds = std::clamp(seconds, 0.0, 1e6);
  return steady_now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(seconds));
}

std::string partition_name(const std::string& topic, int32_t partition) {
  return topic + "[" + std::to_string(partition) + "]";
}

LaneScheduler::LaneScheduler(WorkerPool& pool, MessageHandler handler, const Clock& clock,
                             Ordering ordering, int64_t resume_unfinished)
    : pool_(pool),
      handler_(std::move(handler)),
      clock_(clock),
      ordering_(ordering),
      resume_unfinished_(resume_unfinished),
      staging_(std::make_unique<Staging>()),
      mean_handler_seconds_(kInitialHandlerSeconds) {}

LaneScheduler::~LaneScheduler() = default;

// -------------------------------------------------------------------------------------------
// Partitions

PartitionPtr LaneScheduler::add_partition_locked(const std::string& topic, int32_t partition) {
  auto part = std::make_shared<PartitionState>(topic, partition);
  auto& slot = partitions[{topic, partition}];
  if (slot) {  // should not happen (revoked first); give the old state up
    give_up_locked(*slot);
    detach_locked(*slot);
  }
  slot = part;
  return part;
}

void LaneScheduler::start_partition_locked(PartitionState& p, int64_t offset) {
  if (p.revoked || p.tracker.next_offset() >= 0) return;  // (nothing dispatched yet)
  p.committed = offset;
  p.tracker.reset(offset);
}

void LaneScheduler::detach_locked(PartitionState& part) {
  if (part.detached) return;
  part.detached = true;
  unfinished_count -= part.unfinished;
}

int64_t LaneScheduler::give_up_locked(PartitionState& part) {
  part.revoked.store(true, std::memory_order_relaxed);
  int64_t n = 0;
  for (auto& [key, lane] : part.lanes) n += drop_lane_locked(*lane);
  part.lanes.clear();
  for (auto it = pending.begin(); it != pending.end();) {
    if ((*it)->part.get() == &part) {
      n += drop_lane_locked(**it);
      (*it)->state = LaneState::kIdle;
      it = pending.erase(it);
    } else {
      ++it;
    }
  }
  return n;
}

std::pair<int64_t, int64_t> LaneScheduler::drain_and_give_up(const std::vector<PartitionPtr>& parts,
                                                             SteadyTime deadline) {
  std::unique_lock<std::mutex> lock(mu);
  for (const auto& p : parts) p->draining = true;
  auto all_done = [&] {
    if (batching_) {  // incomplete batches go now; with drop_last they are left (given up)
      const int64_t left = settle_batches_locked(false);
      int64_t unfinished = 0;
      for (const auto& p : parts) unfinished += p->unfinished;
      return unfinished <= left;
    }
    return std::all_of(parts.begin(), parts.end(),
                       [](const auto& p) { return p->unfinished == 0; });
  };
  while (!all_done() && steady_now() < deadline) {
    drained_cv_.wait_for(lock, std::chrono::milliseconds(5));
    drain_pending_locked();
  }
  int64_t given_up = 0, still_running = 0;
  for (const auto& p : parts) {
    still_running += p->unfinished;
    given_up += give_up_locked(*p);
  }
  return {given_up, still_running - given_up};
}

void LaneScheduler::remove_partition_locked(PartitionState& part) {
  detach_locked(part);
  auto it = partitions.find({part.topic, part.partition});
  if (it != partitions.end() && it->second.get() == &part) partitions.erase(it);
}

int64_t LaneScheduler::close_locked() {
  closed.store(true, std::memory_order_relaxed);
  int64_t given_up = 0;
  for (auto& [key, part] : partitions) given_up += give_up_locked(*part);
  for (auto& lane : pending) {  // (only partitions we no longer own)
    drop_lane_locked(*lane);
    lane->state = LaneState::kIdle;
  }
  pending.clear();
  return given_up;
}

std::vector<PartitionPtr> LaneScheduler::partitions_locked() const {
  std::vector<PartitionPtr> out;
  out.reserve(partitions.size());
  for (const auto& [key, part] : partitions) out.push_back(part);
  return out;
}

PartitionPtr LaneScheduler::find_locked(const std::string& topic, int32_t partition) const {
  auto it = partitions.find({topic, partition});
  return it == partitions.end() ? nullptr : it->second;
}

int64_t LaneScheduler::done_offset(const std::string& topic, int32_t partition) {
  std::lock_guard<std::mutex> lock(mu);
  flush_running_locked();
  const PartitionPtr p = find_locked(topic, partition);
  return p ? p->tracker.committable() : -1;
}

int64_t LaneScheduler::unfinished() {
  std::lock_guard<std::mutex> lock(mu);
  return unfinished_count;
}

int64_t LaneScheduler::pending_lanes() {
  std::lock_guard<std::mutex> lock(mu);
  return static_cast<int64_t>(pending.size());
}

SourceCounters LaneScheduler::counters_snapshot() {
  std::lock_guard<std::mutex> lock(mu);
  return counters;
}

// -------------------------------------------------------------------------------------------
// Worker side

bool LaneScheduler::submit_locked(const std::shared_ptr<Lane>& lane, QueuePlace place) {
  auto self = shared_from_this();
  return pool_.try_submit([self, lane] { self->run_lane(lane); }, place);
}

// Queues idle lanes that got messages, grouping them into shared pool tasks while the group's
// expected run time stays below kMinTaskSeconds (see there). A lane is in one task at a time
// (state kQueued), so sharing a task never runs two parts of one lane at once.
void LaneScheduler::queue_lanes_locked(std::vector<std::shared_ptr<Lane>>& lanes) {
  std::size_t first = 0;
  double expected = 0;
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    lanes[i]->state = LaneState::kQueued;
    expected += mean_handler_seconds_ * static_cast<double>(lanes[i]->waiting());
    const bool last = i + 1 == lanes.size();
    if (!last && expected < kMinTaskSeconds) continue;
    if (i == first) {
      submit_or_buffer_locked(lanes[i]);
    } else {
      std::vector<std::shared_ptr<Lane>> group(lanes.begin() + static_cast<std::ptrdiff_t>(first),
                                               lanes.begin() + static_cast<std::ptrdiff_t>(i + 1));
      auto self = shared_from_this();
      // Behind the pending buffer (FIFO), or refused: each lane waits there on its own.
      if (!pending.empty() || !pool_.try_submit([self, group] { self->run_lanes(group); })) {
        for (const auto& lane : group) submit_or_buffer_locked(lane);
      }
    }
    first = i + 1;
    expected = 0;
  }
  lanes.clear();
}

// Queues a lane that has messages to run (state kQueued): to the pool, or behind the pending
// buffer (FIFO: nothing overtakes what the pool refused earlier). kFront, for work taken
// earlier and cut short: ahead of the pool's queue, or of the pending buffer when refused.
void LaneScheduler::submit_or_buffer_locked(const std::shared_ptr<Lane>& lane, QueuePlace place) {
  lane->state = LaneState::kQueued;
  if (place == QueuePlace::kFront) {
    if (!submit_locked(lane, QueuePlace::kFront)) pending.push_front(lane);
  } else {
    if (pending.empty() && submit_locked(lane, QueuePlace::kBack)) return;
    pending.push_back(lane);
  }
  max_pending_seen = std::max<int64_t>(max_pending_seen, static_cast<int64_t>(pending.size()));
}

void LaneScheduler::drain_pending_locked() {
  while (!pending.empty()) {
    const std::shared_ptr<Lane>& lane = pending.front();
    if (lane->part->revoked.load(std::memory_order_relaxed) ||
        closed.load(std::memory_order_relaxed)) {
      drop_lane_locked(*lane);
      lane->state = LaneState::kIdle;
      pending.pop_front();
      continue;
    }
    if (!submit_locked(lane)) break;
    pending.pop_front();
  }
}

void LaneScheduler::drain_pending() {
  std::lock_guard<std::mutex> lock(mu);
  drain_pending_locked();
}

void LaneScheduler::release_locked(PartitionState& part, int64_t n) {
  if (n == 0) return;
  part.unfinished -= n;
  if (!part.detached) unfinished_count -= n;
  if (part.draining) drained_cv_.notify_all();
  if (room_waiter && unfinished_count <= resume_unfinished_) room_cv.notify_one();
}

// Drops the messages of a lane that no run holds: its inbox, and unless a worker runs it now,
// the rest of its running batch. Returns how many.
int64_t LaneScheduler::drop_lane_locked(Lane& lane) {
  auto n = static_cast<int64_t>(lane.inbox.size());
  lane.inbox.clear();
  if (lane.state != LaneState::kRunning) {
    n += static_cast<int64_t>(lane.running.size() - lane.next);
    lane.next = lane.completed = lane.running.size();
    lane.arrivals.clear();
    lane.taken = lane.appended;
  }
  release_locked(*lane.part, n);
  counters.dropped += static_cast<uint64_t>(n);
  return n;
}

// Completes in the tracker what the lane's current run has finished so far.
void LaneScheduler::flush_lane_locked(Lane& lane) {
  const std::size_t done = lane.done.load(std::memory_order_acquire);
  for (std::size_t i = lane.completed; i < done; ++i) {
    lane.part->tracker.complete(lane.running.messages[i].offset);
  }
  lane.completed = std::max(lane.completed, done);
}

void LaneScheduler::flush_running_locked() {
  for (Lane* lane : running_lanes_) flush_lane_locked(*lane);
}

// An idle lane with nothing left is unlisted (ordered lanes; chunks just die); its buffers
// are kept for new lanes.
void LaneScheduler::forget_lane_locked(Lane& lane) {
  if (lane.ordered) {
    auto it = lane.part->lanes.find(lane.key);
    if (it != lane.part->lanes.end() && it->second.get() == &lane) lane.part->lanes.erase(it);
  }
  recycle_locked(lane.inbox);
  lane.running.clear();
  lane.next = lane.completed = 0;
  lane.done.store(0, std::memory_order_relaxed);
  recycle_locked(lane.running);
  lane.arrivals.clear();
  lane.appended = lane.taken = 0;
}

void LaneScheduler::recycle_locked(MessageBatch& batch) {
  if (spare_batches_.size() >= kMaxSpareBatches || !batch.empty() ||
      batch.messages.capacity() == 0 || batch.messages.capacity() > kMaxSpareBatchMessages ||
      batch.bytes.capacity() > kMaxSpareBatchBytes) {
    return;
  }
  spare_batches_.push_back(std::move(batch));
  batch.clear();  // (a moved-from vector/string is valid but unspecified)
}

MessageBatch LaneScheduler::spare_batch_locked() {
  if (spare_batches_.empty()) return {};
  MessageBatch b = std::move(spare_batches_.back());
  spare_batches_.pop_back();
  return b;
}

// A run of messages[begin, end) ends: it is unlisted, what it finished completes in the
// tracker, and its messages (`failures` of them failed) leave the unfinished count. Returns how
// many it ran.
int64_t LaneScheduler::end_run_locked(Lane& lane, std::size_t begin, std::size_t end,
                                      std::size_t failures) {
  PartitionState& part = *lane.part;
  --part.running;
  running_lanes_.erase(std::find(running_lanes_.begin(), running_lanes_.end(), &lane));
  flush_lane_locked(lane);
  lane.next = end;
  const auto ran = static_cast<int64_t>(end - begin);
  release_locked(part, ran);
  counters.processed += static_cast<uint64_t>(ran) - failures;
  return ran;
}

// A task shared by several lanes runs them one after another; should they take longer than
// expected (the handler slowed down), the lanes not started by kRunBudgetSeconds get pool
// tasks of their own, so that other workers can take them.
// After an exception outside the handler: the run ends with what it finished (`end`; its
// `failures` counted as failed), the rest of the lane is dropped (not committed: delivered
// again), and the lane is forgotten, so it is neither listed as running nor left kRunning.
void LaneScheduler::abandon_run_locked(Lane& lane, std::size_t begin, std::size_t end,
                                       std::size_t failures) {
  end_run_locked(lane, begin, end, failures);
  counters.failed += failures;
  lane.state = LaneState::kIdle;
  drop_lane_locked(lane);
  forget_lane_locked(lane);
  drain_pending_locked();
}

void LaneScheduler::run_lanes(const std::vector<std::shared_ptr<Lane>>& lanes) {
  const double start = clock_.now();
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    if (i > 0 && clock_.now() - start >= kRunBudgetSeconds) {
      // The lanes not started keep their place and their order: to the front, last first.
      std::lock_guard<std::mutex> lock(mu);
      for (std::size_t k = lanes.size(); k-- > i;) {
        submit_or_buffer_locked(lanes[k], QueuePlace::kFront);
      }
      return;
    }
    try {
      run_lane(lanes[i]);
    } catch (...) {
      // The failed run cleaned up after itself; the lanes after it still get their turn.
      std::lock_guard<std::mutex> lock(mu);
      for (++i; i < lanes.size(); ++i) submit_or_buffer_locked(lanes[i]);
      throw;
    }
  }
}
// One pool task: runs up to kMaxRunMessages of a lane (kRunBudgetSeconds), then completes
// them under the lock in one go and queues the lane again if it has more.
void LaneScheduler::run_lane(const std::shared_ptr<Lane>& lane_ptr) {
  if (batching_) {
    run_batch_lane(lane_ptr);
    return;
  }
  Lane& lane = *lane_ptr;
  PartitionState& part = *lane.part;
  std::size_t begin = 0, end = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (lane.next >= lane.running.size()) {  // running batch exhausted: take the inbox
      lane.running.clear();
      std::swap(lane.running, lane.inbox);
      lane.next = lane.completed = 0;
      lane.done.store(0, std::memory_order_relaxed);
    }
    if (closed.load(std::memory_order_relaxed) || part.revoked.load(std::memory_order_relaxed) ||
        lane.next >= lane.running.size()) {
      drop_lane_locked(lane);
      lane.state = LaneState::kIdle;
      forget_lane_locked(lane);
      drain_pending_locked();
      return;
    }
    lane.state = LaneState::kRunning;
    running_lanes_.push_back(&lane);
    ++part.running;
    begin = lane.next;
    end = std::min(lane.running.size(), begin + kMaxRunMessages);
  }

  // Without the lock: running.messages[begin, end) stay as they are until this lane's next
  // run, and the byte buffer too.
  RunScratch& scratch = run_scratch;
  const double run_start = clock_.now();
  double last = run_start;
  double longest = 0;  // longest timed group (a single message unless very fast)
  std::size_t i = begin;
  bool abandoned = false;  // the handler left messages[i] unfinished (MessageAbandoned)
  try {
    scratch.seconds.clear();
    scratch.ages.clear();
    scratch.failures.clear();
    source_internal::shed_in_call = 0;
    SourceMessage& msg = scratch.message;
    msg.topic = part.topic;
    msg.partition = part.partition;
    const char* bytes = lane.running.bytes.data();
    std::size_t group = 1;  // messages per clock read (see kTimeEachAboveSeconds)
    std::size_t in_group = 0;
    while (i < end) {
      if (closed.load(std::memory_order_relaxed) || part.revoked.load(std::memory_order_relaxed)) {
        break;
      }
      const QueuedMessage& q = lane.running.messages[i];
      msg.offset = q.offset;
      msg.timestamp_ms = q.timestamp_ms;
      msg.has_key = q.has_key;
      msg.key.assign(bytes + q.key_pos, q.key_len);
      msg.value.assign(bytes + q.value_pos, q.value_len);
      fill_headers(msg, lane.running, q);
      if (run_fault_for_testing) run_fault_for_testing();
      try {
        handler_(msg);
      } catch (const MessageAbandoned&) {
        abandoned = true;
        break;
      } catch (const std::exception& e) {
        scratch.failures.emplace_back(q.offset, e.what());
      } catch (...) {
        scratch.failures.emplace_back(q.offset, "non-standard exception");
      }
      ++i;
      lane.done.store(i, std::memory_order_release);  // committable even if the next one hangs
      ++in_group;
      if (in_group == group || i == end) {
        const double now = clock_.now();
        const double took = now - last;
        last = now;
        const double each = took / static_cast<double>(in_group);
        scratch.seconds.insert(scratch.seconds.end(), in_group, each);
        longest = std::max(longest, took);
        in_group = 0;
        group = each < kTimeEachAboveSeconds ? std::min(2 * group, kMaxTimedGroup) : 1;
        if (now - run_start >= kRunBudgetSeconds) break;
      }
    }
    if (in_group > 0) {  // stopped early (given up) inside a timed group
      const double now = clock_.now();
      const double took = now - last;
      last = now;
      scratch.seconds.insert(scratch.seconds.end(), in_group, took / static_cast<double>(in_group));
      longest = std::max(longest, took);
    }
    // Record age at completion: one wall-clock read per run (a run lasts at most about
    // kRunBudgetSeconds plus one handler call).
    const int64_t now_ms = epoch_ms_now();
    for (std::size_t k = begin; k < i; ++k) {
      const int64_t ts = lane.running.messages[k].timestamp_ms;
      if (ts >= 0) {
        scratch.ages.push_back(static_cast<double>(now_ms - ts) / 1e3);
      }
    }
  } catch (...) {
    // Something outside the handler threw (a bug, or memory): the run must not stay listed
    // in running_lanes_ (a dangling pointer once the lane goes) nor in kRunning. What ran
    // completes; the rest of the lane is dropped (not committed: delivered again), and the
    // exception goes on to the pool, which records it (the service then fails readiness and
    // stops).
    std::lock_guard<std::mutex> lock(mu);
    abandon_run_locked(lane, begin, i, scratch.failures.size());
    throw;
  }

  {
    std::lock_guard<std::mutex> lock(mu);
    const int64_t ran = end_run_locked(lane, begin, i, scratch.failures.size());
    // Shed by the handler: finished, not processed (count_as_shed).
    const uint64_t shed = std::min<uint64_t>(source_internal::shed_in_call,
                                             static_cast<uint64_t>(ran) - scratch.failures.size());
    source_internal::shed_in_call = 0;
    counters.processed -= shed;
    counters.shed += shed;
    for (const auto& [offset, error] : scratch.failures) {
      ++counters.failed;
      if (counters.failed <= 10 || counters.failed % 1000 == 0) {
        spdlog::warn("kafka {}@{}: handler failed ({} failures so far): {}",
                     partition_name(part.topic, part.partition), offset, counters.failed, error);
      }
    }
    max_handler_seconds = std::max(max_handler_seconds, longest);
    if (ran > 0) {  // moving mean, weighted by messages (a run of 512 counts fully)
      const double run_mean = (last - run_start) / static_cast<double>(ran);
      const double weight = std::min(1.0, static_cast<double>(ran) / kMaxRunMessages);
      mean_handler_seconds_ += weight * (run_mean - mean_handler_seconds_);
    }
    for (const double age : scratch.ages) ages.add(age);
    lane.state = LaneState::kIdle;
    if (abandoned || closed.load(std::memory_order_relaxed) ||
        part.revoked.load(std::memory_order_relaxed)) {
      drop_lane_locked(lane);  // an abandoned message with the rest of its lane
      forget_lane_locked(lane);
    } else if (lane.waiting() > 0) {
      // The rest of this run's batch keeps its place in line; only an inbox goes to the back.
      const bool cut_short = lane.next < lane.running.size();
      submit_or_buffer_locked(lane_ptr, cut_short ? QueuePlace::kFront : QueuePlace::kBack);
    } else {
      forget_lane_locked(lane);
    }
    drain_pending_locked();
  }
  // Per-message run times into the pool's latency histogram (instead of this task's).
  pool_.record_items(scratch.seconds, scratch.failures.size());
}

}  // namespace lagpilot
