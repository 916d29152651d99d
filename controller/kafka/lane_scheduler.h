#pragma once
// The Kafka source's scheduling core: ordering lanes, dispatch to the worker pool, completion,
// the pending buffer, commit positions and the unfinished count. It takes plain MessageRecords
// (message_batch.h) and knows nothing of librdkafka, so tests drive it with a real WorkerPool
// and made-up messages, under ThreadSanitizer too.
//
// Algorithm.
//  * dispatch() takes one poll's messages and dispatches them together, in two steps so that
//    the lock is held briefly: first without the lock it sorts them into groups, one per lane,
//    copying keys, values and headers into the groups' buffers (the consumer's messages can be
//    released right after); then under the lock it records the offsets and hands each group
//    to its lane.
//  * Ordering lanes (per-key / per-partition FIFO queues): in `key` mode messages with the same
//    (topic, partition, key) are handled one at a time, in offset order; messages without a key
//    (a null key) are not ordered at all. In `partition` mode each partition is one lane. In
//    `unordered` mode (and for null keys) each dispatch's messages of a partition are cut into
//    chunks, one per worker (at most 512 messages), each a one-off lane.
//  * A lane is run by at most one pool task at a time. A task runs up to 512 of its lane's
//    messages one after another (stopping after 10 ms of handler time), completes them in one
//    go, and queues the lane again if it has more: what the run did not reach at the front of
//    the pool queue (it is older than anything queued since, so the commit offset keeps up
//    with the work done), messages that arrived meanwhile at the back. Lanes that one dispatch
//    queued share a task when their messages are expected (from the mean handler time) to take
//    under 0.1 ms in all; such a task hands the lanes it has not started after 10 ms to tasks of
//    their own. So per message there is no allocation, no pool task and no lock; per run one task
//    and two lock round trips.
//  * The handler sees a SourceMessage that the worker refills for each message (key, value and
//    headers are copied into its strings, whose capacity is reused). Its run time goes into
//    the pool's latency histogram per message (WorkerPool::record_items; the pool then does not
//    record the task as a whole): each message is timed on its own, except that very fast ones
//    (under 2 us) are timed in groups of up to 64, each recorded with the group's mean. A
//    handler that throws counts the message as failed; its offset still completes. One that
//    calls count_as_shed() (source_message.h) during the call counts it as shed, not processed.
//  * When the pool refuses a lane (queue full), it goes to the pending buffer (FIFO, never
//    dropped); the poll thread and completing workers retry the buffer.
//  * Offsets: per partition a PartitionOffsetTracker records dispatched offsets and
//    out-of-order completions; the commit offset is the highest offset below which everything
//    dispatched is done. A run publishes how far it got after each message, and
//    flush_running_locked() (called before every commit and stats read) completes what runs in
//    progress have finished, so a long or stuck run does not hold back the commit of what it
//    already did.
//  * Giving a partition up (revoke, stop): what no worker runs yet is dropped (counted in
//    `dropped`; it was not committed, so it is delivered again), and a run in progress stops
//    before its next message. drain_and_give_up() first waits, bounded, for the partition's
//    messages to finish.
//  * "Unfinished" = dispatched but not finished (pool queue + running + lanes + pending), in
//    messages; the flow control above this class bounds it.
//
// Threads and locks.
//  * The poll thread (the consumer's thread; the test's thread in tests) calls dispatch() and
//    the partition management; it alone writes the partition table and the fields that
//    stage() reads without the lock (a partition's `paused`, the trackers' next offsets,
//    refuse_all), so it may read them without the lock.
//  * Pool workers run lanes (the handler), then complete them under the lock.
//  * `mu` guards all dispatch state: the partition table and every PartitionState field
//    (including those the consumer side keeps there: pause flags, watermarks, committed), the
//    lanes, the pending buffer, counters and the record-age histogram. It is never held across
//    the handler, and the consumer side must not hold it across a call that can block. Lock
//    order: mu, then the pool's internal lock (try_submit is called under mu).
//  * A run's messages (Lane::running) are read by its worker without the lock: they are only
//    replaced at the start of the lane's next run, under the lock.
//  * Atomics: `closed` and each partition's `revoked` flag (written under mu, read by running
//    workers between messages), each lane's done count (written by its worker, read under mu).
//  * Pool tasks hold a shared_ptr to the scheduler, so a task that runs after close() (or after
//    its partition was given up) finds it alive; it then skips the handler.
//
// Batches (set_batching, batch_run.cpp). With a "batch" config, every partition is one lane,
// whatever the ordering mode (so key and partition order hold, and a batch never mixes
// partitions), and a run delivers one batch: the lane's next batch.max_messages messages in
// offset order, in one call of the batch handler. A lane with fewer waiting is left idle until
// more arrive or its oldest waiting message has waited max_wait_seconds (by the injected
// clock, from its dispatch); flush_due_batches(), which the poll loop calls every iteration,
// then queues it, and the run delivers the incomplete batch, or with drop_last hands it to the
// drop handler and counts it in dropped_incomplete_batch. Either way its offsets complete. A
// batch's messages finish together (done, failed or abandoned as one). While a partition is
// being given up (revoke, stop), an incomplete batch is delivered at once; with drop_last it
// is given up instead (not committed: delivered again), never dropped for the revoke.
// Per batch the pool's latency histogram gets one sample (the batch's run time); the counters
// count messages.
//
// Time: the injected Clock measures handler run time and bounds runs; drain deadlines are real
// waits (std::chrono::steady_clock); record age is the system clock read at the end of a run
// minus the record's timestamp (both epoch-based, like Kafka's).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "controller/kafka/batch_config.h"
#include "controller/kafka/message_batch.h"
#include "controller/kafka/offset_tracker.h"
#include "controller/kafka/source_counters.h"
#include "controller/kafka/source_message.h"
#include "controller/pool/worker_pool.h"
#include "policies/clock.h"
#include "policies/log_histogram.h"

namespace lagpilot {

enum class Ordering { kKey, kPartition, kUnordered };
// Throws ConfigError naming "kafka.ordering" for anything but key, partition, unordered.
Ordering parse_ordering(const std::string& s);

using SteadyTime = std::chrono::steady_clock::time_point;
SteadyTime steady_now();
SteadyTime steady_after(double seconds);  // clamped to [0, 1e6] s
std::string partition_name(const std::string& topic, int32_t partition);

struct Lane;

// Hash for string keys that also accepts std::string_view (lookups without a copy).
struct KeyHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
};

// One assigned partition. Guarded by LaneScheduler::mu (all fields, except that `revoked` is
// also read by running workers without the lock, to stop a run early).
struct PartitionState {
  PartitionState(std::string t, int32_t p) : topic(std::move(t)), partition(p) {}
  std::string topic;
  int32_t partition;

  // ---- Scheduling (LaneScheduler) ----
  PartitionOffsetTracker tracker;
  // Ordering lanes by key ("" in partition mode). A lane is listed while it holds messages
  // (waiting, queued or running); an idle, empty lane is removed.
  std::unordered_map<std::string, std::shared_ptr<Lane>, KeyHash, std::equal_to<>> lanes;
  int64_t unfinished = 0;  // dispatched, not finished (also counted in LaneScheduler::unfinished
                           // unless detached)
  int running = 0;         // lane runs in progress on workers
  bool draining = false;   // being given up: completions signal drained_cv
  // Given up: runs stop before their next message, lanes are closed. Atomic: running workers
  // read it without the lock; written under mu.
  std::atomic<bool> revoked{false};
  bool detached = false;  // removed from the assignment and from LaneScheduler::unfinished

  // ---- Consumer side (flow control, commits, retention, stats) ----
  bool paused = false;         // rd_kafka_pause_partitions succeeded for it (dispatch refuses)
  bool started = false;        // a message arrived: librdkafka has started its fetcher
  bool repause = false;        // a message arrived although paused: pause again
  int64_t refetch_from = -1;   // lowest offset refused while paused, to fetch again; while it
                               // is set, dispatch refuses this partition's messages too (the
                               // fetcher is ahead of it until a seek there succeeds)
  uint64_t seek_failures = 0;  // failed seeks to refetch_from in a row (retried every poll)
  int64_t committed = -1;      // broker-acknowledged commit offset
  int64_t low = -1;            // watermarks, last known
  int64_t high = -1;
  SteadyTime marks_at{};  // when a broker query last returned them ({}: never)
  bool expiry_warned = false;
  uint64_t gap_warnings = 0;  // forward gaps above the log start seen (rate-limits their log)
};

using PartitionPtr = std::shared_ptr<PartitionState>;

// An ordering lane (the messages of one key of one partition, or of one partition), or in
// unordered mode (and for null keys in key mode) a one-off chunk of one partition. At most one
// pool task runs a lane at a time, so a lane's messages run one after another, in order.
//
// The poll thread appends to `inbox`. A run (one pool task) first swaps an exhausted `running`
// batch with the inbox, then runs running.messages[next, ...) without the lock: those messages
// are not modified until the next swap, which only the lane's own next run does. After each
// message the worker publishes `done`; flush_lane_locked completes [completed, done) in the
// partition's tracker so that a long or stuck run still lets everything it finished be
// committed.
enum class LaneState { kIdle, kQueued, kRunning };  // queued: in the pool queue or pending

struct Lane {
  Lane(PartitionPtr p, std::string k, bool o) : part(std::move(p)), key(std::move(k)), ordered(o) {}
  const PartitionPtr part;
  const std::string key;  // its key in part->lanes (ordered lanes only)
  const bool ordered;     // listed in part->lanes; a chunk (false) is never refilled once queued
  // Guarded by LaneScheduler::mu:
  LaneState state = LaneState::kIdle;
  MessageBatch inbox;         // appended by the poll thread
  MessageBatch running;       // see above; swapped only at the start of a run
  std::size_t next = 0;       // running.messages[0, next) were run or dropped
  std::size_t completed = 0;  // running.messages[0, completed) completed in the tracker
  // Atomic: written by the worker running the lane after each message (release), read under
  // LaneScheduler::mu by flush_lane_locked (acquire). running.messages[0, done) finished their
  // handler.
  std::atomic<std::size_t> done{0};
  // Batching only (guarded by mu): messages ever appended and ever taken into a batch (or
  // dropped), and per dispatch (messages appended after it, clock time): the arrival time of
  // the oldest waiting message is that of the first entry past `taken`.
  uint64_t appended = 0;
  uint64_t taken = 0;
  std::deque<std::pair<uint64_t, double>> arrivals;

  std::size_t waiting() const { return inbox.size() + running.size() - next; }
};

// A jump in offsets, for the consumer side to check against the watermarks. Forward (offset >
// expected): records [expected, offset) were not delivered: retention loss, compaction or
// transaction markers. Backward (offset < expected): `count` records of one poll, the lowest
// at `offset`, were below the next expected offset: re-deliveries (counted in
// duplicates_skipped), unless the log was truncated or recreated below us.
struct OffsetGap {
  PartitionPtr part;
  int64_t expected;
  int64_t offset;
  uint64_t count = 0;  // backward gaps only
};

// count_as_shed() (source_message.h) adds to the calling worker's count, which a run resets
// before the handler and reads after it (lane_scheduler.cpp, batch_run.cpp).
namespace source_internal {
extern thread_local std::size_t shed_in_call;
}  // namespace source_internal

class LaneScheduler : public std::enable_shared_from_this<LaneScheduler> {
 public:
  // `resume_unfinished`: wake a room waiter (wait_for_room) when unfinished falls to it.
  // `pool`, `clock` and the handler's captures must outlive every pool task.
  LaneScheduler(WorkerPool& pool, MessageHandler handler, const Clock& clock, Ordering ordering,
                int64_t resume_unfinished);
  ~LaneScheduler();

  LaneScheduler(const LaneScheduler&) = delete;
  LaneScheduler& operator=(const LaneScheduler&) = delete;

  // ---- Poll thread ----

  // Batch delivery (see the algorithm): before the first dispatch. `deliver` runs a batch;
  // `drop_incomplete` (may be empty) takes a timed-out incomplete batch with drop_last.
  void set_batching(const BatchConfig& config, BatchHandler deliver, BatchHandler drop_incomplete);
  bool batching() const { return batching_; }
  // Queues the lanes whose incomplete batch is due (max_wait_seconds by the clock). Takes mu.
  // Returns how many lanes it queued.
  int flush_due_batches();
  // While giving partitions up (revoke, stop): queues their idle incomplete batches for
  // delivery now, or with drop_last leaves them; returns how many messages so left (not to be
  // waited for). `all`: every partition (stop), else the draining ones. Requires mu.
  int64_t settle_batches_locked(bool all);

  // Dispatches one poll's messages (see the algorithm): records for partitions not in the
  // table (or given up) are ignored; a paused partition's (or, with refuse_all, any) messages
  // are refused (counted, and remembered in refetch_from / repause); offsets below the
  // partition's next offset are skipped as duplicates (and appended to `gaps` as one backward
  // gap per partition); jumps above it are appended to `gaps`.
  void dispatch(std::span<const MessageRecord> records, std::vector<OffsetGap>& gaps);

  // Adds a partition (starting position unknown until its tracker is reset). A partition
  // already in the table is given up first. Requires mu.
  PartitionPtr add_partition_locked(const std::string& topic, int32_t partition);
  // Sets where a partition starts (its committed offset, or -1): the tracker's position and
  // `committed`, unless a message was dispatched already or it was given up. Requires mu.
  void start_partition_locked(PartitionState& part, int64_t offset);
  // Waits until these partitions have nothing unfinished or `deadline` passes, retrying the
  // pending buffer, then gives up what is left. Takes mu. Returns {dropped before reaching a
  // worker, still running}.
  std::pair<int64_t, int64_t> drain_and_give_up(const std::vector<PartitionPtr>& parts,
                                                SteadyTime deadline);
  // Removes a partition from the table and from the unfinished count. Requires mu.
  void remove_partition_locked(PartitionState& part);
  // Gives everything up (stop): runs stop before their next message, nothing is submitted any
  // more. Returns how many messages were dropped before reaching a worker. Requires mu.
  int64_t close_locked();

  // Gives up what a partition still holds that no worker runs now (lanes waiting, queued or
  // pending), and makes runs in progress stop before their next message. Returns how many
  // messages were dropped here. (Chunks queued in the pool drop theirs when they run.)
  // Requires mu.
  int64_t give_up_locked(PartitionState& part);
  // Removes a partition from the unfinished count (its leftovers are no longer ours).
  void detach_locked(PartitionState& part);

  // ---- Any thread ----

  // Retries the pending buffer. Requires mu (drain_pending takes it).
  void drain_pending_locked();
  void drain_pending();
  // Before reading a tracker's commit offset: what runs in progress have finished counts.
  // Requires mu.
  void flush_running_locked();
  std::vector<PartitionPtr> partitions_locked() const;  // the table, in (topic, partition) order
  PartitionPtr find_locked(const std::string& topic, int32_t partition) const;

  // For tests and the consumer side: the commit offset of a partition now (flushes running
  // lanes first); -1 if unknown or not in the table. Takes mu.
  int64_t done_offset(const std::string& topic, int32_t partition);
  int64_t unfinished();     // takes mu
  int64_t pending_lanes();  // takes mu
  SourceCounters counters_snapshot();

  // The flow control's backpressure grace (flow_control.cpp): `caught_up` is evaluated under
  // mu. Waits in 1 ms slices until it holds or `deadline` passes, retrying the
  // pending buffer. Requires mu (held through `lock`).
  template <typename Pred>
  void wait_for_room_locked(std::unique_lock<std::mutex>& lock, SteadyTime deadline,
                            Pred caught_up) {
    room_waiter = true;
    // Short slices: the pool's backpressure flips without notifying room_cv.
    while (!caught_up() && steady_now() < deadline) {
      room_cv.wait_for(lock, std::chrono::milliseconds(1));
      drain_pending_locked();
    }
    room_waiter = false;
  }

  WorkerPool& pool() { return pool_; }

  // Test seam: called by lane runs on their workers, outside the lock, before each message's
  // handler; what it throws escapes the run as a bug would. Set before dispatching.
  std::function<void()> run_fault_for_testing;
  std::size_t running_lanes_locked() const { return running_lanes_.size(); }  // requires mu

  // ---- Guarded by mu ----
  std::mutex mu;
  std::map<std::pair<std::string, int32_t>, PartitionPtr> partitions;
  std::deque<std::shared_ptr<Lane>> pending;  // lanes refused by the pool; FIFO; never dropped
  SourceCounters counters;
  int64_t unfinished_count = 0;  // dispatched, not finished, over attached partitions
  int64_t max_unfinished_seen = 0;
  int64_t max_pending_seen = 0;
  uint64_t consumed_bytes = 0;
  double max_handler_seconds = 0;  // longest timed group (a single message unless very fast)
  LogHistogram ages;               // record age at completion, seconds, since the last take
  double last_age_p99 = 0;         // p99 of `ages` when the tick last took its window
  bool refuse_all = false;         // a pause is wanted for every partition: refuse messages
  // stop gave up: runs stop before their next message, nothing is submitted. Atomic: running
  // workers read it without the lock; written under mu.
  std::atomic<bool> closed{false};

 private:
  struct Staging;  // the poll thread's scratch for one dispatch (lane_scheduler.cpp)

  void stage(std::span<const MessageRecord> records, std::vector<OffsetGap>& gaps);
  void dispatch_staged_locked();
  bool submit_locked(const std::shared_ptr<Lane>& lane, QueuePlace place = QueuePlace::kBack);
  void queue_lanes_locked(std::vector<std::shared_ptr<Lane>>& lanes);
  void submit_or_buffer_locked(const std::shared_ptr<Lane>& lane,
                               QueuePlace place = QueuePlace::kBack);
  void release_locked(PartitionState& part, int64_t n);
  int64_t drop_lane_locked(Lane& lane);
  void flush_lane_locked(Lane& lane);
  int64_t end_run_locked(Lane& lane, std::size_t begin, std::size_t end, std::size_t failures);
  void abandon_run_locked(Lane& lane, std::size_t begin, std::size_t end, std::size_t failures);
  void forget_lane_locked(Lane& lane);
  void recycle_locked(MessageBatch& batch);
  MessageBatch spare_batch_locked();
  void run_lanes(const std::vector<std::shared_ptr<Lane>>& lanes);
  void run_lane(const std::shared_ptr<Lane>& lane);
  void run_batch_lane(const std::shared_ptr<Lane>& lane);  // batch_run.cpp
  double batch_due_locked(const Lane& lane) const;         // clock time the partial batch is due
  bool batch_ready_locked(const Lane& lane) const;         // full, or due

  WorkerPool& pool_;
  const MessageHandler handler_;
  const Clock& clock_;
  const Ordering ordering_;
  const int64_t resume_unfinished_;
  // Batching (set_batching, before any dispatch; read-only afterwards).
  bool batching_ = false;
  BatchConfig batch_;
  BatchHandler batch_deliver_;
  BatchHandler batch_drop_;
  bool settling_all_ = false;  // guarded by mu: stop delivers (or leaves) incomplete batches

  std::unique_ptr<Staging> staging_;  // poll thread only

  // Guarded by mu:
  std::condition_variable drained_cv_;       // a draining partition's message finished
  std::vector<Lane*> running_lanes_;         // lanes a worker runs now (for flush_running_locked)
  std::vector<MessageBatch> spare_batches_;  // empty buffers for new lanes
  double mean_handler_seconds_;              // per message, moving mean over runs
  std::condition_variable room_cv;  // unfinished fell to resume_unfinished (room_waiter set)
  bool room_waiter = false;         // the poll thread waits on room_cv
};

}  // namespace lagpilot
