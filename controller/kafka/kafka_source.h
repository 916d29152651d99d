#pragma once
// The Kafka consumer that feeds the worker pool (librdkafka C API, consumer group).
//
// A KafkaSource polls a consumer group on its own thread and hands the messages to the worker
// pool through ordering lanes (per key, per partition, or unordered), committing per partition
// the highest offset below which everything is done (at-least-once). Its parts:
//   kafka_config.h      KafkaSourceConfig and the librdkafka configuration built from it
//   lane_scheduler.h    the scheduling core: lanes, dispatch, completion, the pending buffer,
//                       commit positions, the unfinished count (no librdkafka; the algorithm)
//   kafka_source_core.h the librdkafka side: poll loop, flow control (backpressure pauses),
//                       commits, rebalance, retention checks, stats
//   rdkafka_handles.h   RAII owners of librdkafka's handles
//   source_counters.h   the source's counters, declared once
//
// Threads.
//  * Control thread: constructor, start(), refreshed_stats(), take_record_age_p99(),
//    pause_consumption(), resume_consumption(), stop(), joined(), destructor.
//    (stats(), pause/resume and joined may be called from any thread.)
//  * Lag refresher thread (started by start()): watermark queries, and about once a second the
//    group-wide lag (metadata, the group's committed offsets, every partition's watermarks),
//    off the tick path.
//  * Poll thread (started by start()): librdkafka polling, the rebalance and offset-commit
//    callbacks, dispatch, pause/resume of partitions, periodic commits.
//  * Pool workers: lane runs (the handler), then completion.
//  Tasks in the pool hold a shared_ptr to the source's scheduling core, so a task that runs
//  after stop() (or after its partition was revoked) finds it alive; it then skips the handler.
//
// Time: the injected Clock measures handler run time, bounds runs and paces the periodic
// commits; the revoke and stop deadlines and the backpressure grace are real waits
// (std::chrono::steady_clock), and record age is the system clock read at the end of the run
// minus the record's timestamp (both epoch-based, like Kafka's; a run lasts about 10 ms at
// most, plus one handler call).
//
// Config checks logged as spdlog warnings: enable.auto.commit=true (overridden; the rest of the
// config advice, fetch.max.bytes and revoke_timeout_seconds among it, is Service's, from
// controller/config_advice.h); at run time, once:
// a handler run longer than max.poll.interval.ms, and, once fetching has paused repeatedly, a
// max_unfinished smaller than one fetch (estimated from the average message size).

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "controller/kafka/batch_config.h"
#include "controller/kafka/kafka_config.h"
#include "controller/kafka/source_counters.h"
#include "controller/kafka/source_message.h"
#include "controller/pool/worker_pool.h"
#include "policies/clock.h"

namespace lagpilot {

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

// The consumer group's lag over every partition of the subscribed topics, this member's or not
// (the group's committed offsets against the high watermarks), as the lag refresher last read
// it. A member that holds no partitions still sees the group's backlog here.
struct GroupPartitionLag {
  std::string topic;
  int32_t partition = 0;
  int64_t high_watermark = -1;
  int64_t committed = -1;  // the group's committed offset; -1 if none
  int64_t lag = 0;         // high - max(committed, log start); >= 0
};
struct GroupTopicLag {
  std::string topic;
  int partitions = 0;
  int64_t lag = 0;
};
struct GroupLagView {
  bool known = false;       // a round has read every partition
  double age_seconds = -1;  // since that round; -1 when not known
  int64_t total_lag = 0;
  int64_t high_watermark_sum = 0;
  double read_at_seconds = 0;  // steady-clock seconds of that round (rates: differences)
  std::vector<GroupTopicLag> topics;
  std::vector<GroupPartitionLag> partitions;  // every partition of the subscribed topics
  int partition_count() const { return static_cast<int>(partitions.size()); }
};

struct SourceStats {
  std::vector<PartitionStatus> partitions;
  int64_t total_lag = 0;
  int64_t high_watermark_sum = 0;  // over assigned partitions (arrival rate = its slope)
  // Cumulative counters (source_counters.h): consumed, processed, failed, lost_to_retention,
  // commits, commit_failures, dropped, duplicates_skipped, refused_while_paused, pauses,
  // resumes.
#define LAGPILOT_SOURCE_STATS_FIELD(field, metric, label, in_status, help) uint64_t field = 0;
  LAGPILOT_SOURCE_COUNTERS(LAGPILOT_SOURCE_STATS_FIELD)
#undef LAGPILOT_SOURCE_STATS_FIELD
  int64_t unfinished = 0;  // consumed, not finished, now
  int64_t max_unfinished_seen = 0;
  int64_t max_unfinished = 0;  // the bound on unfinished (config, or 2 x the pool's queue)
  int64_t pending = 0;         // lanes (runs of messages) in the source's pending buffer now
  int64_t max_pending_seen = 0;
  double record_age_p99_seconds = 0;  // now - record timestamp at completion, p99 over the
                                      // tick's last window (take_record_age_p99)
  double lag_age_seconds = -1;        // age of the oldest partition's high watermark (seconds
                                      // since a broker query returned it); -1: not yet known
  double max_handler_seconds = 0;     // longest handler run so far (very fast handlers are
                                      // timed in groups: then the group's time, an upper bound)
  bool paused = false;                // partitions are paused now
  int assigned_partitions = 0;
  GroupLagView group;  // the whole group's lag (refreshed about once a second)
};

// The counters' declarations as data (for exporters), in LAGPILOT_SOURCE_COUNTERS order.
struct SourceCounterSpec {
  const char* field;
  const char* metric;  // nullptr: not exported
  const char* label;   // "name=value" or nullptr
  bool in_status;
  const char* help;
  uint64_t SourceStats::*value;
};
inline constexpr SourceCounterSpec kSourceCounterSpecs[] = {
#define LAGPILOT_SOURCE_COUNTER_SPEC(field, metric, label, in_status, help) \
  {#field, metric, label, in_status, help, &SourceStats::field},
    LAGPILOT_SOURCE_COUNTERS(LAGPILOT_SOURCE_COUNTER_SPEC)
#undef LAGPILOT_SOURCE_COUNTER_SPEC
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

  // Batch delivery (config "batch"; lane_scheduler.h): `deliver` gets each batch, and
  // `drop_incomplete` (may be empty) each incomplete batch that drop_last drops. Before
  // start(); without it (or with a config that is not enabled) the handler gets messages.
  void set_batching(const BatchConfig& config, BatchHandler deliver, BatchHandler drop_incomplete);

  // Creates the consumer, subscribes and starts the poll thread. Throws std::runtime_error if
  // librdkafka refuses. Call once.
  void start();

  // Any thread. A snapshot: counters, and lag per partition from the watermarks the lag
  // refresher last stored. No broker I/O, no waiting on the network, and nothing is reset, so
  // any number of readers see the same figures; lag_age_seconds says how old the high
  // watermarks are.
  SourceStats stats() const;

  // Control thread, not the tick (it blocks): asks the refresher for a round now and waits
  // (at most timeout_seconds) until one that started after this call has finished, then
  // returns stats(). For tests and for a final report.
  SourceStats refreshed_stats(double timeout_seconds = 5.0);

  // The control tick only (one taker): the p99 record age of the messages completed since the
  // previous call, and starts a new window. stats() reports the last value taken.
  double take_record_age_p99();

  // Operator pause: partitions are paused (polling goes on); workers finish what they hold.
  void pause_consumption();
  void resume_consumption();

  // Stops fetching, lets consumed messages finish for at most `timeout_seconds`, commits what
  // is done (sync), closes the consumer (leaving the group). Idempotent.
  void stop(double timeout_seconds);

  bool joined() const;  // has a non-empty assignment now

  // Any thread. Empty while healthy; else why consumption stopped for good (the poll thread
  // died). The owner should stop() (which still drains and commits) and exit non-zero.
  std::string failure() const;
  // Test seam (any thread): the poll loop throws at its next iteration.
  void inject_poll_failure_for_testing();
  // Tests: the next `count` seeks that restart a partition's fetcher (after a resume, or to
  // fetch refused messages again) fail as if librdkafka had refused them.
  void inject_seek_failures_for_testing(int count);

  struct Core;  // internals (kafka_source_core.h)

 private:
  std::shared_ptr<Core> core_;
  std::thread poll_thread_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace lagpilot
