#pragma once
// The Kafka source's cumulative counters, declared once. From this list come SourceStats's
// fields (kafka_source.h), the source's own counters (SourceCounters below), the Prometheus
// counters (controller/metrics/metrics.cpp) and the "counters" object of the status JSON
// (RuntimeMetrics::last_tick_status).
//
// X(field, metric, label, in_status, help):
//   field      SourceStats member and status JSON key
//   metric     Prometheus counter family fed by the field's deltas, or nullptr for none
//   label      "name=value" label of that family's series, or nullptr; entries that share a
//              family list it next to each other, the first one carrying the family's help
//   in_status  listed in the status JSON's "counters"
//   help       what it counts (the metric's help text when it is the family's first entry)
// (commits counts successful commit requests, commit_failures failed ones: one family, by
// result.)
//
// Thread-safety: declarations only.

#include <cstdint>

#define LAGPILOT_SOURCE_COUNTERS(X)                                                         \
  X(consumed, "lagpilot_messages_consumed_total", nullptr, true,                            \
    "Messages taken from Kafka and dispatched.")                                            \
  X(processed, "lagpilot_messages_processed_total", nullptr, true,                          \
    "Messages whose handler returned.")                                                     \
  X(dropped_incomplete_batch, "lagpilot_batch_dropped_messages_total", nullptr, true,       \
    "Messages of batches that did not fill within batch.max_wait_seconds, not "             \
    "delivered (batch.drop_last); their offsets complete.")                                 \
  X(shed, nullptr, nullptr, true,                                                           \
    "Messages the handler finished without processing them (shed under backpressure; "      \
    "lagpilot_records_shed_total): not in processed; their offsets complete.")              \
  X(failed, "lagpilot_messages_failed_total", nullptr, true,                                \
    "Messages whose handler threw; their offsets complete (under Service, the "             \
    "delivery pipeline has retried and dead-lettered them first).")                         \
  X(lost_to_retention, "lagpilot_messages_lost_to_retention_total", nullptr, true,          \
    "Records that expired (log retention) before this consumer group consumed them.")       \
  X(commits, "lagpilot_offset_commits_total", "result=success", true,                       \
    "Offset commit requests, by result (success, failure).")                                \
  X(commit_failures, "lagpilot_offset_commits_total", "result=failure", true,               \
    "Offset commit requests that failed.")                                                  \
  X(dropped, nullptr, nullptr, true,                                                        \
    "Messages consumed, then given up (revoke or stop timeout); they are delivered again.") \
  X(duplicates_skipped, nullptr, nullptr, true,                                             \
    "Re-deliveries of an offset already dispatched, skipped.")                              \
  X(skipped_gap, "lagpilot_records_skipped_total", "reason=offset_gap", true,               \
    "Records skipped without being handled, by reason (offset_gap, offset_reset, "          \
    "truncation).")                                                                         \
  X(skipped_reset, "lagpilot_records_skipped_total", "reason=offset_reset", true,           \
    "Records skipped by auto.offset.reset (a group without a committed offset).")           \
  X(skipped_truncation, "lagpilot_records_skipped_total", "reason=truncation", true,        \
    "Offsets consumed again below the position after a truncation (counted, not handled).") \
  X(refused_while_paused, nullptr, nullptr, false,                                          \
    "Messages delivered despite a pause, not taken; fetched again on resume.")              \
  X(pauses, "lagpilot_partition_pauses_total", nullptr, true,                               \
    "Times the assigned partitions were paused (backpressure or operator).")                \
  X(resumes, nullptr, nullptr, true, "Times the paused partitions were resumed.")           \
  X(seek_failures, "lagpilot_fetcher_seek_failures_total", nullptr, true,                   \
    "Seeks restarting a partition's fetcher (on resume) that failed; retried every poll, "  \
    "the partition's messages refused meanwhile.")                                          \
  X(rebalances, "lagpilot_rebalances_total", nullptr, true,                                 \
    "Rebalance callbacks that gave this member partitions or took them away.")              \
  X(handed_over_uncommitted, "lagpilot_rebalance_uncommitted_records_total", nullptr, true, \
    "Offsets consumed on partitions given up (revoked or lost) beyond their last "          \
    "acknowledged commit: at most this many records can be delivered again by the next "    \
    "owner.")

namespace lagpilot {

// The counters as plain fields, for the source's internals (guarded by their owner's lock).
struct SourceCounters {
#define LAGPILOT_SOURCE_COUNTER_FIELD(field, metric, label, in_status, help) uint64_t field = 0;
  LAGPILOT_SOURCE_COUNTERS(LAGPILOT_SOURCE_COUNTER_FIELD)
#undef LAGPILOT_SOURCE_COUNTER_FIELD
};

}  // namespace lagpilot
