#pragma once
// The Kafka consumer that feeds the worker pool (librdkafka C API, consumer group).
//
// Algorithm.
//  * One poll thread calls rd_kafka_consumer_poll in a loop (blocking at most 50 ms) and never
//    waits on the handlers for more than 50 ms (see Backpressure), so a slow handler can never
//    breach max.poll.interval.ms. It takes up
//    to 1024 messages per iteration and dispatches them together: first without the lock it
//    sorts them into groups, one per lane, copying keys and values into the groups' buffers
//    (the librdkafka messages are released right after); then under the lock it records the
//    offsets and hands each group to its lane. While messages stream in, an empty queue gets a
//    0.3 ms nap before the blocking wait, so that librdkafka's fetcher thread enqueues a run of
//    messages instead of waking the poll thread for each one.
//  * Ordering lanes (per-key / per-partition FIFO queues): in `key` mode messages with the same
//    (topic, partition, key) are handled one at a time, in offset order; messages without a key
//    (a null key) are not ordered at all. In `partition` mode each partition is one lane. In
//    `unordered` mode (and for null keys) each poll's messages of a partition are cut into
//    chunks, one per worker (at most 512 messages), each a one-off lane.
//  * A lane is run by at most one pool task at a time. A task runs up to 512 of its lane's
//    messages one after another (stopping after 10 ms of handler time), completes them in one
//    go, and queues the lane again if more arrived. Lanes that one poll queued share a task
//    when their messages are expected (from the mean handler time) to take under 0.1 ms in
//    all; such a task hands the lanes it has not started after 10 ms to tasks of their own.
//    So per message there is no allocation, no pool task and no lock; per run one task and two
//    lock round trips.
//  * The handler sees a SourceMessage that the worker refills for each message (key and value
//    are copied into its strings, whose capacity is reused). Its run time goes into the pool's
//    latency histogram per message (WorkerPool::record_items; the pool then does not record
//    the task as a whole): each message is timed on its own, except that very fast ones
//    (under 2 us) are timed in groups of up to 64, each recorded with the group's mean.
//  * When the pool refuses a lane (queue full), it goes to the source's pending buffer (FIFO,
//    never dropped); the poll thread and completing workers retry the buffer.
//  * Offsets: per partition a PartitionOffsetTracker records dispatched offsets and
//    out-of-order completions; the commit offset is the highest offset below which everything
//    dispatched is done. A run publishes how far it got after each message, and every commit
//    (and stats()) first completes what runs in progress have finished, so a long or stuck run
//    does not hold back the commit of what it already did. Commits carry explicit offsets
//    (enable.auto.commit=false): async every commit_interval_seconds, sync on partition
//    revocation and on shutdown. At-least-once: what was not committed is delivered again
//    after a restart or a rebalance.
//  * Revocation (rebalance callback, on the poll thread): the revoked partitions' consumed
//    messages (pool queue, running, lanes, pending) are given up to revoke_timeout_seconds to
//    finish; what is left is dropped (it was not committed, so the next owner gets it; a run in
//    progress stops before its next message), then the done prefix is committed synchronously
//    and the partitions are unassigned.
//  * Backpressure: "unfinished" = consumed but not finished (pool queue + running + lanes +
//    pending), in messages. When the pool's backpressure turns on or unfinished reaches
//    max_unfinished, the poll thread first waits up to 50 ms for the workers to catch up
//    (unfinished <= max_unfinished / 5 and no pool backpressure): pausing makes librdkafka drop
//    what it prefetched, which it then fetches and parses again, so a short stall is cheaper.
//    If they do not, all assigned partitions are paused (rd_kafka_pause_partitions), and
//    resumed when the pool's backpressure is off and unfinished <= max_unfinished / 5 (20 %).
//    Polling goes on while paused. An operator pause (pause_consumption) pauses too; workers
//    finish what they hold.
//    librdkafka 2.0 does not wake its fetcher on resume (fetching restarted up to 1 s late,
//    which capped throughput at a few thousand msg/s with a small queue), so each resume is
//    followed by an async seek to the resume position itself, which wakes it. Assignments
//    carry explicit start offsets (the committed offset, or the auto.offset.reset end) so that
//    librdkafka starts the fetchers before rd_kafka_assign returns: a pause issued while it
//    starts them could be dropped by librdkafka (racing partition ops). Should a message still
//    arrive for a paused partition, it is not taken: the partition is paused again and the
//    message fetched again on resume (refused_while_paused counts these).
//  * Retention: each partition remembers the next offset it expects (the committed offset at
//    assignment, then last offset + 1). When a message arrives above it, the gap is checked
//    against the log start offset (librdkafka's value from the last fetch response, or a
//    ListOffsets query): records in [expected, min(offset, log start)) expired before they were
//    consumed. They are counted in lost_to_retention and logged as a warning naming the topic,
//    partition and offset range; consumption goes on from the log start
//    (auto.offset.reset=earliest, the default we set). Gaps above the log start (compaction,
//    transaction markers) are not losses. A new group without a committed offset starts at the
//    log start and counts nothing: it never owned the older records.
//  * Lag per partition = high watermark - max(done offset, log start), where the done offset is
//    what the next commit writes (>= the committed offset; equal to it right after a commit), or
//    the committed offset / log start when nothing was done yet. Using the done offset keeps the
//    lag from lagging by a commit interval.
//
// Threads and locks.
//  * Control thread: constructor, start(), stats(), pause_consumption(), resume_consumption(),
//    stop(), joined(), destructor. (pause/resume/joined may be called from any thread.)
//  * Poll thread (started by start()): librdkafka polling, the rebalance and offset-commit
//    callbacks, dispatch, pause/resume of partitions, periodic commits.
//  * Pool workers: lane runs (the handler), then completion (tracker, counters, requeueing,
//    pending retry).
//  * Core::mu guards all dispatch state: partitions, trackers, lanes, the pending buffer,
//    counters, the record-age histogram. It is never held across a librdkafka call that can
//    block or across the handler. Lock order: Core::mu, then the pool's internal lock
//    (try_submit is called under Core::mu). State that only the poll thread writes (the
//    assignment map, pause flags, a tracker's next offset) is also read by the poll thread
//    without the lock, when it stages a dispatch.
//  * A run's messages (Lane::running) are read by its worker without the lock: they are only
//    replaced at the start of the lane's next run, under the lock.
//  * Atomics: operator_paused / stop_requested (set by the control thread, read by the poll
//    thread), assigned (written by the poll thread, read by joined()), closed and each
//    partition's revoked flag (written under Core::mu, read by running workers between
//    messages), each lane's done count (written by its worker, read under Core::mu).
//  * Tasks in the pool hold a shared_ptr to the source's internals, so a task that runs after
//    stop() (or after its partition was revoked) finds them alive; it then skips the handler.
//
// Time: the injected Clock measures handler run time, bounds runs and paces the periodic
// commits; the revoke and stop deadlines and the backpressure grace are real waits
// (std::chrono::steady_clock), and record age is the system clock read at the end of the run
// minus the record's timestamp (both epoch-based, like Kafka's; a run lasts about 10 ms at
// most, plus one handler call).
//
// Config checks logged as spdlog warnings: fetch.max.bytes above 50 MB; revoke_timeout_seconds
// not below max.poll.interval.ms; enable.auto.commit=true (overridden); at run time, once:
// a handler run longer than max.poll.interval.ms, and a pool queue smaller than one fetch
// (estimated from the average message size).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "controller/pool/worker_pool.h"
#include "policies/clock.h"

namespace lagpilot {

struct SourceMessage {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  std::string key;  // empty for a null key (see has_key)
  std::string value;
  int64_t timestamp_ms = -1;  // record timestamp (epoch ms), -1 if none
  bool has_key = false;       // false for a null key
};

// Called on pool workers, concurrently. May throw: the message is counted as failed and
// logged, and its offset still completes (at-least-once delivery, every message accounted).
// The SourceMessage is valid only during the call (the worker refills it for the next one).
using MessageHandler = std::function<void(const SourceMessage&)>;

struct KafkaSourceConfig {
  std::string bootstrap_servers;  // may also come from properties["bootstrap.servers"]
  std::vector<std::string> topics{"events"};
  std::string group_id = "lagpilot";
  // Passed through to librdkafka verbatim, after our defaults (so they override them), except
  // enable.auto.commit, which is always false (a warning says so if set to true).
  std::map<std::string, std::string> properties;
  std::string ordering = "key";  // key | partition | unordered
  double commit_interval_seconds = 5.0;
  double revoke_timeout_seconds = 10.0;
  // Bound on messages consumed but not finished; 0 = 2 x the pool's queue capacity.
  int64_t max_unfinished = 0;

  // Reads {"bootstrap_servers", "topics", "group_id", "properties", "ordering",
  // "commit_interval_seconds", "revoke_timeout_seconds", "max_unfinished"}. Property values may
  // be strings, numbers or booleans. Throws ConfigError naming the JSON path (unknown keys too).
  static KafkaSourceConfig from_json(const nlohmann::json& j, const std::string& path = "kafka");
  nlohmann::json to_json() const;
};

struct PartitionStatus {
  std::string topic;
  int32_t partition = 0;
  int64_t high_watermark = -1;  // last known; -1 if never known
  int64_t low_watermark = -1;   // log start offset; -1 if never known
  int64_t committed = -1;       // last offset the broker acknowledged for us; -1 if none
  int64_t done_offset = -1;     // every dispatched offset below it is done (next commit)
  int64_t lag = 0;              // high - max(done offset or committed, low); >= 0
  bool paused = false;
};

struct SourceStats {
  std::vector<PartitionStatus> partitions;
  int64_t total_lag = 0;
  int64_t high_watermark_sum = 0;  // over assigned partitions (arrival rate = its slope)
  uint64_t consumed = 0;           // messages taken from Kafka and dispatched
  uint64_t processed = 0;          // handler returned
  uint64_t failed = 0;             // handler threw
  uint64_t lost_to_retention = 0;  // records that expired before they were consumed
  uint64_t commits = 0;            // successful offset commits (requests)
  uint64_t commit_failures = 0;
  uint64_t dropped = 0;               // consumed, then given up (revoke/stop timeout; redelivered)
  uint64_t duplicates_skipped = 0;    // re-deliveries of an offset already dispatched
  uint64_t refused_while_paused = 0;  // delivered despite a pause; fetched again later
  uint64_t pauses = 0;                // times the partitions were paused (backpressure/operator)
  uint64_t resumes = 0;
  int64_t unfinished = 0;  // consumed, not finished, now
  int64_t max_unfinished_seen = 0;
  int64_t max_unfinished = 0;  // the bound on unfinished (config, or 2 x the pool's queue)
  int64_t pending = 0;         // lanes (runs of messages) in the source's pending buffer now
  int64_t max_pending_seen = 0;
  double record_age_p99_seconds = 0;  // now - record timestamp at completion, since last stats()
  double max_handler_seconds = 0;     // longest handler run so far (very fast handlers are
                                      // timed in groups: then the group's time, an upper bound)
  bool paused = false;                // partitions are paused now
  int assigned_partitions = 0;
};

class KafkaSource {
 public:
  // Validates the config and builds the librdkafka configuration; throws ConfigError (naming
  // "kafka.<field>" or "kafka.properties.<name>") on a bad value. `pool`, `clock` and the
  // handler's captures must outlive this object (tasks may still run after stop()).
  KafkaSource(KafkaSourceConfig config, WorkerPool& pool, MessageHandler handler,
              const Clock& clock);
  ~KafkaSource();  // stop(revoke_timeout_seconds) if started and not stopped

  KafkaSource(const KafkaSource&) = delete;
  KafkaSource& operator=(const KafkaSource&) = delete;

  // Creates the consumer, subscribes and starts the poll thread. Throws std::runtime_error if
  // librdkafka refuses. Call once.
  void start();

  // Control thread, once per tick. With refresh_watermarks, queries each assigned partition's
  // watermarks from the brokers (blocking, about 1 ms per partition on loopback; bounded by a
  // 2 s budget, then cached values), else reports the last known ones.
  SourceStats stats(bool refresh_watermarks);

  // Operator pause: partitions are paused (polling goes on); workers finish what they hold.
  void pause_consumption();
  void resume_consumption();

  // Stops fetching, lets consumed messages finish for at most `timeout_seconds`, commits what
  // is done (sync), closes the consumer (leaving the group). Idempotent.
  void stop(double timeout_seconds);

  bool joined() const;  // has a non-empty assignment now

  struct Core;  // internals (kafka_source.cpp); public only so that helpers there can name it

 private:
  std::shared_ptr<Core> core_;
  std::thread poll_thread_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace lagpilot
