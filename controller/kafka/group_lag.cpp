// The group-wide lag (lag refresher thread): every partition of the subscribed topics, whether
// this member holds it or not. A member with no partitions (a standby, or one whose peer died
// and whose session has not timed out yet) otherwise reports a lag of 0 while the group's
// backlog grows; this view is what the fleet-level signals (lagpilot_group_lag, the
// group-wide lagpilot_recommended_replicas) are built from.
//
// One round: metadata for the subscribed topics (their partitions), the group's committed
// offsets for all of them (one OffsetFetch: it does not need an assignment), then each
// partition's watermarks (a query for each; a failure ends the round and the previous view is
// kept, so a slow broker costs one timeout per round). Every call blocks this thread only.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "controller/kafka/kafka_source_core.h"

namespace lagpilot {
namespace {

constexpr int kGroupQueryMs = 1000;  // each broker request of a round, at most

}  // namespace

void KafkaSource::Core::refresh_group_lag() {
  GroupLagView view;
  std::string failed;
  RdKafkaPartitionList list = make_partition_list(16);
  for (const std::string& topic : config.topics) {
    RdKafkaTopic rkt{rd_kafka_topic_new(rk.get(), topic.c_str(), nullptr)};
    const rd_kafka_metadata_t* raw = nullptr;
    const rd_kafka_resp_err_t err =
        rkt ? rd_kafka_metadata(rk.get(), 0, rkt.get(), &raw, kGroupQueryMs)
            : RD_KAFKA_RESP_ERR__INVALID_ARG;
    RdKafkaMetadata md{raw};
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR || !md || md->topic_cnt < 1 ||
        md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      failed = "metadata of " + topic + ": " +
               rd_kafka_err2str(err != RD_KAFKA_RESP_ERR_NO_ERROR
                                    ? err
                                    : (md && md->topic_cnt > 0 ? md->topics[0].err
                                                               : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC));
      break;
    }
    const rd_kafka_metadata_topic_t& t = md->topics[0];
    for (int i = 0; i < t.partition_cnt; ++i) {
      rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), t.partitions[i].id);
    }
  }
  if (failed.empty() && list->cnt > 0) {
    const rd_kafka_resp_err_t err = rd_kafka_committed(rk.get(), list.get(), kGroupQueryMs);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      failed = std::string("the group's committed offsets: ") + rd_kafka_err2str(err);
    }
  }
  std::map<std::string, GroupTopicLag> topics;
  for (int i = 0; failed.empty() && i < list->cnt; ++i) {
    const rd_kafka_topic_partition_t& e = list->elems[i];
    int64_t low = -1, high = -1;
    const rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(rk.get(), e.topic, e.partition,
                                                                     &low, &high, kGroupQueryMs);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      failed =
          "watermarks of " + partition_name(e.topic, e.partition) + ": " + rd_kafka_err2str(err);
      break;
    }
    GroupPartitionLag p;
    p.topic = e.topic;
    p.partition = e.partition;
    p.high_watermark = high;
    p.committed = e.err == RD_KAFKA_RESP_ERR_NO_ERROR && e.offset >= 0 ? e.offset : -1;
    // No committed offset: the group starts at the log start (auto.offset.reset=earliest,
    // lagpilot's default), so all of it is behind.
    const int64_t position = std::max(p.committed, std::max<int64_t>(low, 0));
    p.lag = std::max<int64_t>(0, high - position);
    view.total_lag += p.lag;
    view.high_watermark_sum += std::max<int64_t>(0, high);
    GroupTopicLag& tl = topics[p.topic];
    tl.topic = p.topic;
    ++tl.partitions;
    tl.lag += p.lag;
    view.partitions.push_back(std::move(p));
  }
  if (!failed.empty() || view.partitions.empty()) {
    if (!group_lag_warned) {
      group_lag_warned = true;
      spdlog::warn("kafka: the group-wide lag could not be read ({}); keeping the last view",
                   failed.empty() ? "no partitions" : failed);
    }
    return;
  }
  group_lag_warned = false;
  for (auto& [name, tl] : topics) view.topics.push_back(std::move(tl));
  view.known = true;
  std::lock_guard<std::mutex> lock(sched->mu);
  group_lag_at = steady_now();
  view.read_at_seconds = std::chrono::duration<double>(group_lag_at.time_since_epoch()).count();
  group_lag = std::move(view);
}

}  // namespace lagpilot
