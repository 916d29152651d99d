// Retention checks of the Kafka source (poll thread).
//
// Each partition remembers the next offset it expects (the committed offset at assignment,
// then last offset + 1). When a message arrives above it, the gap is checked against the log
// start offset (librdkafka's value from the last fetch response, or a ListOffsets query):
// records in [expected, min(offset, log start)) expired before they were consumed. They are
// counted in lost_to_retention and logged as a warning naming the topic, partition and offset
// range; consumption goes on from the log start (auto.offset.reset=earliest, the default we
// set). Gaps above the log start (compaction, transaction markers) are not retention losses;
// they are counted apart (skipped_gap) and logged (see check_gap). A new group
// without a committed offset starts at the log start and counts nothing: it never owned the
// older records.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

#include "controller/kafka/kafka_source_core.h"

namespace lagpilot {

// Forward gaps: records below the log start offset expired before they were consumed
// (lost_to_retention); the rest of the gap lies above the log start: compaction, transaction
// markers, or records the broker no longer serves for a reason we cannot see. Those are
// counted too (skipped_gap) and logged, so that no offset is committed past in silence.
// Backward gaps: offsets below the next expected one are re-deliveries, unless the high
// watermark is below the expected offset: the log was truncated (or the topic recreated) and
// its new records reuse offsets we already committed past; they are counted
// (skipped_truncation, not duplicates_skipped) and logged.
void KafkaSource::Core::check_gap(const OffsetGap& g) {
  const std::string name = partition_name(g.part->topic, g.part->partition);
  int64_t low = -1, high = -1;
  rd_kafka_resp_err_t err = rd_kafka_get_watermark_offsets(rk.get(), g.part->topic.c_str(),
                                                           g.part->partition, &low, &high);
  if (g.offset < g.expected) {
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR || high < 0 || high >= g.expected) return;
    std::lock_guard<std::mutex> lock(sched->mu);
    sched->counters.duplicates_skipped -= std::min(sched->counters.duplicates_skipped, g.count);
    sched->counters.skipped_truncation += g.count;
    spdlog::warn(
        "kafka {}: {} records from offset {} are below the next expected offset {} and the "
        "high watermark is {}: the log was truncated or recreated; not handled (counted in "
        "lagpilot_records_skipped_total{{reason=\"truncation\"}})",
        name, g.count, g.offset, g.expected, high);
    return;
  }
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR || low < 0) {
    err = rd_kafka_query_watermark_offsets(rk.get(), g.part->topic.c_str(), g.part->partition, &low,
                                           &high, kRefreshQueryMaxMs);
  }
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR || low < 0) {
    std::lock_guard<std::mutex> lock(sched->mu);
    sched->counters.skipped_gap += static_cast<uint64_t>(g.offset - g.expected);
    spdlog::warn(
        "kafka {}: offsets {}..{} were skipped and the log start offset could not be read "
        "({}): cannot tell retention loss from compaction; counted as an offset gap",
        name, g.expected, g.offset - 1, rd_kafka_err2str(err));
    return;
  }
  const int64_t lost_end = std::min(g.offset, low);
  std::lock_guard<std::mutex> lock(sched->mu);
  g.part->low = std::max(g.part->low, low);
  if (high >= 0) g.part->high = std::max(g.part->high, high);
  if (lost_end > g.expected) {
    const int64_t lost = lost_end - g.expected;
    sched->counters.lost_to_retention += static_cast<uint64_t>(lost);
    spdlog::warn(
        "kafka {}: {} records (offsets {}..{}) expired by retention before they were consumed "
        "(log start is now {}); continuing from offset {}",
        name, lost, g.expected, lost_end - 1, low, g.offset);
  }
  const int64_t gap_from = std::max(g.expected, lost_end);
  if (g.offset > gap_from) {
    sched->counters.skipped_gap += static_cast<uint64_t>(g.offset - gap_from);
    // Transactional producers leave one marker per transaction: the log is bounded, the count
    // is not.
    const uint64_t n = ++g.part->gap_warnings;
    if (n <= 10 || n % 1000 == 0) {
      spdlog::warn(
          "kafka {}: offsets {}..{} (above the log start {}) were not delivered: compaction, "
          "transaction markers or records the broker does not serve; committed past and counted "
          "(gap {} of this partition{})",
          name, gap_from, g.offset - 1, low, n,
          n == 10 ? "; from now on every 1000th is logged" : "");
    }
  }
}

// Only with auto.offset.reset=error: librdkafka stops the partition. Count what expired.
void KafkaSource::Core::count_out_of_range(const rd_kafka_message_t* m, const std::string& where) {
  spdlog::error(
      "kafka {}: offset {} is out of range and auto.offset.reset=error: partition stopped "
      "({})",
      where, m->offset, rd_kafka_message_errstr(m));
  if (m->rkt == nullptr || m->offset < 0) return;
  int64_t low = -1, high = -1;
  if (rd_kafka_query_watermark_offsets(rk.get(), rd_kafka_topic_name(m->rkt), m->partition, &low,
                                       &high, kRefreshQueryMaxMs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
      low > m->offset) {
    std::lock_guard<std::mutex> lock(sched->mu);
    sched->counters.lost_to_retention += static_cast<uint64_t>(low - m->offset);
    spdlog::warn("kafka {}: {} records (offsets {}..{}) expired by retention", where,
                 low - m->offset, m->offset, low - 1);
  }
}

}  // namespace lagpilot
