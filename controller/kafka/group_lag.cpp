// The group-wide lag (lag refresher thread): every partition of the subscribed topics, whether
// this member holds it or not. A member with no partitions (a standby, or one whose peer died
// and whose session has not timed out yet) otherwise reports a lag of 0 while the group's
// backlog grows; this view is what the fleet-level signals (lagpilot_group_lag, the
// group-wide lagpilot_recommended_replicas) are built from.
//
// One round: the subscribed topics' partitions (from metadata, read again every 30 s or after a
// failed round, as partitions are added rarely), the group's committed
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
constexpr double kGroupPartitionsMaxAgeSeconds = 30;
constexpr double kGroupLagWarnAfterSeconds = 10;

}  // namespace

// The partitions of every subscribed topic, from a metadata request per topic; "" on success,
// else what failed.
std::string KafkaSource::Core::read_group_partitions() {
  std::vector<std::pair<std::string, int32_t>> partitions;
  for (const std::string& topic : config.topics) {
    RdKafkaTopic rkt{rd_kafka_topic_new(rk.get(), topic.c_str(), nullptr)};
    const rd_kafka_metadata_t* raw = nullptr;
    const rd_kafka_resp_err_t err =
        rkt ? rd_kafka_metadata(rk.get(), 0, rkt.get(), &raw, kGroupQueryMs)
            : RD_KAFKA_RESP_ERR__INVALID_ARG;
    RdKafkaMetadata md{raw};
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR || !md || md->topic_cnt < 1 ||
        md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return "metadata of " + topic + ": " +
             rd_kafka_err2str(err != RD_KAFKA_RESP_ERR_NO_ERROR
                                  ? err
                                  : (md && md->topic_cnt > 0 ? md->topics[0].err
                                                             : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC));
    }
    const rd_kafka_metadata_topic_t& t = md->topics[0];
    for (int i = 0; i < t.partition_cnt; ++i) partitions.emplace_back(topic, t.partitions[i].id);
  }
  group_partitions = std::move(partitions);
  group_partitions_at = steady_now();
  return "";
}

void KafkaSource::Core::refresh_group_lag() {
  GroupLagView view;
  std::string failed;
  const bool stale = group_partitions_at == SteadyTime{} ||
                     std::chrono::duration<double>(steady_now() - group_partitions_at).count() >
                         kGroupPartitionsMaxAgeSeconds;
  if (stale) failed = read_group_partitions();
  RdKafkaPartitionList list =
      make_partition_list(static_cast<int>(std::max<std::size_t>(1, group_partitions.size())));
  for (const auto& [topic, partition] : group_partitions) {
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), partition);
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
    group_partitions_at = SteadyTime{};  // read the partitions again next round
    // A member's first rounds can fail while the group coordinator is still being found: that
    // is logged at debug level, and a warning only once reads have failed for a while.
    const SteadyTime now = steady_now();
    if (group_lag_failing_since == SteadyTime{}) group_lag_failing_since = now;
    const double failing_for = std::chrono::duration<double>(now - group_lag_failing_since).count();
    const std::string what = failed.empty() ? "no partitions" : failed;
    if (!group_lag_warned && failing_for >= kGroupLagWarnAfterSeconds) {
      group_lag_warned = true;
      spdlog::warn(
          "kafka: the group-wide lag could not be read for {:.0f} s ({}); keeping the "
          "last view",
          failing_for, what);
    } else {
      spdlog::debug("kafka: the group-wide lag could not be read ({})", what);
    }
    return;
  }
  if (group_lag_warned) spdlog::info("kafka: the group-wide lag is read again");
  group_lag_warned = false;
  group_lag_failing_since = SteadyTime{};
  for (auto& [name, tl] : topics) view.topics.push_back(std::move(tl));
  view.known = true;
  std::lock_guard<std::mutex> lock(sched->mu);
  group_lag_at = steady_now();
  view.read_at_seconds = std::chrono::duration<double>(group_lag_at.time_since_epoch()).count();
  group_lag = std::move(view);
}

}  // namespace lagpilot
