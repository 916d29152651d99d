// The lag refresher (its own thread) and KafkaSource::stats() (a snapshot, any caller).
//
// Lag per partition = high watermark - max(done offset, log start), where the done offset is
// what the next commit writes (>= the committed offset; equal to it right after a commit), or
// the committed offset / log start when nothing was done yet. Using the done offset keeps the
// lag from lagging by a commit interval.
//
// The watermarks come from the brokers, and a query can block for up to kRefreshQueryMaxMs
// when a broker is slow or down. So the queries run on the refresher thread, every
// kLagRefreshMs, and store their results in the PartitionStates; stats() only reads what is
// there (no I/O, no waiting on the network, nothing reset), and says how old the high
// watermarks are (lag_age_seconds). Between queries, and for the partitions a round could not
// reach (it stops querying at the first failure, so a dead broker costs one timeout per round),
// librdkafka's cached watermarks (updated by fetch responses) are used without moving marks_at.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "controller/kafka/kafka_source_core.h"

namespace lagpilot {

void KafkaSource::Core::refresh_loop() {
  std::unique_lock<std::mutex> lock(refresh_mu);
  while (!refresh_stop) {
    lock.unlock();
    refresh_watermarks();
    // The group's committed offsets are read from the coordinator, which answers a member's
    // requests in order: during our own join that read would wait behind the JoinGroup and
    // time out. The last view is kept (and ages) until the join ends.
    if (refresh_rounds % kGroupLagEveryRounds == 0 && !join_in_progress()) refresh_group_lag();
    lock.lock();
    ++refresh_rounds;
    refresh_cv.notify_all();
    refresh_cv.wait_for(lock, std::chrono::milliseconds(kLagRefreshMs),
                        [this] { return refresh_stop || refresh_now; });
    refresh_now = false;
  }
}

void KafkaSource::Core::refresh_watermarks() {
  std::vector<PartitionPtr> parts;
  {
    std::lock_guard<std::mutex> lock(sched->mu);
    parts = sched->partitions_locked();
  }
  struct Marks {
    int64_t lo = -1, hi = -1;
    bool queried = false;
  };
  std::vector<Marks> marks(parts.size());
  bool query = true;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    Marks& m = marks[i];
    if (query) {
      const rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
          rk.get(), parts[i]->topic.c_str(), parts[i]->partition, &m.lo, &m.hi, kRefreshQueryMaxMs);
      m.queried = err == RD_KAFKA_RESP_ERR_NO_ERROR;
      if (!m.queried) query = false;  // cached values for the rest of this round
    }
    if (!m.queried) {
      rd_kafka_get_watermark_offsets(rk.get(), parts[i]->topic.c_str(), parts[i]->partition, &m.lo,
                                     &m.hi);
    }
  }
  const SteadyTime now = steady_now();
  std::lock_guard<std::mutex> lock(sched->mu);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    PartitionState& p = *parts[i];
    if (p.detached) continue;
    if (marks[i].lo >= 0) p.low = marks[i].lo;
    if (marks[i].hi >= 0) p.high = marks[i].hi;
    if (marks[i].queried) p.marks_at = now;
    const int64_t done = p.tracker.committable();
    const int64_t position = done >= 0 ? done : p.committed;
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
  }
}

void KafkaSource::Core::stop_refresher() {
  {
    std::lock_guard<std::mutex> lock(refresh_mu);
    refresh_stop = true;
  }
  refresh_cv.notify_all();
  if (refresher.joinable()) refresher.join();
}

SourceStats KafkaSource::stats() const {
  Core& c = *core_;
  LaneScheduler& sched = *c.sched;
  const SteadyTime now = steady_now();
  SourceStats s;
  std::lock_guard<std::mutex> lock(sched.mu);
  // Folds finished runs into the trackers (the done offsets); loses nothing.
  sched.flush_running_locked();
  double oldest = 0;
  bool unknown = false;
  for (const PartitionPtr& part : sched.partitions_locked()) {
    const PartitionState& p = *part;
    if (p.detached) continue;
    PartitionStatus st;
    st.topic = p.topic;
    st.partition = p.partition;
    st.low_watermark = p.low;
    st.committed = p.committed;
    st.done_offset = p.tracker.committable();
    // Messages seen prove the high watermark is at least one past them.
    st.high_watermark = std::max(p.high, p.tracker.next_offset());
    int64_t position = st.done_offset >= 0 ? st.done_offset : p.committed;
    if (position < 0 || (p.low >= 0 && position < p.low)) position = std::max<int64_t>(p.low, 0);
    st.lag = st.high_watermark >= 0 ? std::max<int64_t>(0, st.high_watermark - position) : 0;
    st.paused = p.paused;
    if (p.marks_at == SteadyTime{}) {
      unknown = true;
    } else {
      oldest = std::max(oldest, std::chrono::duration<double>(now - p.marks_at).count());
    }
    s.total_lag += st.lag;
    s.high_watermark_sum += std::max<int64_t>(0, st.high_watermark);
    s.partitions.push_back(std::move(st));
  }
  s.lag_age_seconds = unknown ? -1.0 : oldest;
#define LAGPILOT_COPY_COUNTER(field, metric, label, in_status, help) s.field = sched.counters.field;
  LAGPILOT_SOURCE_COUNTERS(LAGPILOT_COPY_COUNTER)
#undef LAGPILOT_COPY_COUNTER
  s.unfinished = sched.unfinished_count;
  s.max_unfinished_seen = sched.max_unfinished_seen;
  s.pending = static_cast<int64_t>(sched.pending.size());
  s.max_pending_seen = sched.max_pending_seen;
  s.max_unfinished = c.max_unfinished;
  s.record_age_p99_seconds = sched.last_age_p99;
  s.max_handler_seconds = sched.max_handler_seconds;
  s.paused = sched.refuse_all;
  s.assigned_partitions = static_cast<int>(s.partitions.size());
  s.group = c.group_lag;
  if (s.group.known) {
    s.group.age_seconds = std::chrono::duration<double>(now - c.group_lag_at).count();
  }
  return s;
}

SourceStats KafkaSource::refreshed_stats(double timeout_seconds) {
  Core& c = *core_;
  if (started_ && !stopped_) {
    std::unique_lock<std::mutex> lock(c.refresh_mu);
    // The round under way may have read the partition list already: wait for the next one.
    const uint64_t want = c.refresh_rounds + 2;
    c.refresh_now = true;
    c.refresh_cv.notify_all();
    c.refresh_cv.wait_for(lock, std::chrono::duration<double>(std::max(0.0, timeout_seconds)),
                          [&] { return c.refresh_stop || c.refresh_rounds >= want; });
  }
  return stats();
}

double KafkaSource::take_record_age_p99() {
  LaneScheduler& sched = *core_->sched;
  std::lock_guard<std::mutex> lock(sched.mu);
  sched.last_age_p99 = sched.ages.quantile(0.99);
  sched.ages.clear();
  return sched.last_age_p99;
}

}  // namespace lagpilot
