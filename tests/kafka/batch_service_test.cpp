// Batch delivery end to end on the embedded broker (lagpilot::Service with a BatchHandler):
// sequence-numbered messages over 4 partitions, batches of at most 50 with drop_last and a
// short max_wait_seconds, incomplete batches produced to the shed topic. Every sequence is
// either processed exactly once in a batch or dropped (counted, on the shed topic with its
// reason header); no batch mixes partitions; each batch's offsets ascend without a gap; key
// order holds across batches; every offset is committed; /metrics counts the batches and the
// dropped messages.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "controller/loadgen/embedded_broker.h"
#include "controller/loadgen/message_codec.h"
#include "controller/loadgen/producer.h"
#include "lagpilot/lagpilot.h"
#include "tests/common/sequence_ledger.h"
#include "tests/common/wait.h"
#include "tests/kafka/kafka_test_util.h"

namespace lagpilot {
namespace {

using lagpilot::testing::SequenceLedger;
using lagpilot::testing::wait_until;

constexpr uint64_t kMessages = 2001;  // (4 partitions cannot all hold multiples of 50)
constexpr int kPartitions = 4;
constexpr int kMaxMessages = 50;

double metric_value(const std::string& page, const std::string& series) {
  std::istringstream in(page);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

TEST(BatchService, EverySequenceIsProcessedOnceOrDroppedAndNoBatchMixesPartitions) {
  EmbeddedBroker broker(EmbeddedBrokerOptions{1, {{"events", kPartitions}, {"events.shed", 1}}});
  const AppConfig config = Service::config_from_json(
      {{"broker", "external"},
       {"tick_seconds", 0.2},
       {"policy", {{"name", "static"}, {"params", {{"workers", 4}}}}},
       {"guards", {{"min_workers", 4}, {"max_workers", 4}, {"hard_min_workers", 1}}},
       {"http", {{"enabled", true}, {"port", 0}}},
       {"kafka",
        {{"bootstrap_servers", broker.bootstrap_servers()},
         {"commit_interval_seconds", 0.2},
         {"properties", {{"session.timeout.ms", "6000"}}}}},
       {"batch", {{"max_messages", kMaxMessages}, {"max_wait_seconds", 0.3}, {"drop_last", true}}},
       // The shed topic, for the dropped incomplete batches; shedding itself never starts.
       {"shedding",
        {{"after_pressure_seconds", 3600},
         {"max_age_seconds", 3600},
         {"to_topic", "events.shed"}}}});
  SequenceLedger ledger(kMessages, 16);
  std::mutex mu;  // guards the fields below
  uint64_t batches = 0, mixed = 0, out_of_order = 0, oversized = 0;
  BatchHandler handler = [&](std::span<const SourceMessage> batch) {
    bool mixes = false, gap = false;
    for (std::size_t i = 1; i < batch.size(); ++i) {
      mixes = mixes || batch[i].partition != batch[0].partition;
      gap = gap || batch[i].offset != batch[i - 1].offset + 1;
    }
    for (const SourceMessage& m : batch) ledger.record(m, true);  // key order too
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard lock(mu);
    ++batches;
    mixed += mixes;
    out_of_order += gap;
    oversized += batch.size() > static_cast<std::size_t>(kMaxMessages);
  };
  Service service(config, handler);
  service.start();
  ASSERT_TRUE(wait_until([&] { return service.runtime().source().joined(); }, 30));

  ProducerOptions po;
  po.bootstrap = broker.bootstrap_servers();
  po.topic = "events";
  po.rate = 4000;
  po.count = kMessages;
  po.keys = 16;
  std::atomic<bool> stop{false};
  ASSERT_EQ(PacedProducer(po, service.clock()).run(stop).delivered, kMessages);

  const auto committed = [&] {
    int64_t sum = 0;
    for (const auto& p : service.runtime().source().stats().partitions) {
      sum += std::max<int64_t>(0, p.committed);
    }
    return sum;
  };
  ASSERT_TRUE(wait_until([&] { return committed() >= static_cast<int64_t>(kMessages); }, 60))
      << "committed " << committed();
  const SourceStats stats = service.runtime().source().stats();
  const uint64_t dropped = stats.dropped_incomplete_batch;
  EXPECT_GT(dropped, 0u);  // at least the last incomplete batch of some partition
  EXPECT_EQ(stats.processed, ledger.total());
  EXPECT_EQ(stats.processed + dropped, kMessages);
  EXPECT_EQ(stats.failed, 0u);

  // The dropped ones are on the shed topic, with their reason; together with the processed
  // ones they are every sequence, once.
  const auto shed = test_util::read_back(broker.bootstrap_servers(), "events.shed", 1, dropped);
  ASSERT_EQ(shed.size(), dropped);
  std::set<uint64_t> shed_seqs;
  for (const auto& r : shed) {
    const auto decoded = decode_message(r.value);
    ASSERT_TRUE(decoded.has_value());
    shed_seqs.insert(decoded->seq);
    bool reason = false;
    for (const auto& [name, value] : r.headers) {
      reason = reason || (name == "lagpilot-shed-reason" && value == "incomplete_batch");
    }
    EXPECT_TRUE(reason) << "record " << decoded->seq << " has no lagpilot-shed-reason";
  }
  EXPECT_EQ(shed_seqs.size(), dropped);
  for (uint64_t seq = 0; seq < kMessages; ++seq) {
    const bool was_processed = ledger.count(seq) > 0;
    const bool was_dropped = shed_seqs.count(seq) > 0;
    EXPECT_TRUE(was_processed != was_dropped)
        << "sequence " << seq << ": processed " << ledger.count(seq) << ", dropped " << was_dropped;
  }
  EXPECT_EQ(ledger.duplicated(0, kMessages), 0u);
  EXPECT_EQ(ledger.key_order_violations(), 0u);  // a partition's batches run one at a time
  EXPECT_EQ(ledger.concurrent_same_key(), 0u);
  {
    std::lock_guard lock(mu);
    EXPECT_GT(batches, 0u);
    EXPECT_EQ(mixed, 0u);
    EXPECT_EQ(out_of_order, 0u);
    EXPECT_EQ(oversized, 0u);
  }

  // /metrics: one batch-size observation per delivered batch, and the dropped messages.
  httplib::Client client("127.0.0.1", service.api_port());
  std::string page;
  EXPECT_TRUE(wait_until(
      [&] {
        auto res = client.Get("/metrics");
        if (!res) return false;
        page = res->body;
        std::lock_guard lock(mu);
        return metric_value(page, "lagpilot_batch_size_messages_count") ==
                   static_cast<double>(batches) &&
               metric_value(page, "lagpilot_batch_dropped_messages_total") ==
                   static_cast<double>(dropped);
      },
      10))
      << page.substr(0, 2000);
  EXPECT_EQ(metric_value(page, "lagpilot_batch_size_messages_sum"),
            static_cast<double>(stats.processed));
  service.stop();
}

}  // namespace
}  // namespace lagpilot
