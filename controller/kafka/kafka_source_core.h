#pragma once
// KafkaSource's internals (not installed API): the librdkafka-facing part of the source. It owns
// the consumer handle and a LaneScheduler (lane_scheduler.h), to which it hands each poll's
// messages as plain records. Its member functions live with the responsibility they serve:
//   poll_loop.cpp     the poll loop, message conversion, consumer events, runtime checks, stop
//   flow_control.cpp  backpressure and operator pauses, the backpressure grace, wake_fetchers
//   commits.cpp       async/sync commits of the done prefix, commit results
//   rebalance.cpp     assign/revoke callbacks, reading the committed offsets
//   retention.cpp     offset gaps checked against the log start (records lost to retention)
//   source_stats.cpp  the lag refresher thread (watermark queries) and stats() (a snapshot)
//
// Threads and locks.
//  * Control thread: constructor, start(), stats(), stop(); pause/resume and joined() from any
//    thread.
//  * Poll thread (started by start()): librdkafka polling, the rebalance and offset-commit
//    callbacks, dispatch, pause/resume of partitions, periodic commits.
//  * Lag refresher thread (started by start(), joined by stop() before the handle goes):
//    queries the watermarks every kLagRefreshMs, blocking only itself, and stores them in the
//    PartitionStates under sched->mu.
//  * Pool workers: the scheduler's lane runs.
//  * sched->mu guards all dispatch state and every PartitionState field, including the ones
//    this side keeps there (pause flags, committed offset, watermarks), and the counters. It is
//    never held across a librdkafka call that can block.
//  * Atomics: operator_paused / stop_requested (set by the control thread, read by the poll
//    thread), assigned (written by the poll thread, read by joined()).

#include <librdkafka/rdkafka.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "controller/kafka/group_join_watch.h"
#include "controller/kafka/kafka_source.h"
#include "controller/kafka/lane_scheduler.h"
#include "controller/kafka/rdkafka_handles.h"

namespace lagpilot {

constexpr int kIdlePollMs = 50;           // consumer_poll timeout when nothing waits
constexpr int kRefreshQueryMaxMs = 1000;  // one watermark query at most
constexpr int kLagRefreshMs = 250;        // the refresher's period (lag is this much older)
constexpr int kCommittedQueryMs = 3000;   // reading the committed offsets after an assign
constexpr int kGroupLagEveryRounds = 4;   // the group-wide lag: every 4th refresher round

struct KafkaSource::Core : std::enable_shared_from_this<KafkaSource::Core> {
  Core(KafkaSourceConfig c, ConsumerConf cc, WorkerPool& p, MessageHandler h, const Clock& cl);

  // ---- Immutable after construction / start() ----
  KafkaSourceConfig config;
  WorkerPool& pool;
  const Clock& clock;
  RdKafkaConf conf;           // owned until start() hands it to rd_kafka_new
  GroupJoinWatch join_watch;  // installed on conf; outlives rk (declared before it)
  // join_watch.joining() at the steady clock's now. Any thread.
  bool join_in_progress() const {
    return join_watch.joining(
        std::chrono::duration<double>(steady_now().time_since_epoch()).count());
  }
  // start() creates it, KafkaSource::stop() destroys it; reset under sched->mu (stats() reads
  // it there).
  RdKafka rk;
  int64_t max_unfinished = 0;
  int64_t resume_unfinished = 0;
  double max_poll_interval_seconds = 300.0;
  int64_t fetch_max_bytes = 52428800;
  int64_t max_partition_fetch_bytes = 1048576;
  bool reset_to_latest = false;          // ConsumerConf::reset_to_latest
  std::shared_ptr<LaneScheduler> sched;  // pool tasks hold it too

  // ---- Atomics (control thread writes, poll thread reads) ----
  std::atomic<bool> operator_paused{false};  // atomic: set by any thread, read by the poll loop
  std::atomic<bool> stop_requested{false};   // atomic: set by stop(), read by the poll loop
  std::atomic<int> assigned{0};              // atomic: written by the poll thread, read anywhere
  SteadyTime stop_deadline{};                // written before stop_requested (release)
  // atomic: set by the dying poll thread, read by any thread (readiness, the service's tick)
  std::atomic<bool> poll_failed{false};
  // atomic: test seam, set by any thread, read (and cleared) by the poll loop, which throws
  std::atomic<bool> inject_poll_fault{false};
  std::atomic<int> inject_seek_faults{0};  // the next N fetcher seeks fail (tests)
  std::mutex failure_mu;                   // guards failure
  std::string failure;                     // why the poll thread died (set before poll_failed)
  void record_poll_failure(const std::string& what);

  // ---- Poll thread only ----
  std::vector<PartitionPtr> awaiting_committed;  // assigned, offsets unread
  bool backpressure_paused = false;
  bool streaming = false;  // the last poll took a run of messages (see poll_batch)
  bool warned_handler_time = false;
  bool warned_queue_capacity = false;
  uint64_t commits_held = 0;  // periodic commits held back while a group join was on the wire
  uint64_t error_events = 0;
  std::vector<MessageRecord> records;                     // one poll's messages, as records
  std::vector<MessageHeaderView> header_views;            // their headers (records point into it)
  std::vector<std::array<std::size_t, 3>> header_ranges;  // (record, first header, count)

  // ---- Lag refresher (source_stats.cpp) ----
  std::thread refresher;
  std::mutex refresh_mu;               // guards refresh_stop, refresh_rounds, refresh_now
  std::condition_variable refresh_cv;  // refresh_mu: a stop, a wish for a round, a round done
  bool refresh_stop = false;
  bool refresh_now = false;     // a caller waits for a round: start it without the period
  uint64_t refresh_rounds = 0;  // rounds completed
  void refresh_loop();
  void refresh_watermarks();  // one round (refresher thread)
  // group_lag.cpp: the group-wide lag (refresher thread); stored in group_lag (sched->mu).
  void refresh_group_lag();
  std::string read_group_partitions();
  GroupLagView group_lag;                // sched->mu; age_seconds is filled in by stats()
  SteadyTime group_lag_at{};             // sched->mu: when group_lag was read ({}: never)
  bool group_lag_warned = false;         // refresher thread: sustained failures were logged
  SteadyTime group_lag_failing_since{};  // refresher thread: first failed round in a row ({}: none)
  // Refresher thread: the subscribed topics' partitions (topic, partition), from metadata read
  // at group_partitions_at ({}: never). Partitions are added rarely, so the metadata is read
  // again only every kGroupPartitionsMaxAgeSeconds, or after a round fails.
  std::vector<std::pair<std::string, int32_t>> group_partitions;
  SteadyTime group_partitions_at{};
  void stop_refresher();  // control thread, before rk is closed

  // poll_loop.cpp
  void poll_loop();
  void poll_batch(int timeout_ms, std::size_t limit, std::vector<RdKafkaMessage>& batch);
  void to_records(const std::vector<RdKafkaMessage>& batch);
  void handle_event(const rd_kafka_message_t* m);
  void runtime_checks();
  void shutdown_drain();

  // flow_control.cpp
  void update_pause_state();
  bool want_paused() const;
  void set_paused(const std::vector<PartitionPtr>& parts, bool pause);
  void wake_fetchers(const std::vector<PartitionPtr>& parts);
  void await_room_locked(std::unique_lock<std::mutex>& lock);

  // commits.cpp
  RdKafkaPartitionList commit_list_locked(const std::vector<PartitionPtr>& parts);
  void commit_async();
  void commit_sync(const std::vector<PartitionPtr>& parts);
  void on_commit_result(rd_kafka_resp_err_t err, const rd_kafka_topic_partition_list_t* offsets);
  static void commit_cb(rd_kafka_t*, rd_kafka_resp_err_t err,
                        rd_kafka_topic_partition_list_t* offsets, void* opaque);

  // rebalance.cpp
  static void rebalance_cb(rd_kafka_t*, rd_kafka_resp_err_t err,
                           rd_kafka_topic_partition_list_t* parts, void* opaque);
  void on_rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts);
  void on_assign(rd_kafka_topic_partition_list_t* parts, bool cooperative);
  void resolve_committed();
  void reset_to_end(const rd_kafka_topic_partition_list_t* committed,
                    const std::vector<PartitionPtr>& parts, std::vector<int64_t>& start_at);
  void on_revoke(rd_kafka_topic_partition_list_t* parts, bool cooperative, bool lost);

  // retention.cpp
  void check_gap(const OffsetGap& g);
  void count_out_of_range(const rd_kafka_message_t* m, const std::string& where);
};

}  // namespace lagpilot
