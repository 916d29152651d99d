#include "controller/kafka/kafka_source.h"

#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "controller/kafka/offset_tracker.h"
#include "policies/config_reader.h"

namespace lagpilot {
namespace {

enum class Ordering { kKey, kPartition, kUnordered };

constexpr int kIdlePollMs = 50;              // consumer_poll timeout when nothing waits
constexpr int kBusyPollMs = 5;               // when the pending buffer waits for room in the pool
constexpr int kMaxBatch = 1024;              // messages taken per poll iteration
constexpr std::size_t kStreamingBatch = 64;  // a poll this big means messages stream in
constexpr int kStreamingNapMicros = 300;     // see poll_batch
// Before pausing for backpressure, the poll thread waits this long (real time) for the workers
// to bring the unfinished count down to the resume level: a pause makes librdkafka drop what
// it has prefetched for the partition (fetched and parsed again after the resume), so riding
// out a short stall costs less. The poll loop's longest wait stays kIdlePollMs.
constexpr int kBackpressureGraceMs = kIdlePollMs;

// One pool task runs at most this many messages of its lane, and stops after the message
// that crosses kRunBudgetSeconds (by the injected clock); the rest runs in a new task at the
// back of the pool queue, so that a long lane neither hogs a worker nor delays a shrink.
constexpr std::size_t kMaxRunMessages = 512;
constexpr double kRunBudgetSeconds = 0.01;
// Lanes queued by one poll share a pool task while their messages are expected (from the mean
// handler time so far) to take less than this together: waking a worker costs more than
// running a few hundred fast messages.
constexpr double kMinTaskSeconds = 100e-6;
constexpr double kInitialHandlerSeconds = 1e-3;  // the mean's prior: one lane per task
// Handler timing: each message is timed on its own unless the handler is very fast (below
// kTimeEachAboveSeconds per message); then groups of up to kMaxTimedGroup messages are timed
// and each is recorded with its group's mean, so that reading the clock (tens of ns) does not
// cost more than the handler itself.
constexpr double kTimeEachAboveSeconds = 2e-6;
constexpr std::size_t kMaxTimedGroup = 64;
// Message buffers of finished lanes are kept for reuse, so that lanes created per poll do not
// allocate: at most kMaxSpareBatches, each up to the sizes below (bounding the memory kept).
constexpr std::size_t kMaxSpareBatches = 64;
constexpr std::size_t kMaxSpareBatchMessages = 4096;
constexpr std::size_t kMaxSpareBatchBytes = 1 << 20;

constexpr int kCommittedQueryMs = 3000;
constexpr int kQueuedMinMessages = 1'000'000;  // librdkafka default: see the constructor
constexpr double kRefreshBudgetSeconds = 2.0;
constexpr int kRefreshQueryMaxMs = 1000;
constexpr int64_t kFetchMaxBytesWarnAbove = 50LL * 1024 * 1024;  // librdkafka's default
constexpr uint64_t kQueueCheckAfterMessages = 1000;

using SteadyTime = std::chrono::steady_clock::time_point;
SteadyTime steady_now() {
  return std::chrono::steady_clock::now();
}
SteadyTime steady_after(double seconds) {
  seconds = std::clamp(seconds, 0.0, 1e6);
  return steady_now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(seconds));
}

int64_t epoch_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Ordering parse_ordering(const std::string& s) {
  if (s == "key") return Ordering::kKey;
  if (s == "partition") return Ordering::kPartition;
  if (s == "unordered") return Ordering::kUnordered;
  throw ConfigError("kafka.ordering",
                    "must be one of key, partition, unordered, got \"" + s + "\"");
}

// Record ages (seconds) in log-spaced buckets, 8 per octave from 1 ms; a quantile is reported
// as the upper bound of its bucket (at most 9 % high).
class AgeHistogram {
 public:
  static int index_of(double seconds) {
    const double ms = seconds * 1000.0;
    int index = 0;
    if (ms > 1.0) {
      index = static_cast<int>(std::ceil(std::log2(ms) * kPerOctave));
      index = std::clamp(index, 0, kBuckets - 1);
    }
    return index;
  }
  void add(double seconds) { add_index(index_of(seconds)); }
  void add_index(int index) {
    ++counts_[static_cast<std::size_t>(index)];
    ++total_;
  }
  double quantile(double q) const {
    if (total_ == 0) return 0.0;
    const double rank = std::ceil(q * static_cast<double>(total_));
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts_[static_cast<std::size_t>(i)];
      if (static_cast<double>(seen) >= rank) return std::exp2(i / double(kPerOctave)) / 1000.0;
    }
    return std::exp2((kBuckets - 1) / double(kPerOctave)) / 1000.0;
  }
  void clear() {
    counts_.fill(0);
    total_ = 0;
  }

 private:
  static constexpr int kPerOctave = 8;
  static constexpr int kBuckets = kPerOctave * 40;  // up to 2^40 ms (~35 years)
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t total_ = 0;
};

struct Lane;

// Hash for string keys that also accepts std::string_view (lookups without a copy).
struct KeyHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
};

// One assigned partition. Guarded by Core::mu (all fields, except that `revoked` is also read
// by running workers without the lock, to stop a run early).
struct PartitionState {
  PartitionState(std::string t, int32_t p) : topic(std::move(t)), partition(p) {}
  std::string topic;
  int32_t partition;
  PartitionOffsetTracker tracker;
  // Ordering lanes by key ("" in partition mode). A lane is listed while it holds messages
  // (waiting, queued or running); an idle, empty lane is removed.
  std::unordered_map<std::string, std::shared_ptr<Lane>, KeyHash, std::equal_to<>> lanes;
  std::shared_ptr<Lane> open_chunk;  // unordered chunk being filled by the current dispatch
  int64_t unfinished = 0;  // consumed, not finished (also counted in Core::unfinished unless
                           // detached)
  int running = 0;         // lane runs in progress on workers
  bool draining = false;   // being revoked: completions signal Core::drained_cv
  // Given up: runs stop before their next message, lanes are closed. Atomic: running workers
  // read it without the lock; written under Core::mu.
  std::atomic<bool> revoked{false};
  bool detached = false;      // removed from the assignment and from Core::unfinished
  bool paused = false;        // rd_kafka_pause_partitions succeeded for it
  bool started = false;       // a message arrived: librdkafka has started its fetcher
  bool repause = false;       // a message arrived although paused: pause again
  int64_t refetch_from = -1;  // lowest offset refused while paused, to fetch again
  int64_t committed = -1;     // broker-acknowledged commit offset
  int64_t low = -1;           // watermarks, last known
  int64_t high = -1;
  bool expiry_warned = false;
};

// One consumed message waiting to run; its key and value are in its batch's byte buffer.
struct QueuedMessage {
  int64_t offset;
  int64_t timestamp_ms;
  std::size_t key_pos;
  std::size_t value_pos;
  uint32_t key_len;
  uint32_t value_len;
  bool has_key;
};

// Messages of one lane in offset order, with their bytes copied into one buffer (so the
// librdkafka message is released at once, and no allocation is made per message once the
// buffers have grown).
struct MessageBatch {
  std::vector<QueuedMessage> messages;
  std::string bytes;

  std::size_t size() const { return messages.size(); }
  bool empty() const { return messages.empty(); }
  void clear() {
    messages.clear();
    bytes.clear();
  }
  void append(const rd_kafka_message_t* m, int64_t timestamp_ms) {
    QueuedMessage q{};
    q.offset = m->offset;
    q.timestamp_ms = timestamp_ms;
    q.has_key = m->key != nullptr;
    q.key_pos = bytes.size();
    if (q.has_key) {
      q.key_len = static_cast<uint32_t>(m->key_len);
      bytes.append(static_cast<const char*>(m->key), m->key_len);
    }
    q.value_pos = bytes.size();
    if (m->payload != nullptr) {
      q.value_len = static_cast<uint32_t>(m->len);
      bytes.append(static_cast<const char*>(m->payload), m->len);
    }
    messages.push_back(q);
  }
  // Appends all of `other` (its messages follow this batch's in offset order).
  void append(const MessageBatch& other) {
    const std::size_t base = bytes.size();
    bytes.append(other.bytes);
    messages.reserve(messages.size() + other.messages.size());
    for (QueuedMessage q : other.messages) {
      q.key_pos += base;
      q.value_pos += base;
      messages.push_back(q);
    }
  }
  // Moves `other`'s messages in (this batch must be empty), leaving other empty with this
  // batch's old buffers, so capacity circulates instead of being reallocated.
  void take(MessageBatch& other) {
    clear();
    messages.swap(other.messages);
    bytes.swap(other.bytes);
  }
};

// An ordering lane (the messages of one key of one partition, or of one partition), or in
// unordered mode (and for null keys in key mode) a one-off chunk of one partition. At most one
// pool task runs a lane at a time, so a lane's messages run one after another, in order.
//
// The poll thread appends to `inbox`. A run (one pool task) first swaps an exhausted `running`
// batch with the inbox, then runs running.messages[next, ...) without the lock: those messages
// are not modified until the next swap, which only the lane's own next run does. After each
// message the worker publishes `done`; the committer completes [completed, done) in the
// partition's tracker (flush_lane_locked) so that a long or stuck run still lets everything it
// finished be committed.
enum class LaneState { kIdle, kQueued, kRunning };  // queued: in the pool queue or pending

struct Lane {
  Lane(std::shared_ptr<PartitionState> p, std::string k, bool o)
      : part(std::move(p)), key(std::move(k)), ordered(o) {}
  const std::shared_ptr<PartitionState> part;
  const std::string key;  // its key in part->lanes (ordered lanes only)
  const bool ordered;     // listed in part->lanes; a chunk (false) is never refilled once queued
  // Guarded by Core::mu:
  LaneState state = LaneState::kIdle;
  MessageBatch inbox;         // appended by the poll thread
  MessageBatch running;       // see above; swapped only at the start of a run
  std::size_t next = 0;       // running.messages[0, next) were run or dropped
  std::size_t completed = 0;  // running.messages[0, completed) completed in the tracker
  // Atomic: written by the worker running the lane after each message (release), read under
  // Core::mu by flush_lane_locked (acquire). running.messages[0, done) finished their handler.
  std::atomic<std::size_t> done{0};

  std::size_t waiting() const { return inbox.size() + running.size() - next; }
};

// Per-worker-thread scratch for runs, so that a run allocates nothing once it has grown.
struct RunScratch {
  SourceMessage message;
  std::vector<double> seconds;   // handler run time per message
  std::vector<int> age_buckets;  // AgeHistogram::index_of per message with a timestamp
  std::vector<std::pair<int64_t, std::string>> failures;  // offset, error
};
thread_local RunScratch run_scratch;

// What one poll's messages will add to one lane (a group), staged by the poll thread without
// the lock; `key` points into a librdkafka message, which outlives the dispatch.
struct StagedGroup {
  std::shared_ptr<PartitionState> part;
  std::string_view key;  // lane key (ordered groups)
  bool ordered = false;  // false: an unordered chunk (a new lane)
  MessageBatch batch;
};

// What one poll adds to one partition.
struct StagedPartition {
  std::shared_ptr<PartitionState> part;
  std::vector<int64_t> offsets;  // accepted, in offset order (for the tracker)
  int64_t next = -1;             // the tracker's next_offset() as it will be after `offsets`
  uint64_t bytes = 0;            // keys + values accepted
  uint64_t duplicates = 0;       // below next: delivered before
  uint64_t refused = 0;          // arrived while paused
  int64_t refused_from = -1;     // lowest offset refused
  std::size_t open_chunk = 0;    // groups index + 1 of the chunk being filled; 0: none
  std::unordered_map<std::string_view, std::size_t> key_groups;  // lane key -> groups index
};

// The poll thread's scratch for dispatching one poll (kept between polls for its buffers).
struct DispatchStaging {
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
      p.open_chunk = 0;
      p.key_groups.clear();
    }
    n_parts = 0;
  }
  StagedPartition& add_partition(std::shared_ptr<PartitionState> part) {
    if (n_parts == parts.size()) parts.emplace_back();
    StagedPartition& p = parts[n_parts++];
    p.next = part->tracker.next_offset();
    p.part = std::move(part);
    return p;
  }
  std::size_t add_group(const std::shared_ptr<PartitionState>& part, std::string_view key,
                        bool ordered) {
    if (n_groups == groups.size()) groups.emplace_back();
    StagedGroup& g = groups[n_groups];
    g.part = part;
    g.key = key;
    g.ordered = ordered;
    return n_groups++;
  }
};

// A jump in offsets to check against the log start (outside the lock).
struct Gap {
  std::shared_ptr<PartitionState> part;
  int64_t expected;
  int64_t offset;
};

std::string partition_name(const std::string& topic, int32_t partition) {
  return topic + "[" + std::to_string(partition) + "]";
}

}  // namespace

struct KafkaSource::Core : std::enable_shared_from_this<KafkaSource::Core> {
  Core(KafkaSourceConfig c, WorkerPool& p, MessageHandler h, const Clock& cl)
      : config(std::move(c)),
        ordering(parse_ordering(config.ordering)),
        pool(p),
        handler(std::move(h)),
        clock(cl) {}
  ~Core() {
    if (conf != nullptr) rd_kafka_conf_destroy(conf);
  }

  // ---- Immutable after construction / start() ----
  KafkaSourceConfig config;
  Ordering ordering;
  WorkerPool& pool;
  MessageHandler handler;
  const Clock& clock;
  rd_kafka_conf_t* conf = nullptr;  // owned until start() hands it to rd_kafka_new
  rd_kafka_t* rk = nullptr;         // start() creates, KafkaSource::stop() destroys
  int64_t max_unfinished = 0;
  int64_t resume_unfinished = 0;
  double max_poll_interval_seconds = 300.0;
  int64_t fetch_max_bytes = 52428800;
  int64_t max_partition_fetch_bytes = 1048576;

  // ---- Atomics (control thread writes, poll thread reads) ----
  std::atomic<bool> operator_paused{false};  // atomic: set by any thread, read by the poll loop
  std::atomic<bool> stop_requested{false};   // atomic: set by stop(), read by the poll loop
  std::atomic<int> assigned{0};              // atomic: written by the poll thread, read anywhere
  SteadyTime stop_deadline{};                // written before stop_requested (release)

  // ---- Poll thread only ----
  std::vector<std::shared_ptr<PartitionState>> awaiting_committed;  // assigned, offsets unread
  DispatchStaging staging;                                          // stage_batch's scratch
  bool backpressure_paused = false;
  bool streaming = false;  // the last poll took a run of messages (see poll_batch)
  bool warned_handler_time = false;
  bool warned_queue_capacity = false;
  uint64_t error_events = 0;

  // ---- Guarded by mu ----
  std::mutex mu;
  std::condition_variable drained_cv;  // a draining partition's message finished
  std::condition_variable room_cv;     // unfinished fell to resume_unfinished (room_waiter set)
  bool room_waiter = false;            // the poll thread waits on room_cv
  std::map<std::pair<std::string, int32_t>, std::shared_ptr<PartitionState>> partitions;
  std::deque<std::shared_ptr<Lane>> pending;  // lanes refused by the pool; FIFO; never dropped
  std::vector<Lane*> running_lanes;           // lanes a worker runs now (for flush_running)
  std::vector<MessageBatch> spare_batches;    // empty buffers for new lanes (see kMaxSpare...)
  double mean_handler_seconds = kInitialHandlerSeconds;  // per message, moving mean over runs
  int64_t unfinished = 0;
  int64_t max_unfinished_seen = 0;
  int64_t max_pending_seen = 0;
  uint64_t consumed = 0, processed = 0, failed = 0, lost_to_retention = 0;
  uint64_t commits = 0, commit_failures = 0, dropped = 0, duplicates = 0;
  uint64_t pauses = 0, resumes = 0, refused_while_paused = 0;
  uint64_t consumed_bytes = 0;
  double max_handler_seconds = 0;
  AgeHistogram ages;
  // stop() gave up: runs stop before their next message, nothing is submitted. Atomic: running
  // workers read it without the lock; written under mu.
  std::atomic<bool> closed{false};
  bool paused_now = false;  // the wanted pause state of all partitions

  // -------------------------------------------------------------------------------------------
  // Worker side

  bool submit_locked(const std::shared_ptr<Lane>& lane) {
    auto self = shared_from_this();
    return pool.try_submit([self, lane] { self->run_lane(lane); });
  }

  // Queues idle lanes that got messages, grouping them into shared pool tasks while the group's
  // expected run time stays below kMinTaskSeconds (see there). A lane is in one task at a time
  // (state kQueued), so sharing a task never runs two parts of one lane at once.
  void queue_lanes_locked(std::vector<std::shared_ptr<Lane>>& lanes) {
    std::size_t first = 0;
    double expected = 0;
    for (std::size_t i = 0; i < lanes.size(); ++i) {
      lanes[i]->state = LaneState::kQueued;
      expected += mean_handler_seconds * static_cast<double>(lanes[i]->waiting());
      const bool last = i + 1 == lanes.size();
      if (!last && expected < kMinTaskSeconds) continue;
      if (i == first) {
        submit_or_buffer_locked(lanes[i]);
      } else {
        std::vector<std::shared_ptr<Lane>> group(
            lanes.begin() + static_cast<std::ptrdiff_t>(first),
            lanes.begin() + static_cast<std::ptrdiff_t>(i + 1));
        auto self = shared_from_this();
        // Behind the pending buffer (FIFO), or refused: each lane waits there on its own.
        if (!pending.empty() || !pool.try_submit([self, group] { self->run_lanes(group); })) {
          for (const auto& lane : group) submit_or_buffer_locked(lane);
        }
      }
      first = i + 1;
      expected = 0;
    }
    lanes.clear();
  }

  // Queues a lane that has messages to run (state kQueued): to the pool, or behind the pending
  // buffer (FIFO: nothing overtakes what the pool refused earlier).
  void submit_or_buffer_locked(const std::shared_ptr<Lane>& lane) {
    lane->state = LaneState::kQueued;
    if (pending.empty() && submit_locked(lane)) return;
    pending.push_back(lane);
    max_pending_seen = std::max<int64_t>(max_pending_seen, static_cast<int64_t>(pending.size()));
  }

  void drain_pending_locked() {
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

  void release_locked(PartitionState& part, int64_t n) {
    if (n == 0) return;
    part.unfinished -= n;
    if (!part.detached) unfinished -= n;
    if (part.draining) drained_cv.notify_all();
    if (room_waiter && unfinished <= resume_unfinished) room_cv.notify_one();
  }

  // Drops the messages of a lane that no run holds: its inbox, and unless a worker runs it now,
  // the rest of its running batch. Returns how many.
  int64_t drop_lane_locked(Lane& lane) {
    auto n = static_cast<int64_t>(lane.inbox.size());
    lane.inbox.clear();
    if (lane.state != LaneState::kRunning) {
      n += static_cast<int64_t>(lane.running.size() - lane.next);
      lane.next = lane.completed = lane.running.size();
    }
    release_locked(*lane.part, n);
    dropped += static_cast<uint64_t>(n);
    return n;
  }

  // Completes in the tracker what the lane's current run has finished so far.
  void flush_lane_locked(Lane& lane) {
    const std::size_t done = lane.done.load(std::memory_order_acquire);
    for (std::size_t i = lane.completed; i < done; ++i) {
      lane.part->tracker.complete(lane.running.messages[i].offset);
    }
    lane.completed = std::max(lane.completed, done);
  }

  // Before reading a tracker's commit offset: what runs in progress have finished counts.
  void flush_running_locked() {
    for (Lane* lane : running_lanes) flush_lane_locked(*lane);
  }

  // An idle lane with nothing left is unlisted (ordered lanes; chunks just die); its buffers
  // are kept for new lanes.
  void forget_lane_locked(Lane& lane) {
    if (lane.ordered) {
      auto it = lane.part->lanes.find(lane.key);
      if (it != lane.part->lanes.end() && it->second.get() == &lane) lane.part->lanes.erase(it);
    }
    recycle_locked(lane.inbox);
    lane.running.clear();
    lane.next = lane.completed = 0;
    lane.done.store(0, std::memory_order_relaxed);
    recycle_locked(lane.running);
  }

  void recycle_locked(MessageBatch& batch) {
    if (spare_batches.size() >= kMaxSpareBatches || !batch.empty() ||
        batch.messages.capacity() == 0 || batch.messages.capacity() > kMaxSpareBatchMessages ||
        batch.bytes.capacity() > kMaxSpareBatchBytes) {
      return;
    }
    spare_batches.push_back(std::move(batch));
    batch.clear();  // (a moved-from vector/string is valid but unspecified)
  }

  MessageBatch spare_batch_locked() {
    if (spare_batches.empty()) return {};
    MessageBatch b = std::move(spare_batches.back());
    spare_batches.pop_back();
    return b;
  }

  // A task shared by several lanes runs them one after another; should they take longer than
  // expected (the handler slowed down), the lanes not started by kRunBudgetSeconds get pool
  // tasks of their own, so that other workers can take them.
  void run_lanes(const std::vector<std::shared_ptr<Lane>>& lanes) {
    const double start = clock.now();
    for (std::size_t i = 0; i < lanes.size(); ++i) {
      if (i > 0 && clock.now() - start >= kRunBudgetSeconds) {
        std::lock_guard<std::mutex> lock(mu);
        for (; i < lanes.size(); ++i) submit_or_buffer_locked(lanes[i]);
        return;
      }
      run_lane(lanes[i]);
    }
  }

  // One pool task: runs up to kMaxRunMessages of a lane (kRunBudgetSeconds), then completes
  // them under the lock in one go and queues the lane again if it has more.
  void run_lane(const std::shared_ptr<Lane>& lane_ptr) {
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
      running_lanes.push_back(&lane);
      ++part.running;
      begin = lane.next;
      end = std::min(lane.running.size(), begin + kMaxRunMessages);
    }

    // Without the lock: running.messages[begin, end) stay as they are until this lane's next
    // run, and the byte buffer too.
    RunScratch& scratch = run_scratch;
    scratch.seconds.clear();
    scratch.age_buckets.clear();
    scratch.failures.clear();
    SourceMessage& msg = scratch.message;
    msg.topic = part.topic;
    msg.partition = part.partition;
    const char* bytes = lane.running.bytes.data();
    const double run_start = clock.now();
    double last = run_start;
    double longest = 0;     // longest timed group (a single message unless very fast)
    std::size_t group = 1;  // messages per clock read (see kTimeEachAboveSeconds)
    std::size_t in_group = 0;
    std::size_t i = begin;
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
      try {
        handler(msg);
      } catch (const std::exception& e) {
        scratch.failures.emplace_back(q.offset, e.what());
      } catch (...) {
        scratch.failures.emplace_back(q.offset, "non-standard exception");
      }
      ++i;
      lane.done.store(i, std::memory_order_release);  // committable even if the next one hangs
      ++in_group;
      if (in_group == group || i == end) {
        const double now = clock.now();
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
      const double now = clock.now();
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
        scratch.age_buckets.push_back(
            AgeHistogram::index_of(static_cast<double>(now_ms - ts) / 1e3));
      }
    }

    {
      std::lock_guard<std::mutex> lock(mu);
      --part.running;
      running_lanes.erase(std::find(running_lanes.begin(), running_lanes.end(), &lane));
      flush_lane_locked(lane);
      lane.next = i;
      const auto ran = static_cast<int64_t>(i - begin);
      const auto n_failed = static_cast<uint64_t>(scratch.failures.size());
      release_locked(part, ran);
      processed += static_cast<uint64_t>(ran) - n_failed;
      for (const auto& [offset, error] : scratch.failures) {
        ++failed;
        if (failed <= 10 || failed % 1000 == 0) {
          spdlog::warn("kafka {}@{}: handler failed ({} failures so far): {}",
                       partition_name(part.topic, part.partition), offset, failed, error);
        }
      }
      max_handler_seconds = std::max(max_handler_seconds, longest);
      if (ran > 0) {  // moving mean, weighted by messages (a run of 512 counts fully)
        const double run_mean = (last - run_start) / static_cast<double>(ran);
        const double weight = std::min(1.0, static_cast<double>(ran) / kMaxRunMessages);
        mean_handler_seconds += weight * (run_mean - mean_handler_seconds);
      }
      for (const int b : scratch.age_buckets) ages.add_index(b);
      lane.state = LaneState::kIdle;
      if (closed.load(std::memory_order_relaxed) || part.revoked.load(std::memory_order_relaxed)) {
        drop_lane_locked(lane);
        forget_lane_locked(lane);
      } else if (lane.waiting() > 0) {
        submit_or_buffer_locked(lane_ptr);
      } else {
        forget_lane_locked(lane);
      }
      drain_pending_locked();
    }
    // Per-message run times into the pool's latency histogram (instead of this task's).
    pool.record_items(scratch.seconds, scratch.failures.size());
  }

  // -------------------------------------------------------------------------------------------
  // Poll thread: dispatch

  // Dispatch of one poll, in two steps so that the lock is held briefly:
  //  1. stage_batch (poll thread, no lock): sorts the messages into groups, one per lane they
  //     go to, copying keys and values into the groups' buffers; filters messages that are not
  //     ours, refused (paused) or duplicates, and finds gaps. It reads only state that the poll
  //     thread alone writes (the assignment, pause flags, the trackers' next offsets).
  //  2. dispatch_staged_locked (under mu): records the offsets in the trackers (in offset
  //     order), hands each group's buffers to its lane (a swap when the lane's inbox is empty),
  //     and queues each lane that was idle, once.
  void stage_batch(const std::vector<rd_kafka_message_t*>& batch, std::vector<Gap>& gaps) {
    DispatchStaging& st = staging;
    st.reset();
    std::size_t n_messages = 0;
    for (const rd_kafka_message_t* m : batch) n_messages += m->err == RD_KAFKA_RESP_ERR_NO_ERROR;
    // Chunks (unordered messages) are split so that every worker gets some.
    const std::size_t workers = static_cast<std::size_t>(std::max(1, pool.size()));
    const std::size_t chunk_limit =
        std::clamp<std::size_t>((n_messages + workers - 1) / workers, 1, kMaxRunMessages);
    const rd_kafka_topic_t* last_rkt = nullptr;
    int32_t last_partition = -1;
    StagedPartition* sp = nullptr;
    std::size_t last_group = 0;  // groups index + 1 of the previous message's group; 0: none
    for (const rd_kafka_message_t* m : batch) {
      if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
      if (m->rkt != last_rkt || m->partition != last_partition) {
        last_rkt = m->rkt;
        last_partition = m->partition;
        last_group = 0;
        sp = nullptr;
        auto it = partitions.find({rd_kafka_topic_name(m->rkt), m->partition});
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
                      partition_name(rd_kafka_topic_name(m->rkt), m->partition), m->offset);
        continue;
      }
      const PartitionState& part = *sp->part;
      if (part.paused || paused_now) {
        // Paused (or not yet pausable, see update_pause_state) but a message arrived: do not
        // take it nor any later one of this partition; pause (again), and fetch again from the
        // first refused offset when resuming (wake_fetchers seeks there).
        ++sp->refused;
        if (sp->refused_from < 0 || m->offset < sp->refused_from) sp->refused_from = m->offset;
        continue;
      }
      if (sp->next >= 0 && m->offset < sp->next) {
        ++sp->duplicates;
        continue;
      }
      if (sp->next >= 0 && m->offset > sp->next) gaps.push_back(Gap{sp->part, sp->next, m->offset});
      sp->next = m->offset + 1;
      sp->offsets.push_back(m->offset);
      sp->bytes += m->len + m->key_len;

      const bool has_key = m->key != nullptr;
      std::size_t g = 0;  // groups index + 1
      if (ordering == Ordering::kPartition || (ordering == Ordering::kKey && has_key)) {
        const std::string_view key =
            ordering == Ordering::kPartition
                ? std::string_view()
                : std::string_view(static_cast<const char*>(m->key), m->key_len);
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
      rd_kafka_timestamp_type_t ts_type;
      st.groups[g - 1].batch.append(m, rd_kafka_message_timestamp(m, &ts_type));
    }
  }

  void dispatch_staged_locked() {
    DispatchStaging& st = staging;
    for (std::size_t i = 0; i < st.n_parts; ++i) {
      StagedPartition& sp = st.parts[i];
      PartitionState& part = *sp.part;
      part.started = true;  // a message arrived: librdkafka has started its fetcher
      if (sp.refused > 0) {
        refused_while_paused += sp.refused;
        if (part.refetch_from < 0 || sp.refused_from < part.refetch_from) {
          part.refetch_from = sp.refused_from;
        }
        part.repause = true;
      }
      duplicates += sp.duplicates;
      for (const int64_t offset : sp.offsets) part.tracker.dispatch(offset);
      const auto n = static_cast<int64_t>(sp.offsets.size());
      part.unfinished += n;
      unfinished += n;
      consumed += static_cast<uint64_t>(n);
      consumed_bytes += sp.bytes;
    }
    max_unfinished_seen = std::max(max_unfinished_seen, unfinished);
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

  // Records below the log start offset expired before they were consumed (see header).
  void check_gap(const Gap& g) {
    int64_t low = -1, high = -1;
    rd_kafka_resp_err_t err =
        rd_kafka_get_watermark_offsets(rk, g.part->topic.c_str(), g.part->partition, &low, &high);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR || low < 0) {
      err = rd_kafka_query_watermark_offsets(rk, g.part->topic.c_str(), g.part->partition, &low,
                                             &high, kRefreshQueryMaxMs);
    }
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR || low < 0) {
      spdlog::warn(
          "kafka {}: offsets {}..{} were skipped and the log start offset could not be read "
          "({}): cannot tell retention loss from compaction; not counted",
          partition_name(g.part->topic, g.part->partition), g.expected, g.offset - 1,
          rd_kafka_err2str(err));
      return;
    }
    const int64_t lost_end = std::min(g.offset, low);
    std::lock_guard<std::mutex> lock(mu);
    g.part->low = std::max(g.part->low, low);
    if (high >= 0) g.part->high = std::max(g.part->high, high);
    if (lost_end <= g.expected) return;  // a gap above the log start: compaction, markers
    const int64_t lost = lost_end - g.expected;
    lost_to_retention += static_cast<uint64_t>(lost);
    spdlog::warn(
        "kafka {}: {} records (offsets {}..{}) expired by retention before they were consumed "
        "(log start is now {}); continuing from offset {}",
        partition_name(g.part->topic, g.part->partition), lost, g.expected, lost_end - 1, low,
        g.offset);
  }

  void handle_event(const rd_kafka_message_t* m) {
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return;
    ++error_events;
    const std::string where =
        m->rkt != nullptr ? partition_name(rd_kafka_topic_name(m->rkt), m->partition) : "consumer";
    if (m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET) {
      // Only with auto.offset.reset=error: librdkafka stops the partition. Count what expired.
      spdlog::error(
          "kafka {}: offset {} is out of range and auto.offset.reset=error: partition stopped "
          "({})",
          where, m->offset, rd_kafka_message_errstr(m));
      if (m->rkt != nullptr && m->offset >= 0) {
        int64_t low = -1, high = -1;
        if (rd_kafka_query_watermark_offsets(rk, rd_kafka_topic_name(m->rkt), m->partition, &low,
                                             &high,
                                             kRefreshQueryMaxMs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
            low > m->offset) {
          std::lock_guard<std::mutex> lock(mu);
          lost_to_retention += static_cast<uint64_t>(low - m->offset);
          spdlog::warn("kafka {}: {} records (offsets {}..{}) expired by retention", where,
                       low - m->offset, m->offset, low - 1);
        }
      }
      return;
    }
    char fatal[512];
    if (rd_kafka_fatal_error(rk, fatal, sizeof(fatal)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      spdlog::error("kafka: fatal consumer error: {}", fatal);
      return;
    }
    if (error_events <= 20 || error_events % 1000 == 0) {
      spdlog::warn("kafka {}: {} ({} consumer errors so far)", where, rd_kafka_message_errstr(m),
                   error_events);
    }
  }

  // -------------------------------------------------------------------------------------------
  // Poll thread: backpressure, commits

  void update_pause_state() {
    const bool pool_backpressure = pool.backpressure();
    std::vector<std::shared_ptr<PartitionState>> change, refetch;
    bool want;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!backpressure_paused && (pool_backpressure || unfinished >= max_unfinished)) {
        backpressure_paused = true;
      } else if (backpressure_paused && !pool_backpressure && unfinished <= resume_unfinished) {
        backpressure_paused = false;
      }
      want = want_paused();
      if (want != paused_now) {
        paused_now = want;
        if (want) {
          ++pauses;
        } else {
          ++resumes;
        }
      }
      // Only partitions whose fetcher has started (a message arrived) are paused or resumed:
      // librdkafka 2.0 drops whichever of two racing partition ops got the older version
      // barrier, so a pause issued while it is still starting a fetcher after an assignment
      // could be lost (and leak messages) or could cancel the start (a stall). A partition
      // not started yet that delivers while a pause is wanted has that message refused
      // (stage_batch) and is paused right after.
      for (auto& [key, part] : partitions) {
        if (part->revoked || !part->started) continue;
        if (part->paused != want || (want && part->repause)) {
          change.push_back(part);
        } else if (!want && part->refetch_from >= 0) {
          refetch.push_back(part);  // refused while its pause had failed: fetch them again
        }
      }
    }
    if (!change.empty()) set_paused(change, want);  // a resume also seeks (wake_fetchers)
    if (!refetch.empty()) wake_fetchers(refetch);
  }

  bool want_paused() const {
    return backpressure_paused || operator_paused.load() || stop_requested.load();
  }

  // Pauses or resumes these partitions in librdkafka and records the outcome.
  void set_paused(const std::vector<std::shared_ptr<PartitionState>>& parts, bool pause) {
    rd_kafka_topic_partition_list_t* list =
        rd_kafka_topic_partition_list_new(static_cast<int>(parts.size()));
    for (const auto& p : parts)
      rd_kafka_topic_partition_list_add(list, p->topic.c_str(), p->partition);
    const rd_kafka_resp_err_t err =
        pause ? rd_kafka_pause_partitions(rk, list) : rd_kafka_resume_partitions(rk, list);
    {
      std::lock_guard<std::mutex> lock(mu);
      for (int i = 0; i < list->cnt; ++i) {
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR && list->elems[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
          parts[static_cast<std::size_t>(i)]->paused = pause;
          parts[static_cast<std::size_t>(i)]->repause = false;
        }
      }
    }
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      spdlog::warn("kafka: {} partitions failed: {}", pause ? "pausing" : "resuming",
                   rd_kafka_err2str(err));
    }
    rd_kafka_topic_partition_list_destroy(list);
    if (!pause && err == RD_KAFKA_RESP_ERR_NO_ERROR) wake_fetchers(parts);
  }

  // librdkafka 2.0 does not wake a broker thread when a partition is resumed: with every
  // partition paused that thread sleeps up to 1 s, so fetching would restart up to 1 s late.
  // A seek to the position the fetcher resumes from anyway (one past the last message handed
  // to us) is a no-op for the data but does wake the broker thread.
  void wake_fetchers(const std::vector<std::shared_ptr<PartitionState>>& parts) {
    rd_kafka_topic_partition_list_t* list = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& p : parts) {
        const int64_t next =
            p->tracker.next_offset() >= 0 ? p->tracker.next_offset() : p->refetch_from;
        p->refetch_from = -1;
        if (next < 0 || p->revoked) continue;
        if (list == nullptr)
          list = rd_kafka_topic_partition_list_new(static_cast<int>(parts.size()));
        rd_kafka_topic_partition_list_add(list, p->topic.c_str(), p->partition)->offset = next;
      }
    }
    if (list == nullptr) return;
    if (rd_kafka_error_t* e = rd_kafka_seek_partitions(rk, list, 0 /* async */)) {
      spdlog::debug("kafka: seek after resume failed: {}", rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
    }
    rd_kafka_topic_partition_list_destroy(list);
  }

  // Builds the list of offsets worth committing for these partitions (nullptr if none).
  rd_kafka_topic_partition_list_t* commit_list_locked(
      const std::vector<std::shared_ptr<PartitionState>>& parts) {
    flush_running_locked();
    rd_kafka_topic_partition_list_t* list = nullptr;
    for (const auto& p : parts) {
      const int64_t offset = p->tracker.committable();
      if (offset < 0 || offset <= p->committed) continue;
      if (list == nullptr) list = rd_kafka_topic_partition_list_new(static_cast<int>(parts.size()));
      rd_kafka_topic_partition_list_add(list, p->topic.c_str(), p->partition)->offset = offset;
    }
    return list;
  }

  std::vector<std::shared_ptr<PartitionState>> assigned_locked() const {
    std::vector<std::shared_ptr<PartitionState>> out;
    out.reserve(partitions.size());
    for (const auto& [key, part] : partitions) out.push_back(part);
    return out;
  }

  // Async commit of every assigned partition's done prefix; the result arrives through
  // on_commit_result from a later consumer_poll.
  void commit_async() {
    rd_kafka_topic_partition_list_t* list;
    {
      std::lock_guard<std::mutex> lock(mu);
      list = commit_list_locked(assigned_locked());
    }
    if (list == nullptr) return;
    const rd_kafka_resp_err_t err = rd_kafka_commit(rk, list, 1);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::lock_guard<std::mutex> lock(mu);
      ++commit_failures;
      spdlog::warn("kafka: async commit failed to start: {}", rd_kafka_err2str(err));
    }
    rd_kafka_topic_partition_list_destroy(list);
  }

  // Sync commit; on_commit_result runs inside this call.
  void commit_sync(const std::vector<std::shared_ptr<PartitionState>>& parts) {
    rd_kafka_topic_partition_list_t* list;
    {
      std::lock_guard<std::mutex> lock(mu);
      list = commit_list_locked(parts);
    }
    if (list == nullptr) return;
    const rd_kafka_resp_err_t err =
        rd_kafka_commit_queue(rk, list, nullptr, &Core::commit_cb, this);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      spdlog::warn("kafka: sync commit of {} partitions failed: {}", list->cnt,
                   rd_kafka_err2str(err));
    }
    rd_kafka_topic_partition_list_destroy(list);
  }

  void on_commit_result(rd_kafka_resp_err_t err, const rd_kafka_topic_partition_list_t* offsets) {
    if (err == RD_KAFKA_RESP_ERR__NO_OFFSET) return;  // nothing to commit
    std::lock_guard<std::mutex> lock(mu);
    bool any_failed = err != RD_KAFKA_RESP_ERR_NO_ERROR;
    for (int i = 0; offsets != nullptr && i < offsets->cnt; ++i) {
      const rd_kafka_topic_partition_t& e = offsets->elems[i];
      if (e.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        any_failed = true;
        continue;
      }
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR || e.offset < 0) continue;
      auto it = partitions.find({e.topic, e.partition});
      if (it != partitions.end()) it->second->committed = std::max(it->second->committed, e.offset);
    }
    if (any_failed) {
      ++commit_failures;
      if (commit_failures <= 20 || commit_failures % 100 == 0) {
        spdlog::warn(
            "kafka: offset commit failed ({} failures so far): {}", commit_failures,
            rd_kafka_err2str(err != RD_KAFKA_RESP_ERR_NO_ERROR ? err : RD_KAFKA_RESP_ERR_UNKNOWN));
      }
    } else {
      ++commits;
    }
  }

  static void commit_cb(rd_kafka_t*, rd_kafka_resp_err_t err,
                        rd_kafka_topic_partition_list_t* offsets, void* opaque) {
    static_cast<Core*>(opaque)->on_commit_result(err, offsets);
  }

  // -------------------------------------------------------------------------------------------
  // Poll thread: rebalance

  static void rebalance_cb(rd_kafka_t*, rd_kafka_resp_err_t err,
                           rd_kafka_topic_partition_list_t* parts, void* opaque) {
    static_cast<Core*>(opaque)->on_rebalance(err, parts);
  }

  void on_rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts) {
    const bool cooperative = std::strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      on_assign(parts, cooperative);
    } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
      on_revoke(parts, cooperative, rd_kafka_assignment_lost(rk) != 0);
    } else {
      spdlog::error("kafka: rebalance failed: {}; dropping the assignment", rd_kafka_err2str(err));
      on_revoke(parts, cooperative, true);
    }
  }

  // Called inside rd_kafka_consumer_poll. Does not block: the committed offsets are read
  // right after the poll returns (resolve_committed), before any message is dispatched. (A
  // blocking rd_kafka_committed() inside the callback can stall for its whole timeout while
  // the group is rebalancing, and the group then rebalances again.) The new partitions are not
  // paused here either; see update_pause_state.
  void on_assign(rd_kafka_topic_partition_list_t* parts, bool cooperative) {
    std::string names;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (int i = 0; i < parts->cnt; ++i) {
        const rd_kafka_topic_partition_t& e = parts->elems[i];
        auto part = std::make_shared<PartitionState>(e.topic, e.partition);
        auto& slot = partitions[{part->topic, part->partition}];
        if (slot) {  // should not happen (revoked first); give the old state up
          give_up_locked(*slot);
          detach_locked(*slot);
        }
        slot = part;
        awaiting_committed.push_back(part);
        names += (names.empty() ? "" : ", ") + partition_name(part->topic, part->partition);
      }
      assigned.store(static_cast<int>(partitions.size()));
    }
    if (cooperative) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_assign(rk, parts)) {
        spdlog::error("kafka: incremental assign failed: {}", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
      }
    } else {
      const rd_kafka_resp_err_t err = rd_kafka_assign(rk, parts);
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        spdlog::error("kafka: assign failed: {}", rd_kafka_err2str(err));
    }
    spdlog::info("kafka: assigned {} partitions: {}", parts->cnt, names);
  }

  // Poll thread, after a poll that assigned partitions and before dispatching: reads their
  // committed offsets (the expected next offset for the retention check, and the lag base).
  void resolve_committed() {
    std::vector<std::shared_ptr<PartitionState>> parts;
    parts.swap(awaiting_committed);
    rd_kafka_topic_partition_list_t* list =
        rd_kafka_topic_partition_list_new(static_cast<int>(parts.size()));
    for (const auto& p : parts)
      rd_kafka_topic_partition_list_add(list, p->topic.c_str(), p->partition);
    const rd_kafka_resp_err_t err = rd_kafka_committed(rk, list, kCommittedQueryMs);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      spdlog::warn(
          "kafka: reading committed offsets failed ({}); records that expired before "
          "this assignment cannot be counted, and lag counts from the log start until "
          "the first commit",
          rd_kafka_err2str(err));
    }
    std::string names;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (int i = 0; i < list->cnt; ++i) {
        const rd_kafka_topic_partition_t& e = list->elems[i];
        PartitionState& p = *parts[static_cast<std::size_t>(i)];
        const int64_t offset = err == RD_KAFKA_RESP_ERR_NO_ERROR &&
                                       e.err == RD_KAFKA_RESP_ERR_NO_ERROR && e.offset >= 0
                                   ? e.offset
                                   : -1;
        if (p.revoked || p.tracker.next_offset() >= 0) continue;  // (nothing dispatched yet)
        p.committed = offset;
        p.tracker.reset(offset);
        if (offset >= 0) {
          names += (names.empty() ? "" : ", ") + partition_name(p.topic, p.partition) + "@" +
                   std::to_string(offset);
        }
      }
    }
    rd_kafka_topic_partition_list_destroy(list);
    if (!names.empty()) spdlog::info("kafka: committed offsets: {}", names);
  }

  // Removes a partition from the unfinished count (its leftovers are no longer ours).
  void detach_locked(PartitionState& part) {
    if (part.detached) return;
    part.detached = true;
    unfinished -= part.unfinished;
  }

  // Gives up what a partition still holds that no worker runs now (lanes waiting, queued or
  // pending), and makes runs in progress stop before their next message. Returns how many
  // messages were dropped here. (Chunks queued in the pool drop theirs when they run.)
  int64_t give_up_locked(PartitionState& part) {
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

  void on_revoke(rd_kafka_topic_partition_list_t* parts, bool cooperative, bool lost) {
    std::vector<std::shared_ptr<PartitionState>> revoked;
    {
      std::unique_lock<std::mutex> lock(mu);
      for (int i = 0; i < parts->cnt; ++i) {
        auto it = partitions.find({parts->elems[i].topic, parts->elems[i].partition});
        if (it == partitions.end()) continue;
        it->second->draining = true;
        revoked.push_back(it->second);
      }
      // Let what was consumed finish (bounded), unless the partitions are lost already.
      SteadyTime deadline =
          steady_after(lost || closed.load() ? 0.0 : config.revoke_timeout_seconds);
      if (stop_requested.load(std::memory_order_acquire))
        deadline = std::min(deadline, stop_deadline);
      auto all_done = [&] {
        return std::all_of(revoked.begin(), revoked.end(),
                           [](const auto& p) { return p->unfinished == 0; });
      };
      while (!all_done() && steady_now() < deadline) {
        drained_cv.wait_for(lock, std::chrono::milliseconds(5));
        drain_pending_locked();
      }
      int64_t given_up = 0, still_running = 0;
      for (auto& p : revoked) {
        still_running += p->unfinished;
        given_up += give_up_locked(*p);
      }
      still_running -= given_up;
      if (given_up > 0 || still_running > 0) {
        spdlog::warn(
            "kafka: revoking {} partitions{}: {} consumed messages dropped before reaching a "
            "worker, {} still queued or running after the timeout; they were not committed and "
            "will be delivered again",
            revoked.size(), lost ? " (lost)" : "", given_up, still_running);
      }
    }
    if (!lost) commit_sync(revoked);
    // librdkafka keeps an application pause on a partition after it is unassigned (librdkafka
    // issue #1849): were this consumer assigned the partition again, it would never fetch it
    // (and, no message arriving, update_pause_state would never resume it). So resume what we
    // paused before letting it go.
    std::vector<std::shared_ptr<PartitionState>> paused_parts;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& p : revoked) {
        if (p->paused) paused_parts.push_back(p);
      }
    }
    if (!paused_parts.empty()) set_paused(paused_parts, false);  // (no seek: they are revoked)
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& p : revoked) {
        detach_locked(*p);
        partitions.erase({p->topic, p->partition});
      }
      assigned.store(static_cast<int>(partitions.size()));
    }
    if (cooperative) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_unassign(rk, parts)) {
        spdlog::error("kafka: incremental unassign failed: {}", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
      }
    } else {
      rd_kafka_assign(rk, nullptr);
    }
    spdlog::info("kafka: revoked {} partitions{}", parts->cnt, lost ? " (assignment lost)" : "");
  }

  // -------------------------------------------------------------------------------------------
  // Poll thread: main loop

  void runtime_checks() {
    double worst = 0;
    uint64_t n = 0, bytes = 0;
    int parts = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      worst = max_handler_seconds;
      n = consumed;
      bytes = consumed_bytes;
      parts = static_cast<int>(partitions.size());
    }
    if (!warned_handler_time && worst > max_poll_interval_seconds) {
      warned_handler_time = true;
      spdlog::warn(
          "kafka: a handler ran {:.1f} s, longer than max.poll.interval.ms ({:.0f} ms). The poll "
          "loop does not wait for handlers, but revocation waits for them (at most {} s)",
          worst, max_poll_interval_seconds * 1000, config.revoke_timeout_seconds);
    }
    if (!warned_queue_capacity && n >= kQueueCheckAfterMessages && parts > 0) {
      warned_queue_capacity = true;
      const double avg = std::max(1.0, static_cast<double>(bytes) / static_cast<double>(n));
      const double fetch_bytes = std::min<double>(
          static_cast<double>(fetch_max_bytes),
          static_cast<double>(parts) * static_cast<double>(max_partition_fetch_bytes));
      const double per_fetch = fetch_bytes / avg;
      if (static_cast<double>(max_unfinished) < per_fetch) {
        spdlog::warn(
            "kafka: max_unfinished ({} messages; default 2 x the pool queue capacity) is smaller "
            "than one fetch (~{:.0f} messages of ~{:.0f} bytes; fetch.max.bytes {}, "
            "max.partition.fetch.bytes {} x {} partitions): when the workers fall behind, "
            "fetching pauses and librdkafka drops what it prefetched. Raise kafka.max_unfinished "
            "or the queue capacity, or lower the fetch sizes",
            max_unfinished, per_fetch, avg, fetch_max_bytes, max_partition_fetch_bytes, parts);
      }
    }
  }

  // Backpressure grace (see kBackpressureGraceMs): when fetching is not paused yet but the
  // workers are behind, waits at most the grace for unfinished <= resume_unfinished and no
  // pool backpressure. Requires mu (held through `lock`).
  void await_room_locked(std::unique_lock<std::mutex>& lock) {
    auto behind = [&] { return unfinished >= max_unfinished || pool.backpressure(); };
    if (backpressure_paused || paused_now || !behind()) return;
    auto caught_up = [&] {
      return (unfinished <= resume_unfinished && !pool.backpressure()) ||
             stop_requested.load(std::memory_order_relaxed);
    };
    const SteadyTime deadline = steady_now() + std::chrono::milliseconds(kBackpressureGraceMs);
    room_waiter = true;
    // Short slices: the pool's backpressure flips without notifying room_cv.
    while (!caught_up() && steady_now() < deadline) {
      room_cv.wait_for(lock, std::chrono::milliseconds(1));
      drain_pending_locked();
    }
    room_waiter = false;
  }

  void poll_loop() {
    double next_commit = clock.now() + config.commit_interval_seconds;
    std::vector<rd_kafka_message_t*> batch;
    batch.reserve(kMaxBatch);
    std::vector<Gap> gaps;
    while (!stop_requested.load(std::memory_order_acquire)) {
      bool waiting;
      int64_t room;
      {
        std::unique_lock<std::mutex> lock(mu);
        await_room_locked(lock);
        waiting = !pending.empty();
        room = max_unfinished - unfinished;
      }
      // Take no more than the room left below max_unfinished (at least one message per call:
      // a message that consumer_poll returns is always dispatched; pausing stops the rest).
      const auto limit = static_cast<std::size_t>(std::clamp<int64_t>(room, 1, kMaxBatch));
      poll_batch(waiting ? kBusyPollMs : kIdlePollMs, limit, batch);
      if (!awaiting_committed.empty()) resolve_committed();
      if (!batch.empty()) {
        stage_batch(batch, gaps);
        {
          std::lock_guard<std::mutex> lock(mu);
          dispatch_staged_locked();
        }
        for (rd_kafka_message_t* m : batch) {
          if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) handle_event(m);
          rd_kafka_message_destroy(m);
        }
        batch.clear();
        for (const Gap& g : gaps) check_gap(g);
        gaps.clear();
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        drain_pending_locked();
      }
      update_pause_state();
      const double now = clock.now();
      if (now >= next_commit) {
        commit_async();
        next_commit = now + config.commit_interval_seconds;
      }
      runtime_checks();
    }
    shutdown_drain();
  }

  // Takes up to `limit` messages (and serves librdkafka's callbacks). While messages stream in
  // (the previous poll took at least kStreamingBatch), an empty queue first gets a short nap
  // (kStreamingNapMicros) before the blocking wait: a poll thread that waits on the queue is
  // woken by librdkafka's fetcher thread for nearly every message it enqueues, and the two then
  // contend for the queue's lock message by message; after the nap it takes a whole run.
  void poll_batch(int timeout_ms, std::size_t limit, std::vector<rd_kafka_message_t*>& batch) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 0);
    if (m == nullptr && streaming) {
      std::this_thread::sleep_for(std::chrono::microseconds(kStreamingNapMicros));
      m = rd_kafka_consumer_poll(rk, 0);
    }
    if (m == nullptr) m = rd_kafka_consumer_poll(rk, timeout_ms);
    while (m != nullptr) {
      batch.push_back(m);
      // After an assignment, read the committed offsets before taking more messages.
      if (batch.size() >= limit || !awaiting_committed.empty()) break;
      m = rd_kafka_consumer_poll(rk, 0);
    }
    streaming = batch.size() >= std::min<std::size_t>(limit, kStreamingBatch);
  }

  // After stop(): stop fetching, let consumed messages finish until the deadline, give up the
  // rest, commit what is done.
  void shutdown_drain() {
    update_pause_state();  // stop_requested: pauses everything
    while (steady_now() < stop_deadline) {
      {
        std::lock_guard<std::mutex> lock(mu);
        drain_pending_locked();
        if (unfinished == 0) break;
      }
      // Keep serving librdkafka (rebalances, commit results); drop late messages undispatched.
      if (rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 10)) {
        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) handle_event(m);
        rd_kafka_message_destroy(m);
      }
    }
    std::vector<std::shared_ptr<PartitionState>> parts;
    {
      std::lock_guard<std::mutex> lock(mu);
      closed.store(true, std::memory_order_relaxed);
      int64_t given_up = 0, left = unfinished;
      for (auto& [key, part] : partitions) given_up += give_up_locked(*part);
      for (auto& lane : pending) {  // (only partitions we no longer own)
        drop_lane_locked(*lane);
        lane->state = LaneState::kIdle;
      }
      pending.clear();
      if (left > 0) {
        spdlog::warn(
            "kafka: stop: {} consumed messages did not finish in time ({} dropped before reaching "
            "a worker); they were not committed and will be delivered again",
            left, given_up);
      }
      parts = assigned_locked();
    }
    commit_sync(parts);
  }
};

// -----------------------------------------------------------------------------------------------
// Config

KafkaSourceConfig KafkaSourceConfig::from_json(const nlohmann::json& j, const std::string& path) {
  KafkaSourceConfig c;
  JsonObjectReader r(j, path);
  r.read("bootstrap_servers", c.bootstrap_servers);
  if (const nlohmann::json* topics = r.raw("topics")) {
    const std::string tp = r.path_of("topics");
    if (!topics->is_array() || topics->empty()) {
      throw ConfigError(tp, "must be a non-empty array of topic names");
    }
    c.topics.clear();
    for (std::size_t i = 0; i < topics->size(); ++i) {
      const nlohmann::json& t = (*topics)[i];
      if (!t.is_string() || t.get<std::string>().empty()) {
        throw ConfigError(tp + "[" + std::to_string(i) + "]", "must be a non-empty string");
      }
      c.topics.push_back(t.get<std::string>());
    }
  }
  r.read("group_id", c.group_id);
  if (c.group_id.empty()) throw ConfigError(r.path_of("group_id"), "must not be empty");
  if (const nlohmann::json* props = r.raw("properties")) {
    const std::string pp = r.path_of("properties");
    if (!props->is_object()) throw ConfigError(pp, "must be an object of librdkafka properties");
    for (auto it = props->begin(); it != props->end(); ++it) {
      const nlohmann::json& v = it.value();
      std::string text;
      if (v.is_string()) {
        text = v.get<std::string>();
      } else if (v.is_boolean()) {
        text = v.get<bool>() ? "true" : "false";
      } else if (v.is_number_integer()) {
        text = v.dump();
      } else if (v.is_number_float()) {
        const double d = v.get<double>();
        text = d == std::floor(d) && std::fabs(d) < 1e15 ? std::to_string(static_cast<int64_t>(d))
                                                         : v.dump();
      } else {
        throw ConfigError(pp + "." + it.key(), "must be a string, number or boolean");
      }
      c.properties[it.key()] = text;
    }
  }
  r.read_enum("ordering", c.ordering, {"key", "partition", "unordered"});
  r.read("commit_interval_seconds", c.commit_interval_seconds, 0.001, 86400.0);
  r.read("revoke_timeout_seconds", c.revoke_timeout_seconds, 0.0, 3600.0);
  r.read("max_unfinished", c.max_unfinished, int64_t{0});
  r.finish();
  return c;
}

nlohmann::json KafkaSourceConfig::to_json() const {
  nlohmann::json props = nlohmann::json::object();
  for (const auto& [k, v] : properties) props[k] = v;
  return nlohmann::json{{"bootstrap_servers", bootstrap_servers},
                        {"topics", topics},
                        {"group_id", group_id},
                        {"properties", props},
                        {"ordering", ordering},
                        {"commit_interval_seconds", commit_interval_seconds},
                        {"revoke_timeout_seconds", revoke_timeout_seconds},
                        {"max_unfinished", max_unfinished}};
}

// -----------------------------------------------------------------------------------------------
// KafkaSource

namespace {

void log_cb(const rd_kafka_t*, int level, const char* fac, const char* buf) {
  // syslog levels: 0-3 error, 4 warning, 5-6 info, 7 debug.
  if (level <= 3) {
    spdlog::error("rdkafka [{}] {}", fac, buf);
  } else if (level == 4) {
    spdlog::warn("rdkafka [{}] {}", fac, buf);
  } else if (level <= 6) {
    spdlog::info("rdkafka [{}] {}", fac, buf);
  } else {
    spdlog::debug("rdkafka [{}] {}", fac, buf);
  }
}

void conf_set(rd_kafka_conf_t* conf, const std::string& name, const std::string& value,
              const std::string& path) {
  char err[512];
  if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
    throw ConfigError(path, err);
  }
}

std::string conf_get(rd_kafka_conf_t* conf, const char* name) {
  char buf[512];
  size_t size = sizeof(buf);
  if (rd_kafka_conf_get(conf, name, buf, &size) != RD_KAFKA_CONF_OK) return "";
  return buf;
}

int64_t conf_get_int(rd_kafka_conf_t* conf, const char* name, int64_t fallback) {
  const std::string s = conf_get(conf, name);
  try {
    return s.empty() ? fallback : std::stoll(s);
  } catch (const std::exception&) {
    return fallback;
  }
}

}  // namespace

KafkaSource::KafkaSource(KafkaSourceConfig config, WorkerPool& pool, MessageHandler handler,
                         const Clock& clock) {
  if (!handler) throw std::invalid_argument("KafkaSource: handler must not be empty");
  if (config.topics.empty()) throw ConfigError("kafka.topics", "must not be empty");
  if (!(config.commit_interval_seconds > 0)) {
    throw ConfigError("kafka.commit_interval_seconds", "must be > 0");
  }
  if (!(config.revoke_timeout_seconds >= 0)) {
    throw ConfigError("kafka.revoke_timeout_seconds", "must be >= 0");
  }
  if (config.max_unfinished < 0) throw ConfigError("kafka.max_unfinished", "must be >= 0");
  core_ = std::make_shared<Core>(std::move(config), pool, std::move(handler), clock);
  Core& c = *core_;
  const KafkaSourceConfig& cfg = c.config;

  c.conf = rd_kafka_conf_new();
  if (!cfg.bootstrap_servers.empty()) {
    conf_set(c.conf, "bootstrap.servers", cfg.bootstrap_servers, "kafka.bootstrap_servers");
  }
  conf_set(c.conf, "group.id", cfg.group_id, "kafka.group_id");
  conf_set(c.conf, "client.id", "lagpilot", "kafka.properties.client.id");
  conf_set(c.conf, "auto.offset.reset", "earliest", "kafka.properties.auto.offset.reset");
  // librdkafka 2.0 stops fetching a partition for a fixed 1 s once the consumer's prefetch
  // queue holds queued.min.messages (default 100000, counted over all partitions together) or
  // queued.max.messages.kbytes (64 MB). With small messages the count binds long before the
  // memory bound (100000 messages of 40 bytes are 4 MB), and a consumer that drains them in
  // 0.1 s then idles for 0.9 s. Raised so that the byte bound governs (1M messages of 64 bytes).
  conf_set(c.conf, "queued.min.messages", std::to_string(kQueuedMinMessages),
           "kafka.properties.queued.min.messages");
  for (const auto& [name, value] : cfg.properties) {
    conf_set(c.conf, name, value, "kafka.properties." + name);
  }
  auto user_auto_commit = cfg.properties.find("enable.auto.commit");
  if (user_auto_commit != cfg.properties.end() && user_auto_commit->second != "false") {
    spdlog::warn(
        "kafka.properties.enable.auto.commit=true ignored: lagpilot commits explicit "
        "offsets of finished messages (at-least-once)");
  }
  conf_set(c.conf, "enable.auto.commit", "false", "kafka.properties.enable.auto.commit");
  if (conf_get(c.conf, "bootstrap.servers").empty()) {
    throw ConfigError("kafka.bootstrap_servers", "must be set (or properties.bootstrap.servers)");
  }

  c.fetch_max_bytes = conf_get_int(c.conf, "fetch.max.bytes", c.fetch_max_bytes);
  c.max_partition_fetch_bytes =
      conf_get_int(c.conf, "max.partition.fetch.bytes", c.max_partition_fetch_bytes);
  c.max_poll_interval_seconds =
      static_cast<double>(conf_get_int(c.conf, "max.poll.interval.ms", 300000)) / 1000.0;
  if (c.fetch_max_bytes > kFetchMaxBytesWarnAbove) {
    spdlog::warn(
        "kafka: fetch.max.bytes is {} (above 50 MB): one fetch may hold more than the "
        "pool can queue, and pausing discards prefetched data",
        c.fetch_max_bytes);
  }
  if (cfg.revoke_timeout_seconds >= c.max_poll_interval_seconds) {
    spdlog::warn(
        "kafka: revoke_timeout_seconds ({}) is not below max.poll.interval.ms ({} ms): a "
        "slow revocation could get this consumer kicked out of the group",
        cfg.revoke_timeout_seconds, c.max_poll_interval_seconds * 1000);
  }
  const auto capacity = static_cast<int64_t>(pool.queue_capacity());
  c.max_unfinished =
      cfg.max_unfinished > 0 ? cfg.max_unfinished : std::max<int64_t>(2 * capacity, 2);
  c.resume_unfinished = c.max_unfinished / 5;

  rd_kafka_conf_set_opaque(c.conf, &c);
  rd_kafka_conf_set_log_cb(c.conf, &log_cb);
  rd_kafka_conf_set_rebalance_cb(c.conf, &Core::rebalance_cb);
  rd_kafka_conf_set_offset_commit_cb(c.conf, &Core::commit_cb);
}

KafkaSource::~KafkaSource() {
  if (started_ && !stopped_) stop(core_->config.revoke_timeout_seconds);
}

void KafkaSource::start() {
  if (started_) throw std::logic_error("KafkaSource::start called twice");
  Core& c = *core_;
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, c.conf, err, sizeof(err));
  if (rk == nullptr) throw std::runtime_error(std::string("kafka: creating the consumer: ") + err);
  c.conf = nullptr;  // owned by rk now
  c.rk = rk;
  rd_kafka_poll_set_consumer(rk);

  rd_kafka_topic_partition_list_t* topics =
      rd_kafka_topic_partition_list_new(static_cast<int>(c.config.topics.size()));
  for (const auto& t : c.config.topics) {
    rd_kafka_topic_partition_list_add(topics, t.c_str(), RD_KAFKA_PARTITION_UA);
  }
  const rd_kafka_resp_err_t serr = rd_kafka_subscribe(rk, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  if (serr != RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_destroy(rk);
    c.rk = nullptr;
    throw std::runtime_error(std::string("kafka: subscribing: ") + rd_kafka_err2str(serr));
  }
  started_ = true;
  std::string names;
  for (const auto& t : c.config.topics) names += (names.empty() ? "" : ",") + t;
  spdlog::info("kafka: consumer group {} subscribed to {} (ordering {})", c.config.group_id, names,
               c.config.ordering);
  auto core = core_;
  poll_thread_ = std::thread([core] {
    try {
      core->poll_loop();
    } catch (const std::exception& e) {
      // Nothing in the loop should throw; if it does, consumption stops loudly, not silently.
      spdlog::error("kafka: poll thread failed, consumption stopped: {}", e.what());
    }
  });
}

SourceStats KafkaSource::stats(bool refresh_watermarks) {
  Core& c = *core_;
  std::vector<std::shared_ptr<PartitionState>> parts;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    parts = c.assigned_locked();
  }
  std::vector<std::pair<int64_t, int64_t>> marks(parts.size(), {-1, -1});
  if (c.rk != nullptr && !stopped_) {
    const SteadyTime deadline = steady_after(kRefreshBudgetSeconds);
    bool query = refresh_watermarks;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      int64_t lo = -1, hi = -1;
      rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
      if (query) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady_now()).count();
        if (left > 0) {
          err = rd_kafka_query_watermark_offsets(
              c.rk, parts[i]->topic.c_str(), parts[i]->partition, &lo, &hi,
              static_cast<int>(std::min<int64_t>(left, kRefreshQueryMaxMs)));
        }
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) query = false;  // cached values for the rest
      }
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_get_watermark_offsets(c.rk, parts[i]->topic.c_str(), parts[i]->partition, &lo,
                                       &hi);
      }
      marks[i] = {lo, hi};
    }
  }

  SourceStats s;
  std::lock_guard<std::mutex> lock(c.mu);
  c.flush_running_locked();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    PartitionState& p = *parts[i];
    if (p.detached) continue;
    if (marks[i].first >= 0) p.low = marks[i].first;
    if (marks[i].second >= 0) p.high = marks[i].second;
    PartitionStatus st;
    st.topic = p.topic;
    st.partition = p.partition;
    st.low_watermark = p.low;
    st.committed = p.committed;
    st.done_offset = p.tracker.committable();
    // Messages seen prove the high watermark is at least one past them.
    st.high_watermark = std::max(p.high, p.tracker.next_offset());
    int64_t position = st.done_offset >= 0 ? st.done_offset : p.committed;
    if (position >= 0 && p.low >= 0 && position < p.low) {
      if (!p.expiry_warned) {
        p.expiry_warned = true;
        spdlog::warn(
            "kafka {}: position {} is below the log start offset {}: {} records expired "
            "before they were consumed (counted when fetching reaches them)",
            partition_name(p.topic, p.partition), position, p.low, p.low - position);
      }
    } else {
      p.expiry_warned = false;
    }
    if (position < 0 || (p.low >= 0 && position < p.low)) position = std::max<int64_t>(p.low, 0);
    st.lag = st.high_watermark >= 0 ? std::max<int64_t>(0, st.high_watermark - position) : 0;
    st.paused = p.paused;
    s.total_lag += st.lag;
    s.high_watermark_sum += std::max<int64_t>(0, st.high_watermark);
    s.partitions.push_back(std::move(st));
  }
  s.consumed = c.consumed;
  s.processed = c.processed;
  s.failed = c.failed;
  s.lost_to_retention = c.lost_to_retention;
  s.commits = c.commits;
  s.commit_failures = c.commit_failures;
  s.dropped = c.dropped;
  s.duplicates_skipped = c.duplicates;
  s.refused_while_paused = c.refused_while_paused;
  s.pauses = c.pauses;
  s.resumes = c.resumes;
  s.unfinished = c.unfinished;
  s.max_unfinished_seen = c.max_unfinished_seen;
  s.pending = static_cast<int64_t>(c.pending.size());
  s.max_pending_seen = c.max_pending_seen;
  s.max_unfinished = c.max_unfinished;
  s.record_age_p99_seconds = c.ages.quantile(0.99);
  c.ages.clear();
  s.max_handler_seconds = c.max_handler_seconds;
  s.paused = c.paused_now;
  s.assigned_partitions = static_cast<int>(s.partitions.size());
  return s;
}

void KafkaSource::pause_consumption() {
  core_->operator_paused.store(true);
}
void KafkaSource::resume_consumption() {
  core_->operator_paused.store(false);
}

bool KafkaSource::joined() const {
  return core_->assigned.load() > 0;
}

void KafkaSource::stop(double timeout_seconds) {
  if (!started_ || stopped_) {
    stopped_ = true;
    return;
  }
  stopped_ = true;
  Core& c = *core_;
  c.stop_deadline = steady_after(std::isfinite(timeout_seconds) ? timeout_seconds : 1e6);
  c.stop_requested.store(true, std::memory_order_release);
  // Wakes a poll thread blocked in rd_kafka_consumer_poll, so that stopping starts at once
  // rather than up to kIdlePollMs later (the longer the gap, the likelier the group is
  // rebalancing by the time we close, which librdkafka 2.0 handles badly).
  if (rd_kafka_queue_t* queue = rd_kafka_queue_get_consumer(c.rk)) {
    rd_kafka_queue_yield(queue);
    rd_kafka_queue_destroy(queue);
  }
  if (poll_thread_.joinable()) poll_thread_.join();
  // Leaves the group: the revoke callback runs here (nothing left to wait for; commits are
  // already done, so it commits nothing new).
  const rd_kafka_resp_err_t err = rd_kafka_consumer_close(c.rk);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    spdlog::warn("kafka: closing the consumer: {}", rd_kafka_err2str(err));
  }
  rd_kafka_t* rk = c.rk;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.rk = nullptr;
  }
  rd_kafka_destroy(rk);
  std::lock_guard<std::mutex> lock(c.mu);
  spdlog::info(
      "kafka: consumer closed: consumed {}, processed {}, failed {}, lost to retention "
      "{}, commits {} ({} failed)",
      c.consumed, c.processed, c.failed, c.lost_to_retention, c.commits, c.commit_failures);
}

}  // namespace lagpilot
