// Shedding end to end on the embedded broker: a slow handler falls behind a backlog of records
// of two priorities (a "priority" header) and two ages (record timestamps now and an hour ago).
// Once lag has stayed above the lag SLO for after_pressure_seconds, shedding starts; old records
// are shed for age and new low-priority ones for priority, new high-priority ones never. Every
// record is either processed (the handler's ledger) or shed (the shed topic read back, with its
// headers), the shed counts agree with lagpilot_records_shed_total and /v1/status, and the
// decision log shows shedding start and stop. The Kafka source counts the shed records as
// shed, not processed.
#include <gtest/gtest.h>
#include <httplib.h>
#include <librdkafka/rdkafka.h>

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "controller/loadgen/embedded_broker.h"
#include "lagpilot/lagpilot.h"
#include "tests/common/wait.h"
#include "tests/kafka/kafka_test_util.h"

namespace lagpilot {
namespace {

using lagpilot::testing::wait_until;

constexpr int kRecords = 800;
constexpr int kPartitions = 4;

// Record i: priority 9 (even i) or 1 (odd i); new (i % 4 < 2) or an hour old (i % 4 >= 2).
bool is_high(int i) {
  return i % 2 == 0;
}
bool is_old(int i) {
  return i % 4 >= 2;
}

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Produces the records with their timestamps and priority headers; value = "seq-<i>".
void produce_records(const std::string& bootstrap) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  ASSERT_EQ(rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), errstr, sizeof errstr),
            RD_KAFKA_CONF_OK);
  rd_kafka_conf_set(conf, "linger.ms", "5", errstr, sizeof errstr);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  ASSERT_NE(rk, nullptr) << errstr;
  const int64_t now = unix_ms();
  for (int i = 0; i < kRecords; ++i) {
    const std::string key = "k" + std::to_string(i % 16);
    const std::string value = "seq-" + std::to_string(i);
    const std::string prio = is_high(i) ? "9" : "1";
    const int64_t ts = is_old(i) ? now - 3'600'000 : now;
    const rd_kafka_resp_err_t err = rd_kafka_producev(
        rk, RD_KAFKA_V_TOPIC("events"), RD_KAFKA_V_PARTITION(i % kPartitions),
        RD_KAFKA_V_KEY(key.data(), key.size()),
        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_TIMESTAMP(ts),
        RD_KAFKA_V_HEADER("priority", prio.data(), static_cast<ssize_t>(prio.size())),
        RD_KAFKA_V_END);
    ASSERT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR) << rd_kafka_err2str(err);
    rd_kafka_poll(rk, 0);
  }
  EXPECT_EQ(rd_kafka_flush(rk, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_destroy(rk);
}

int seq_of(const std::string& value) {
  return std::stoi(value.substr(4));
}

// The value of `name{reason="<reason>"}` on a Prometheus text page; -1 when absent.
double metric_value(const std::string& page, const std::string& series) {
  std::istringstream in(page);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

TEST(SheddingService, OnlyTheConfiguredClassesAreShedAndEveryRecordIsAccountedFor) {
  EmbeddedBroker broker(EmbeddedBrokerOptions{1, {{"events", kPartitions}, {"events.shed", 1}}});
  produce_records(broker.bootstrap_servers());

  const AppConfig config = Service::config_from_json(
      {{"broker", "external"},
       {"tick_seconds", 0.2},
       {"lag_slo", 40},
       {"policy", {{"name", "static"}, {"params", {{"workers", 2}}}}},
       {"guards", {{"min_workers", 2}, {"max_workers", 2}, {"hard_min_workers", 1}}},
       {"http", {{"enabled", true}, {"port", 0}}},
       {"kafka",
        {{"bootstrap_servers", broker.bootstrap_servers()}, {"commit_interval_seconds", 0.2}}},
       {"shedding",
        {{"after_pressure_seconds", 0.5},
         {"release_after_seconds", 0.6},
         {"max_age_seconds", 600},
         {"priority", {{"header", "priority"}}},
         {"min_priority_under_pressure", 5},
         {"to_topic", "events.shed"}}}});
  std::mutex mu;  // guards processed
  std::multiset<int> processed;
  // 20 ms a record on 2 workers: about 100/s, 8 s for the backlog without shedding.
  MessageHandler handler = [&](const SourceMessage& m) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard lock(mu);
    processed.insert(seq_of(m.value));
  };
  Service service(config, handler);
  service.start();
  bool saw_active = false;
  bool started_in_status = false;
  const auto decision_log = [&] {
    std::vector<std::string> events;
    for (const Decision& d : service.runtime().controller().recent_decisions(1000)) {
      if (d.source == "shedding") events.push_back(d.reason);
    }
    return events;
  };
  const bool finished = wait_until(
      [&] {
        const nlohmann::json shed = service.status()["runtime"]["shedding"];
        if (shed.is_object() && shed["active"] == true) {
          saw_active = true;
          started_in_status =
              shed["last_transition"].get<std::string>().rfind("shedding started", 0) == 0;
        }
        const SourceStats s = service.runtime().source().stats();
        int64_t committed = 0;
        for (const auto& p : s.partitions) committed += std::max<int64_t>(0, p.committed);
        return committed >= kRecords && decision_log().size() >= 2;
      },
      90.0, std::chrono::milliseconds(20));
  // The metrics are fed once per tick: wait for the tick after the last shed record.
  httplib::Client client("127.0.0.1", service.api_port());
  nlohmann::json status;
  std::string page;
  const bool metrics_caught_up = wait_until(
      [&] {
        status = service.status()["runtime"]["shedding"];
        const auto res = client.Get("/metrics");
        if (!res) return false;
        page = res->body;
        return metric_value(page, "lagpilot_records_shed_total{reason=\"age\"}") ==
                   status["age"].get<double>() &&
               metric_value(page, "lagpilot_records_shed_total{reason=\"priority\"}") ==
                   status["priority"].get<double>();
      },
      5.0, std::chrono::milliseconds(50));
  const std::vector<std::string> events = decision_log();
  const SourceStats source_stats = service.runtime().source().stats();
  service.stop();
  ASSERT_TRUE(finished) << "not all committed, or shedding did not start and stop; events: "
                        << events.size();
  EXPECT_TRUE(saw_active) << "/v1/status never showed shedding.active";
  EXPECT_TRUE(started_in_status) << "/v1/status did not show the start while active";
  EXPECT_EQ(status["active"], false);
  EXPECT_EQ(status["last_transition"].get<std::string>().rfind("shedding stopped", 0), 0u)
      << status["last_transition"];
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0].rfind("shedding started: backpressure for ", 0), 0u) << events[0];
  EXPECT_NE(events[0].find("above lag_slo 40"), std::string::npos) << events[0];
  EXPECT_EQ(events[1].rfind("shedding stopped: ", 0), 0u) << events[1];

  const uint64_t shed_age = status["age"].get<uint64_t>();
  const uint64_t shed_priority = status["priority"].get<uint64_t>();
  EXPECT_GT(shed_age, 0u);
  EXPECT_GT(shed_priority, 0u);
  const auto shed_records = test_util::read_back(broker.bootstrap_servers(), "events.shed", 1,
                                                 shed_age + shed_priority, 20.0);
  ASSERT_EQ(shed_records.size(), shed_age + shed_priority);

  std::map<int, std::string> shed;  // seq -> reason
  uint64_t by_age = 0, by_priority = 0;
  for (const auto& r : shed_records) {
    std::map<std::string, std::string> h(r.headers.begin(), r.headers.end());
    const int seq = seq_of(r.value);
    const std::string reason = h["lagpilot-shed-reason"];
    EXPECT_TRUE(shed.emplace(seq, reason).second) << "seq " << seq << " shed twice";
    EXPECT_EQ(h["priority"], is_high(seq) ? "9" : "1");  // the original headers are kept
    EXPECT_EQ(h["lagpilot-original-topic"], "events");
    EXPECT_EQ(h["lagpilot-original-partition"], std::to_string(seq % kPartitions));
    EXPECT_EQ(h["lagpilot-attempts"], "0");
    EXPECT_EQ(h["lagpilot-error"].rfind("shed: ", 0), 0u) << h["lagpilot-error"];
    if (reason == "age") {
      ++by_age;
      EXPECT_TRUE(is_old(seq)) << "seq " << seq << " is new but was shed for age";
    } else if (reason == "priority") {
      ++by_priority;
      EXPECT_FALSE(is_high(seq)) << "seq " << seq << " is high priority but was shed";
      EXPECT_FALSE(is_old(seq)) << "seq " << seq << ": an old record is shed for age first";
    } else {
      ADD_FAILURE() << "seq " << seq << ": reason \"" << reason << "\"";
    }
  }
  EXPECT_EQ(by_age, shed_age);
  EXPECT_EQ(by_priority, shed_priority);

  // Every record processed or shed, not both; new high-priority ones never shed.
  std::lock_guard lock(mu);
  for (int i = 0; i < kRecords; ++i) {
    const bool was_processed = processed.count(i) > 0;
    const bool was_shed = shed.count(i) > 0;
    EXPECT_TRUE(was_processed != was_shed)
        << "seq " << i << ": processed " << was_processed << ", shed " << was_shed;
    if (is_high(i) && !is_old(i)) {
      EXPECT_FALSE(was_shed) << "seq " << i;
    }
  }
  EXPECT_EQ(processed.size() + shed.size(), static_cast<std::size_t>(kRecords));

  // The metric counts the same.
  EXPECT_TRUE(metrics_caught_up);
  EXPECT_EQ(metric_value(page, "lagpilot_records_shed_total{reason=\"age\"}"),
            static_cast<double>(shed_age));
  EXPECT_EQ(metric_value(page, "lagpilot_records_shed_total{reason=\"priority\"}"),
            static_cast<double>(shed_priority));
  EXPECT_EQ(metric_value(page, "lagpilot_shedding_active"), 0.0);
  // The source counts shed records apart from processed ones (the processed rate is what the
  // sink took).
  EXPECT_EQ(source_stats.shed, shed_age + shed_priority);
  EXPECT_EQ(source_stats.processed, processed.size());
}

}  // namespace
}  // namespace lagpilot
