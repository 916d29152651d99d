// Flow control of the Kafka source (poll thread): backpressure and operator pauses.
//
// "Unfinished" = consumed but not finished (pool queue + running + lanes + pending), in
// messages. When the pool's backpressure turns on or unfinished reaches max_unfinished, the
// poll thread first waits up to kBackpressureGraceMs for the workers to catch up (unfinished <=
// max_unfinished / 5 and no pool backpressure): pausing makes librdkafka drop what it
// prefetched, which it then fetches and parses again, so a short stall is cheaper. If they do
// not, all assigned partitions are paused (rd_kafka_pause_partitions), and resumed when the
// pool's backpressure is off and unfinished <= max_unfinished / 5 (20 %). Polling goes on while
// paused. An operator pause (pause_consumption) and stop() pause too; workers finish what they
// hold.
//
// librdkafka 2.0 does not wake its fetcher on resume (fetching restarted up to 1 s late, which
// capped throughput at a few thousand msg/s with a small queue), so each resume is followed by
// an async seek to the resume position itself, which wakes it. Assignments carry explicit start
// offsets (the committed offset, or the auto.offset.reset end) so that librdkafka starts the
// fetchers before rd_kafka_assign returns: a pause issued while it starts them could be dropped
// by librdkafka (racing partition ops). Should a message still arrive for a paused partition,
// it is not taken (LaneScheduler::dispatch refuses it): the partition is paused again and the
// message fetched again on resume (refused_while_paused counts these).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

#include "controller/kafka/kafka_source_core.h"

namespace lagpilot {
namespace {

// Before pausing for backpressure, the poll thread waits this long (real time) for the workers
// to bring the unfinished count down to the resume level: a pause makes librdkafka drop what
// it has prefetched for the partition (fetched and parsed again after the resume), so riding
// out a short stall costs less. The poll loop's longest wait stays kIdlePollMs.
constexpr int kBackpressureGraceMs = kIdlePollMs;

}  // namespace

void KafkaSource::Core::update_pause_state() {
  const bool pool_backpressure = pool.backpressure();
  std::vector<PartitionPtr> change, refetch;
  bool want;
  {
    LaneScheduler& s = *sched;
    std::lock_guard<std::mutex> lock(s.mu);
    if (!backpressure_paused && (pool_backpressure || s.unfinished_count >= max_unfinished)) {
      backpressure_paused = true;
    } else if (backpressure_paused && !pool_backpressure &&
               s.unfinished_count <= resume_unfinished) {
      backpressure_paused = false;
    }
    want = want_paused();
    if (want != s.refuse_all) {
      s.refuse_all = want;
      if (want) {
        ++s.counters.pauses;
      } else {
        ++s.counters.resumes;
      }
    }
    // Only partitions whose fetcher has started (a message arrived) are paused or resumed:
    // librdkafka 2.0 drops whichever of two racing partition ops got the older version
    // barrier, so a pause issued while it is still starting a fetcher after an assignment
    // could be lost (and leak messages) or could cancel the start (a stall). A partition
    // not started yet that delivers while a pause is wanted has that message refused
    // (LaneScheduler::dispatch) and is paused right after.
    for (auto& [key, part] : s.partitions) {
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

bool KafkaSource::Core::want_paused() const {
  return backpressure_paused || operator_paused.load() || stop_requested.load();
}

// Pauses or resumes these partitions in librdkafka and records the outcome.
void KafkaSource::Core::set_paused(const std::vector<PartitionPtr>& parts, bool pause) {
  RdKafkaPartitionList list = make_partition_list(static_cast<int>(parts.size()));
  for (const auto& p : parts)
    rd_kafka_topic_partition_list_add(list.get(), p->topic.c_str(), p->partition);
  const rd_kafka_resp_err_t err = pause ? rd_kafka_pause_partitions(rk.get(), list.get())
                                        : rd_kafka_resume_partitions(rk.get(), list.get());
  {
    std::lock_guard<std::mutex> lock(sched->mu);
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
  list.reset();
  if (!pause && err == RD_KAFKA_RESP_ERR_NO_ERROR) wake_fetchers(parts);
}

// librdkafka 2.0 does not wake a broker thread when a partition is resumed: with every
// partition paused that thread sleeps up to 1 s, so fetching would restart up to 1 s late.
// A seek to the position the fetcher resumes from anyway (one past the last message handed
// to us) is a no-op for the data but does wake the broker thread.
void KafkaSource::Core::wake_fetchers(const std::vector<PartitionPtr>& parts) {
  RdKafkaPartitionList list;
  std::vector<PartitionPtr> seeking;  // parallel to list's entries
  {
    std::lock_guard<std::mutex> lock(sched->mu);
    for (const auto& p : parts) {
      const int64_t next =
          p->tracker.next_offset() >= 0 ? p->tracker.next_offset() : p->refetch_from;
      p->refetch_from = -1;
      if (next < 0 || p->revoked) continue;
      if (!list) list = make_partition_list(static_cast<int>(parts.size()));
      rd_kafka_topic_partition_list_add(list.get(), p->topic.c_str(), p->partition)->offset = next;
      seeking.push_back(p);
    }
  }
  if (!list) return;
  std::string call_error;
  if (int n = inject_seek_faults.load();
      n > 0 && inject_seek_faults.compare_exchange_strong(n, n - 1)) {
    call_error = "injected seek fault";
  } else if (RdKafkaError e{rd_kafka_seek_partitions(rk.get(), list.get(), 0 /* async */)}) {
    call_error = rd_kafka_error_string(e.get());
  }
  // A seek that failed leaves the fetcher ahead of the messages to fetch again: taking what it
  // delivers would skip them. So the partition keeps refetch_from (dispatch refuses its
  // messages meanwhile) and the next poll iteration seeks again (update_pause_state).
  std::lock_guard<std::mutex> lock(sched->mu);
  for (int i = 0; i < list->cnt; ++i) {
    const rd_kafka_topic_partition_t& e = list->elems[i];
    PartitionState& p = *seeking[static_cast<std::size_t>(i)];
    // An asynchronous seek marks each partition "in progress": that is its success.
    const bool partition_failed =
        e.err != RD_KAFKA_RESP_ERR_NO_ERROR && e.err != RD_KAFKA_RESP_ERR__IN_PROGRESS;
    const std::string error = !call_error.empty() ? call_error
                              : partition_failed  ? rd_kafka_err2str(e.err)
                                                  : std::string();
    if (error.empty()) {
      if (p.seek_failures > 0) {
        spdlog::info("kafka {}: seek to offset {} succeeded after {} failures",
                     partition_name(p.topic, p.partition), e.offset, p.seek_failures);
      }
      p.seek_failures = 0;
      continue;
    }
    if (p.revoked) continue;
    p.refetch_from = p.refetch_from < 0 ? e.offset : std::min(p.refetch_from, e.offset);
    const uint64_t n = ++p.seek_failures;
    ++sched->counters.seek_failures;
    if (n == 1 || n % 1000 == 0) {
      spdlog::warn(
          "kafka {}: seek to offset {} failed ({}, {} in a row): its messages are refused and "
          "fetched again once a seek succeeds; retrying",
          partition_name(p.topic, p.partition), e.offset, error, n);
    }
  }
}

// Backpressure grace (see kBackpressureGraceMs): when fetching is not paused yet but the
// workers are behind, waits at most the grace for unfinished <= resume_unfinished and no
// pool backpressure. Requires sched->mu (held through `lock`).
void KafkaSource::Core::await_room_locked(std::unique_lock<std::mutex>& lock) {
  LaneScheduler& s = *sched;
  auto behind = [&] { return s.unfinished_count >= max_unfinished || pool.backpressure(); };
  if (backpressure_paused || s.refuse_all || !behind()) return;
  auto caught_up = [&] {
    return (s.unfinished_count <= resume_unfinished && !pool.backpressure()) ||
           stop_requested.load(std::memory_order_relaxed);
  };
  s.wait_for_room_locked(lock, steady_now() + std::chrono::milliseconds(kBackpressureGraceMs),
                         caught_up);
}

}  // namespace lagpilot
