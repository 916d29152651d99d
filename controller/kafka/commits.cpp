// Offset commits of the Kafka source (poll thread). Commits carry explicit offsets
// (enable.auto.commit=false): per partition the done prefix (LaneScheduler: the highest offset
// below which everything dispatched is done), async every commit_interval_seconds, sync on
// partition revocation and on shutdown. At-least-once: what was not committed is delivered
// again after a restart or a rebalance.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "controller/kafka/kafka_source_core.h"

namespace lagpilot {

// Builds the list of offsets worth committing for these partitions (empty if none). Requires
// sched->mu.
RdKafkaPartitionList KafkaSource::Core::commit_list_locked(const std::vector<PartitionPtr>& parts) {
  sched->flush_running_locked();
  RdKafkaPartitionList list;
  for (const auto& p : parts) {
    const int64_t offset = p->tracker.committable();
    if (offset < 0 || offset <= p->committed) continue;
    if (!list) list = make_partition_list(static_cast<int>(parts.size()));
    rd_kafka_topic_partition_list_add(list.get(), p->topic.c_str(), p->partition)->offset = offset;
  }
  return list;
}

// Async commit of every assigned partition's done prefix; the result arrives through
// on_commit_result from a later consumer_poll.
void KafkaSource::Core::commit_async() {
  // Not while a group join is on the wire: the commit would queue behind the JoinGroup, be
  // refused with the old generation, and make librdkafka 2.0 drop the assignment (see
  // group_join_watch.h). The done prefix is committed after the join instead (or in the revoke
  // callback, for the partitions that move).
  if (join_in_progress()) {
    if (commits_held++ == 0) {
      spdlog::info("kafka: a group join is in progress: periodic commits wait until it ends");
    }
    return;
  }
  commits_held = 0;
  RdKafkaPartitionList list;
  {
    std::lock_guard<std::mutex> lock(sched->mu);
    list = commit_list_locked(sched->partitions_locked());
  }
  if (!list) return;
  const rd_kafka_resp_err_t err = rd_kafka_commit(rk.get(), list.get(), 1);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    std::lock_guard<std::mutex> lock(sched->mu);
    ++sched->counters.commit_failures;
    spdlog::warn("kafka: async commit failed to start: {}", rd_kafka_err2str(err));
  }
}

// Sync commit; on_commit_result runs inside this call.
void KafkaSource::Core::commit_sync(const std::vector<PartitionPtr>& parts) {
  RdKafkaPartitionList list;
  {
    std::lock_guard<std::mutex> lock(sched->mu);
    list = commit_list_locked(parts);
  }
  if (!list) return;
  const rd_kafka_resp_err_t err =
      rd_kafka_commit_queue(rk.get(), list.get(), nullptr, &Core::commit_cb, this);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    spdlog::warn("kafka: sync commit of {} partitions failed: {}", list->cnt,
                 rd_kafka_err2str(err));
  }
}

void KafkaSource::Core::on_commit_result(rd_kafka_resp_err_t err,
                                         const rd_kafka_topic_partition_list_t* offsets) {
  if (err == RD_KAFKA_RESP_ERR__NO_OFFSET) return;  // nothing to commit
  std::lock_guard<std::mutex> lock(sched->mu);
  SourceCounters& counters = sched->counters;
  bool any_failed = err != RD_KAFKA_RESP_ERR_NO_ERROR;
  for (int i = 0; offsets != nullptr && i < offsets->cnt; ++i) {
    const rd_kafka_topic_partition_t& e = offsets->elems[i];
    if (e.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      any_failed = true;
      continue;
    }
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR || e.offset < 0) continue;
    if (const PartitionPtr p = sched->find_locked(e.topic, e.partition)) {
      p->committed = std::max(p->committed, e.offset);
    }
  }
  if (any_failed) {
    ++counters.commit_failures;
    if (counters.commit_failures <= 20 || counters.commit_failures % 100 == 0) {
      spdlog::warn(
          "kafka: offset commit failed ({} failures so far): {}", counters.commit_failures,
          rd_kafka_err2str(err != RD_KAFKA_RESP_ERR_NO_ERROR ? err : RD_KAFKA_RESP_ERR_UNKNOWN));
    }
  } else {
    ++counters.commits;
  }
}

void KafkaSource::Core::commit_cb(rd_kafka_t*, rd_kafka_resp_err_t err,
                                  rd_kafka_topic_partition_list_t* offsets, void* opaque) {
  static_cast<Core*>(opaque)->on_commit_result(err, offsets);
}

}  // namespace lagpilot
