// Retention checks of the Kafka source (poll thread).
//
// Each partition remembers the next offset it expects (the committed offset at assignment,
// then last offset + 1). When a message arrives above it, the gap is checked against the log
// start offset (librdkafka's value from the last fetch response, or a ListOffsets query):
// records in [expected, min(offset, log start)) expired before they were consumed. They are
// counted in lost_to_retention and logged as a warning naming the topic, partition and offset
// range; consumption goes on from the log start (auto.offset.reset=earliest, the default we
// set). Gaps above the log start (compaction, transaction markers) are not losses. A new group
// without a committed offset starts at the log start and counts nothing: it never owned the
// older records.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "controller/kafka/kafka_source_core.h"

namespace lagpilot {

// Records below the log start offset expired before they were consumed (see above).
void KafkaSource::Core::check_gap(const OffsetGap& g) {
  int64_t low = -1, high = -1;
  rd_kafka_resp_err_t err = rd_kafka_get_watermark_offsets(rk.get(), g.part->topic.c_str(),
                                                           g.part->partition, &low, &high);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR || low < 0) {
    err = rd_kafka_query_watermark_offsets(rk.get(), g.part->topic.c_str(), g.part->partition, &low,
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
  std::lock_guard<std::mutex> lock(sched->mu);
  g.part->low = std::max(g.part->low, low);
  if (high >= 0) g.part->high = std::max(g.part->high, high);
  if (lost_end <= g.expected) return;  // a gap above the log start: compaction, markers
  const int64_t lost = lost_end - g.expected;
  sched->counters.lost_to_retention += static_cast<uint64_t>(lost);
  spdlog::warn(
      "kafka {}: {} records (offsets {}..{}) expired by retention before they were consumed "
      "(log start is now {}); continuing from offset {}",
      partition_name(g.part->topic, g.part->partition), lost, g.expected, lost_end - 1, low,
      g.offset);
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
