// The Kafka source's poll thread: the loop, converting librdkafka messages into the
// scheduler's records, consumer events, the run-time config checks, and the drain at stop.
//
// One poll thread calls rd_kafka_consumer_poll in a loop (blocking at most 50 ms) and never
// waits on the handlers for more than 50 ms (the backpressure grace, flow_control.cpp), so a
// slow handler can never breach max.poll.interval.ms. It takes up to 1024 messages per
// iteration and hands them to the scheduler together (LaneScheduler::dispatch copies what it
// keeps; the librdkafka messages are released right after). While messages stream in, an empty
// queue gets a 0.3 ms nap before the blocking wait, so that librdkafka's fetcher thread
// enqueues a run of messages instead of waking the poll thread for each one.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <thread>

#include "controller/kafka/kafka_source_core.h"

namespace lagpilot {
namespace {

constexpr int kBusyPollMs = 5;               // when the pending buffer waits for room in the pool
constexpr int kMaxBatch = 1024;              // messages taken per poll iteration
constexpr std::size_t kStreamingBatch = 64;  // a poll this big means messages stream in
constexpr int kStreamingNapMicros = 300;     // see poll_batch
constexpr uint64_t kQueueCheckAfterMessages = 1000;
constexpr uint64_t kPausesBeforeFetchCheck = 5;  // see runtime_checks

}  // namespace

void KafkaSource::Core::runtime_checks() {
  double worst = 0;
  uint64_t n = 0, bytes = 0;
  int parts = 0;
  uint64_t pauses = 0;
  {
    std::lock_guard<std::mutex> lock(sched->mu);
    worst = sched->max_handler_seconds;
    n = sched->counters.consumed;
    bytes = sched->consumed_bytes;
    parts = static_cast<int>(sched->partitions.size());
    pauses = sched->counters.pauses;
  }
  if (!warned_handler_time && worst > max_poll_interval_seconds) {
    warned_handler_time = true;
    spdlog::warn(
        "kafka: a handler ran {:.1f} s, longer than max.poll.interval.ms ({:.0f} ms). The poll "
        "loop does not wait for handlers, but revocation waits for them (at most {} s)",
        worst, max_poll_interval_seconds * 1000, config.revoke_timeout_seconds);
  }
  // The cost this warns about (a pause discards what librdkafka prefetched, fetched again on
  // resume) exists only when fetching pauses, and the estimate (every partition's full fetch
  // size) is only reached with a backlog on all of them; so it waits for repeated pauses. A
  // consumer that keeps up (the demo at start-up) is never warned, whatever the sizes.
  if (!warned_queue_capacity && n >= kQueueCheckAfterMessages && parts > 0 &&
      pauses >= kPausesBeforeFetchCheck) {
    warned_queue_capacity = true;
    const double avg = std::max(1.0, static_cast<double>(bytes) / static_cast<double>(n));
    const double fetch_bytes = std::min<double>(
        static_cast<double>(fetch_max_bytes),
        static_cast<double>(parts) * static_cast<double>(max_partition_fetch_bytes));
    const double per_fetch = fetch_bytes / avg;
    if (static_cast<double>(max_unfinished) < per_fetch) {
      spdlog::warn(
          "kafka: fetching paused {} times, and max_unfinished ({} messages; default 2 x the "
          "pool queue capacity) is smaller than one fetch (~{:.0f} messages of ~{:.0f} bytes; "
          "fetch.max.bytes {}, "
          "max.partition.fetch.bytes {} x {} partitions): each pause drops what librdkafka "
          "prefetched, fetched again on resume. Raise kafka.max_unfinished "
          "or the queue capacity, or lower the fetch sizes",
          pauses, max_unfinished, per_fetch, avg, fetch_max_bytes, max_partition_fetch_bytes,
          parts);
    }
  }
}

void KafkaSource::Core::handle_event(const rd_kafka_message_t* m) {
  if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return;
  ++error_events;
  const std::string where =
      m->rkt != nullptr ? partition_name(rd_kafka_topic_name(m->rkt), m->partition) : "consumer";
  if (m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET) {
    count_out_of_range(m, where);
    return;
  }
  char fatal[512];
  if (rd_kafka_fatal_error(rk.get(), fatal, sizeof(fatal)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    spdlog::error("kafka: fatal consumer error: {}", fatal);
    return;
  }
  if (error_events <= 20 || error_events % 1000 == 0) {
    spdlog::warn("kafka {}: {} ({} consumer errors so far)", where, rd_kafka_message_errstr(m),
                 error_events);
  }
}

// The batch's messages (not its events) as records that point into the messages. Headers are
// read only for messages that carry some (rd_kafka_message_headers answers NOENT cheaply).
void KafkaSource::Core::to_records(const std::vector<RdKafkaMessage>& batch) {
  records.clear();
  header_views.clear();
  header_ranges.clear();
  const rd_kafka_topic_t* last_rkt = nullptr;
  std::string_view topic;
  for (const RdKafkaMessage& owned : batch) {
    const rd_kafka_message_t* m = owned.get();
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
    if (m->rkt != last_rkt) {  // (one name per run of a topic: no strlen per message)
      last_rkt = m->rkt;
      topic = rd_kafka_topic_name(m->rkt);
    }
    MessageRecord& r = records.emplace_back();
    r.topic = topic;
    r.partition = m->partition;
    r.offset = m->offset;
    r.has_key = m->key != nullptr;
    if (r.has_key) r.key = std::string_view(static_cast<const char*>(m->key), m->key_len);
    if (m->payload != nullptr) {
      r.value = std::string_view(static_cast<const char*>(m->payload), m->len);
    }
    rd_kafka_timestamp_type_t ts_type;
    r.timestamp_ms = rd_kafka_message_timestamp(m, &ts_type);
    rd_kafka_headers_t* headers = nullptr;  // owned by the message
    if (rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const std::size_t first = header_views.size();
      const char* name = nullptr;
      const void* value = nullptr;
      std::size_t size = 0;
      for (std::size_t i = 0;
           rd_kafka_header_get_all(headers, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
           ++i) {
        header_views.push_back(MessageHeaderView{
            name, value != nullptr ? std::string_view(static_cast<const char*>(value), size)
                                   : std::string_view()});
      }
      header_ranges.push_back({records.size() - 1, first, header_views.size() - first});
    }
  }
  // Now that header_views no longer grows, point the records at their headers.
  for (const auto& [record, first, count] : header_ranges) {
    records[record].headers =
        std::span<const MessageHeaderView>(header_views.data() + first, count);
  }
}

void KafkaSource::Core::poll_loop() {
  double next_commit = clock.now() + config.commit_interval_seconds;
  std::vector<RdKafkaMessage> batch;
  batch.reserve(kMaxBatch);
  std::vector<OffsetGap> gaps;
  while (!stop_requested.load(std::memory_order_acquire)) {
    if (inject_poll_fault.exchange(false)) throw std::runtime_error("injected poll-loop fault");
    bool waiting;
    int64_t room;
    {
      std::unique_lock<std::mutex> lock(sched->mu);
      await_room_locked(lock);
      waiting = !sched->pending.empty();
      room = max_unfinished - sched->unfinished_count;
    }
    // Take no more than the room left below max_unfinished (at least one message per call:
    // a message that consumer_poll returns is always dispatched; pausing stops the rest).
    const auto limit = static_cast<std::size_t>(std::clamp<int64_t>(room, 1, kMaxBatch));
    poll_batch(waiting ? kBusyPollMs : kIdlePollMs, limit, batch);
    if (!awaiting_committed.empty()) resolve_committed();
    if (!batch.empty()) {
      to_records(batch);
      sched->dispatch(records, gaps);
      records.clear();
      for (const RdKafkaMessage& m : batch) {
        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) handle_event(m.get());
      }
      batch.clear();  // releases the messages
      for (const OffsetGap& g : gaps) check_gap(g);
      gaps.clear();
    }
    sched->drain_pending();
    if (sched->batching()) sched->flush_due_batches();
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
void KafkaSource::Core::poll_batch(int timeout_ms, std::size_t limit,
                                   std::vector<RdKafkaMessage>& batch) {
  RdKafkaMessage m{rd_kafka_consumer_poll(rk.get(), 0)};
  if (!m && streaming) {
    std::this_thread::sleep_for(std::chrono::microseconds(kStreamingNapMicros));
    m.reset(rd_kafka_consumer_poll(rk.get(), 0));
  }
  if (!m) m.reset(rd_kafka_consumer_poll(rk.get(), timeout_ms));
  while (m) {
    batch.push_back(std::move(m));
    // After an assignment, read the committed offsets before taking more messages.
    if (batch.size() >= limit || !awaiting_committed.empty()) break;
    m.reset(rd_kafka_consumer_poll(rk.get(), 0));
  }
  streaming = batch.size() >= std::min<std::size_t>(limit, kStreamingBatch);
}

// After stop(): stop fetching, let consumed messages finish until the deadline, give up the
// rest, commit what is done.
void KafkaSource::Core::shutdown_drain() {
  update_pause_state();  // stop_requested: pauses everything
  while (steady_now() < stop_deadline) {
    {
      std::lock_guard<std::mutex> lock(sched->mu);
      sched->drain_pending_locked();
      const int64_t left = sched->batching() ? sched->settle_batches_locked(true) : 0;
      if (sched->unfinished_count <= left) break;
    }
    // Keep serving librdkafka (rebalances, commit results); drop late messages undispatched.
    if (RdKafkaMessage m{rd_kafka_consumer_poll(rk.get(), 10)}) {
      if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) handle_event(m.get());
    }
  }
  std::vector<PartitionPtr> parts;
  {
    std::lock_guard<std::mutex> lock(sched->mu);
    const int64_t left = sched->unfinished_count;
    const int64_t given_up = sched->close_locked();
    if (left > 0) {
      spdlog::warn(
          "kafka: stop: {} consumed messages did not finish in time ({} dropped before reaching "
          "a worker); they were not committed and will be delivered again",
          left, given_up);
    }
    parts = sched->partitions_locked();
  }
  commit_sync(parts);
}

}  // namespace lagpilot
