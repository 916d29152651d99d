// KafkaSource::stats(): counters, watermarks and lag per partition (control thread).
//
// Lag per partition = high watermark - max(done offset, log start), where the done offset is
// what the next commit writes (>= the committed offset; equal to it right after a commit), or
// the committed offset / log start when nothing was done yet. Using the done offset keeps the
// lag from lagging by a commit interval.
//
// With refresh_watermarks this queries the brokers on the caller's thread (blocking, bounded by
// kRefreshBudgetSeconds), and every call resets the record-age histogram: both are kept here,
// in one place, so that moving the refresh off the tick path changes this file only.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "controller/kafka/kafka_source_core.h"

namespace lagpilot {
namespace {

constexpr double kRefreshBudgetSeconds = 2.0;

}  // namespace

SourceStats KafkaSource::stats(bool refresh_watermarks) {
  Core& c = *core_;
  LaneScheduler& sched = *c.sched;
  std::vector<PartitionPtr> parts;
  {
    std::lock_guard<std::mutex> lock(sched.mu);
    parts = sched.partitions_locked();
  }
  std::vector<std::pair<int64_t, int64_t>> marks(parts.size(), {-1, -1});
  if (c.rk && !stopped_) {
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
              c.rk.get(), parts[i]->topic.c_str(), parts[i]->partition, &lo, &hi,
              static_cast<int>(std::min<int64_t>(left, kRefreshQueryMaxMs)));
        }
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) query = false;  // cached values for the rest
      }
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_get_watermark_offsets(c.rk.get(), parts[i]->topic.c_str(), parts[i]->partition,
                                       &lo, &hi);
      }
      marks[i] = {lo, hi};
    }
  }

  SourceStats s;
  std::lock_guard<std::mutex> lock(sched.mu);
  sched.flush_running_locked();
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
#define LAGPILOT_COPY_COUNTER(field, metric, label, in_status, help) s.field = sched.counters.field;
  LAGPILOT_SOURCE_COUNTERS(LAGPILOT_COPY_COUNTER)
#undef LAGPILOT_COPY_COUNTER
  s.unfinished = sched.unfinished_count;
  s.max_unfinished_seen = sched.max_unfinished_seen;
  s.pending = static_cast<int64_t>(sched.pending.size());
  s.max_pending_seen = sched.max_pending_seen;
  s.max_unfinished = c.max_unfinished;
  s.record_age_p99_seconds = sched.ages.quantile(0.99);
  sched.ages.clear();
  s.max_handler_seconds = sched.max_handler_seconds;
  s.paused = sched.refuse_all;
  s.assigned_partitions = static_cast<int>(s.partitions.size());
  return s;
}

}  // namespace lagpilot
