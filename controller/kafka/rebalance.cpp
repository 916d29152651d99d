// Rebalance handling of the Kafka source (poll thread, inside rd_kafka_consumer_poll).
//
// Assignment: the new partitions join the scheduler's table; their committed offsets are read
// right after the poll returns (resolve_committed), before any message is dispatched: they are
// the expected next offset for the retention check and the lag base.
//
// Revocation: the revoked partitions' consumed messages (pool queue, running, lanes, pending)
// are given up to revoke_timeout_seconds to finish; what is left is dropped (it was not
// committed, so the next owner gets it; a run in progress stops before its next message), then
// the done prefix is committed synchronously and the partitions are unassigned.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "controller/kafka/kafka_source_core.h"

namespace lagpilot {

void KafkaSource::Core::rebalance_cb(rd_kafka_t*, rd_kafka_resp_err_t err,
                                     rd_kafka_topic_partition_list_t* parts, void* opaque) {
  static_cast<Core*>(opaque)->on_rebalance(err, parts);
}

void KafkaSource::Core::on_rebalance(rd_kafka_resp_err_t err,
                                     rd_kafka_topic_partition_list_t* parts) {
  join_watch.rebalanced();
  const bool cooperative = std::strcmp(rd_kafka_rebalance_protocol(rk.get()), "COOPERATIVE") == 0;
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    on_assign(parts, cooperative);
  } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
    on_revoke(parts, cooperative, rd_kafka_assignment_lost(rk.get()) != 0);
  } else {
    spdlog::error("kafka: rebalance failed: {}; dropping the assignment", rd_kafka_err2str(err));
    on_revoke(parts, cooperative, true);
  }
}

// Called inside rd_kafka_consumer_poll. Does not block: the committed offsets are read
// right after the poll returns (resolve_committed), before any message is dispatched. (A
// blocking rd_kafka_committed() inside the callback can stall for its whole timeout while
// the group is rebalancing, and the group then rebalances again.) The new partitions are not
// paused here either; see update_pause_state.
void KafkaSource::Core::on_assign(rd_kafka_topic_partition_list_t* parts, bool cooperative) {
  std::string names;
  {
    std::lock_guard<std::mutex> lock(sched->mu);
    if (parts->cnt > 0) ++sched->counters.rebalances;
    for (int i = 0; i < parts->cnt; ++i) {
      const rd_kafka_topic_partition_t& e = parts->elems[i];
      PartitionPtr part = sched->add_partition_locked(e.topic, e.partition);
      awaiting_committed.push_back(part);
      names += (names.empty() ? "" : ", ") + partition_name(part->topic, part->partition);
    }
    assigned.store(static_cast<int>(sched->partitions.size()));
  }
  if (cooperative) {
    if (RdKafkaError e{rd_kafka_incremental_assign(rk.get(), parts)}) {
      spdlog::error("kafka: incremental assign failed: {}", rd_kafka_error_string(e.get()));
    }
  } else {
    const rd_kafka_resp_err_t err = rd_kafka_assign(rk.get(), parts);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
      spdlog::error("kafka: assign failed: {}", rd_kafka_err2str(err));
  }
  spdlog::info("kafka: assigned {} partitions: {}", parts->cnt, names);
}

// Poll thread, after a poll that assigned partitions and before dispatching: reads their
// committed offsets (the expected next offset for the retention check, and the lag base).
void KafkaSource::Core::resolve_committed() {
  std::vector<PartitionPtr> parts;
  parts.swap(awaiting_committed);
  RdKafkaPartitionList list = make_partition_list(static_cast<int>(parts.size()));
  for (const auto& p : parts)
    rd_kafka_topic_partition_list_add(list.get(), p->topic.c_str(), p->partition);
  const rd_kafka_resp_err_t err = rd_kafka_committed(rk.get(), list.get(), kCommittedQueryMs);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    spdlog::warn(
        "kafka: reading committed offsets failed ({}); records that expired before "
        "this assignment cannot be counted, and lag counts from the log start until "
        "the first commit",
        rd_kafka_err2str(err));
  }
  // auto.offset.reset=latest, applied here: only to the partitions the group has provably no
  // committed offset for (the read succeeded), each started at its high watermark.
  std::vector<int64_t> start_at(parts.size(), -1);
  if (reset_to_latest && err == RD_KAFKA_RESP_ERR_NO_ERROR)
    reset_to_end(list.get(), parts, start_at);
  std::string names;
  {
    std::lock_guard<std::mutex> lock(sched->mu);
    for (int i = 0; i < list->cnt; ++i) {
      const rd_kafka_topic_partition_t& e = list->elems[i];
      PartitionState& p = *parts[static_cast<std::size_t>(i)];
      const int64_t offset =
          err == RD_KAFKA_RESP_ERR_NO_ERROR && e.err == RD_KAFKA_RESP_ERR_NO_ERROR && e.offset >= 0
              ? e.offset
              : -1;
      if (p.revoked || p.tracker.next_offset() >= 0) continue;  // (nothing dispatched yet)
      sched->start_partition_locked(p, offset);
      // Not p.committed: the broker holds no offset yet; the first commit writes this one.
      if (start_at[static_cast<std::size_t>(i)] >= 0) {
        p.tracker.reset(start_at[static_cast<std::size_t>(i)]);
      }
      if (offset >= 0) {
        names += (names.empty() ? "" : ", ") + partition_name(p.topic, p.partition) + "@" +
                 std::to_string(offset);
      }
    }
  }
  if (!names.empty()) spdlog::info("kafka: committed offsets: {}", names);
}

void KafkaSource::Core::reset_to_end(const rd_kafka_topic_partition_list_t* committed,
                                     const std::vector<PartitionPtr>& parts,
                                     std::vector<int64_t>& start_at) {
  RdKafkaPartitionList seeks = make_partition_list(static_cast<int>(parts.size()));
  int64_t skipped = 0;
  std::string names;
  for (int i = 0; i < committed->cnt; ++i) {
    const rd_kafka_topic_partition_t& e = committed->elems[i];
    if (e.err != RD_KAFKA_RESP_ERR_NO_ERROR || e.offset >= 0) continue;  // has one, or unknown
    int64_t low = -1, high = -1;
    if (rd_kafka_query_watermark_offsets(rk.get(), e.topic, e.partition, &low, &high,
                                         kRefreshQueryMaxMs) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        high < 0) {
      spdlog::warn(
          "kafka {}: auto.offset.reset=latest: the high watermark could not be read; starting "
          "from the log start instead",
          partition_name(e.topic, e.partition));
      continue;
    }
    start_at[static_cast<std::size_t>(i)] = high;
    rd_kafka_topic_partition_list_add(seeks.get(), e.topic, e.partition)->offset = high;
    skipped += high - std::max<int64_t>(low, 0);
    names += (names.empty() ? "" : ", ") + partition_name(e.topic, e.partition) + "@" +
             std::to_string(high);
  }
  if (seeks->cnt == 0) return;
  // Asynchronous (timeout 0): the fetchers restart from there.
  if (RdKafkaError e{rd_kafka_seek_partitions(rk.get(), seeks.get(), 0)}) {
    spdlog::warn("kafka: auto.offset.reset=latest: seek failed: {}",
                 rd_kafka_error_string(e.get()));
  }
  {
    std::lock_guard<std::mutex> lock(sched->mu);
    sched->counters.skipped_reset += static_cast<uint64_t>(skipped);
  }
  spdlog::warn(
      "kafka: auto.offset.reset=latest and no committed offset for {}: {} records skipped, "
      "never handled (lagpilot_records_skipped_total{{reason=\"offset_reset\"}})",
      names, skipped);
}

void KafkaSource::Core::on_revoke(rd_kafka_topic_partition_list_t* parts, bool cooperative,
                                  bool lost) {
  std::vector<PartitionPtr> revoked;
  SteadyTime deadline;
  {
    std::lock_guard<std::mutex> lock(sched->mu);
    for (int i = 0; i < parts->cnt; ++i) {
      if (PartitionPtr p = sched->find_locked(parts->elems[i].topic, parts->elems[i].partition)) {
        revoked.push_back(std::move(p));
      }
    }
    // Let what was consumed finish (bounded), unless the partitions are lost already.
    deadline = steady_after(lost || sched->closed.load() ? 0.0 : config.revoke_timeout_seconds);
  }
  if (stop_requested.load(std::memory_order_acquire)) deadline = std::min(deadline, stop_deadline);
  const auto [given_up, still_running] = sched->drain_and_give_up(revoked, deadline);
  if (given_up > 0 || still_running > 0) {
    spdlog::warn(
        "kafka: revoking {} partitions{}: {} consumed messages dropped before reaching a "
        "worker, {} still queued or running after the timeout; they were not committed and "
        "will be delivered again",
        revoked.size(), lost ? " (lost)" : "", given_up, still_running);
  }
  if (!lost) commit_sync(revoked);
  // librdkafka keeps an application pause on a partition after it is unassigned (librdkafka
  // issue #1849): were this consumer assigned the partition again, it would never fetch it
  // (and, no message arriving, update_pause_state would never resume it). So resume what we
  // paused before letting it go.
  std::vector<PartitionPtr> paused_parts;
  {
    std::lock_guard<std::mutex> lock(sched->mu);
    for (auto& p : revoked) {
      if (p->paused) paused_parts.push_back(p);
    }
  }
  if (!paused_parts.empty()) set_paused(paused_parts, false);  // (no seek: they are revoked)
  std::string exposure;
  {
    std::lock_guard<std::mutex> lock(sched->mu);
    if (!revoked.empty()) ++sched->counters.rebalances;
    for (auto& p : revoked) {
      // What the next owner may deliver again: from the last acknowledged commit (or the log
      // start, if the group has none) up to the highest offset this member consumed.
      const int64_t consumed_to = p->tracker.next_offset();
      const int64_t base = p->committed >= 0 ? p->committed : std::max<int64_t>(p->low, 0);
      const int64_t uncommitted = consumed_to >= 0 ? std::max<int64_t>(0, consumed_to - base) : 0;
      sched->counters.handed_over_uncommitted += static_cast<uint64_t>(uncommitted);
      if (uncommitted > 0) {
        exposure += (exposure.empty() ? "" : ", ") + partition_name(p->topic, p->partition) + " " +
                    std::to_string(base) + ".." + std::to_string(consumed_to);
      }
      sched->remove_partition_locked(*p);
    }
    assigned.store(static_cast<int>(sched->partitions.size()));
  }
  if (!exposure.empty()) {
    spdlog::warn("kafka: handed over uncommitted (may be delivered again): {}", exposure);
  }
  if (cooperative) {
    if (RdKafkaError e{rd_kafka_incremental_unassign(rk.get(), parts)}) {
      spdlog::error("kafka: incremental unassign failed: {}", rd_kafka_error_string(e.get()));
    }
  } else {
    rd_kafka_assign(rk.get(), nullptr);
  }
  spdlog::info("kafka: revoked {} partitions{}", parts->cnt, lost ? " (assignment lost)" : "");
}

}  // namespace lagpilot
