// Fleets: several `lagpilot run` processes in one consumer group on one `lagpilot broker`, as
// Kubernetes runs them. Members join at different times, one is SIGKILLed, one SIGTERMed and a
// new one joins while sequence-numbered messages flow: nothing is lost, and what is delivered
// twice stays within what the members' commits allow (computed from the group's committed
// offsets, read with confluent-kafka, and the hand-overs the members logged). Members agree on
// the group-wide recommended replica count, and a standby reports the group's lag.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "cli_test_util.h"
#include "controller/loadgen/ledger.h"

namespace lagpilot {
namespace {

using testing::ChildProcess;
using testing::kBinary;
using testing::run_command;
using testing::start_broker;

const testing::ScratchDir kFleetCliScratch("lagpilot-fleet");

// One `lagpilot run` member with JSON status lines, read on a thread of its own (the pipe must
// be drained); the last line is kept.
class Member {
 public:
  Member(const std::string& name, const std::string& bootstrap, const std::string& config,
         std::vector<std::string> extra = {})
      : log_(kFleetCliScratch.path(name + ".log")),
        ledger_(kFleetCliScratch.path(name + "-ledger.txt")) {
    std::filesystem::remove(log_);
    std::filesystem::remove(ledger_);
    std::vector<std::string> argv = {kBinary,        "run",     "--config", config,
                                     "--bootstrap",  bootstrap, "--ledger", ledger_,
                                     "--log-format", "json"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    process_ = std::make_unique<ChildProcess>(argv, log_);
    reader_ = std::thread([this] {
      for (std::string line; !(line = process_->read_line()).empty();) {
        try {
          auto j = nlohmann::json::parse(line);
          const int port = testing::api_port_of_status(j);
          std::lock_guard<std::mutex> lock(mu_);
          if (port > 0) api_port_ = port;
          last_ = std::move(j);
        } catch (const nlohmann::json::exception&) {
        }
      }
    });
  }
  ~Member() {
    process_->signal(SIGKILL);
    process_->wait();
    if (reader_.joinable()) reader_.join();
  }

  nlohmann::json status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }
  // The API's port, from the first status line (with --listen HOST:0); 0 until it is out.
  int api_port() const {
    std::lock_guard<std::mutex> lock(mu_);
    return api_port_;
  }
  bool active() const {
    const auto s = status();
    return s.is_object() && s.value("assigned_partitions", 0) > 0;
  }
  void signal(int sig) { process_->signal(sig); }
  int wait() {
    const int code = process_->wait();
    if (reader_.joinable()) reader_.join();
    return code;
  }
  const std::string& ledger() const { return ledger_; }
  std::string log_text() const { return testing::slurp(log_); }

 private:
  std::string log_, ledger_;
  std::unique_ptr<ChildProcess> process_;
  std::thread reader_;
  mutable std::mutex mu_;  // guards last_ and api_port_
  nlohmann::json last_;
  int api_port_ = 0;
};

// Polls `ok` every 100 ms for up to `seconds` (the members are real processes on the wall
// clock: that is what this test is about).
template <typename F>
bool wait_for(F ok, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ok();
}

// GET a path of a member's API; "" when it does not answer.
std::string http_get(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(5, 0);
  const auto r = client.Get(path.c_str());
  return r && r->status == 200 ? r->body : "";
}

// The group's committed offset per partition, read by a client nobody here wrote.
std::map<int, int64_t> group_committed(const std::string& bootstrap, const std::string& group,
                                       const std::string& topic, int partitions) {
  const std::string script = kFleetCliScratch.write("committed.py", R"(import sys
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2]})
for tp in c.committed([TopicPartition(sys.argv[3], p) for p in range(int(sys.argv[4]))], timeout=10):
    print(tp.partition, tp.offset)
c.close()
)");
  // Debian's python3 (python3-confluent-kafka is a Debian package), not one earlier on PATH.
  const auto r = run_command("/usr/bin/python3 " + script + " " + bootstrap + " " + group + " " +
                             topic + " " + std::to_string(partitions));
  if (r.exit_code != 0) throw std::runtime_error("committed.py failed: " + r.output);
  std::map<int, int64_t> out;
  std::istringstream in(r.output);
  for (int p; in >> p;) in >> out[p];
  return out;
}

// The windows the members logged when they handed partitions over uncommitted
// ("kafka: handed over uncommitted (may be delivered again): events[3] 100..120, ...").
uint64_t logged_handover_records(const std::string& log) {
  static const std::regex window(R"((\w+)\[(\d+)\] (\d+)\.\.(\d+))");
  uint64_t total = 0;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find("handed over uncommitted") == std::string::npos) continue;
    for (std::sregex_iterator it(line.begin(), line.end(), window), end; it != end; ++it) {
      total += std::stoull((*it)[4]) - std::stoull((*it)[3]);
    }
  }
  return total;
}

TEST(FleetCli, MembersComeAndGoWithNothingLostAndDuplicatesBounded) {
  constexpr uint64_t kMessages = 100'000;
  constexpr int kPartitions = 2;  // two partitions, up to three members: one is a standby
  ChildProcess broker(
      {kBinary, "broker", "--topic", "events", "--partitions", std::to_string(kPartitions)});
  const std::string bootstrap = start_broker(broker);
  const std::string config = kFleetCliScratch.write(
      "fleet.json", R"({"broker": "external", "handler": {"service_mean_seconds": 0.001},
                        "kafka": {"group_id": "fleet", "commit_interval_seconds": 0.5,
                                  "properties": {"session.timeout.ms": "6000",
                                                 "heartbeat.interval.ms": "500"
                                                 )" +
                        std::string(std::getenv("FLEET_DEBUG") ? R"(, "debug": "cgrp")" : "") +
                        R"(}}})");
  auto a = std::make_unique<Member>("a", bootstrap, config);
  ASSERT_TRUE(wait_for([&] { return a->active(); }, 30)) << a->log_text();
  ChildProcess producer({kBinary, "produce", "--bootstrap", bootstrap, "--topic", "events",
                         "--rate", "4000", "--keys", "64", "--count", std::to_string(kMessages)});
  auto b = std::make_unique<Member>("b", bootstrap, config);
  ASSERT_TRUE(wait_for([&] { return b->active(); }, 30)) << b->log_text();
  // A third member of a two-partition group holds nothing, and still sees the group's lag.
  auto c = std::make_unique<Member>("c", bootstrap, config);
  ASSERT_TRUE(wait_for(
      [&] {
        const auto s = c->status();
        return s.is_object() && s.value("role", "") == "standby" && s["group_lag"].is_number();
      },
      30))
      << c->status().dump();
  EXPECT_EQ(c->status()["assigned_partitions"], 0);
  EXPECT_EQ(c->status()["lag"], 0);
  ASSERT_TRUE(a->active() && b->active());

  // SIGKILL: what the group had committed for the killed member's partitions at that moment
  // bounds what may be delivered twice.
  a->signal(SIGKILL);
  EXPECT_EQ(a->wait(), 128 + SIGKILL);
  const auto committed_at_kill = group_committed(bootstrap, "fleet", "events", kPartitions);
  ASSERT_TRUE(wait_for([&] { return c->active(); }, 40)) << c->log_text();
  // SIGTERM: a graceful leave (drain, commit, leave the group).
  b->signal(SIGTERM);
  EXPECT_EQ(b->wait(), 0) << b->log_text();
  auto d = std::make_unique<Member>("d", bootstrap, config);
  ASSERT_TRUE(wait_for([&] { return d->active(); }, 40)) << d->log_text();
  EXPECT_EQ(producer.wait(), 0);

  std::vector<const Member*> members = {a.get(), b.get(), c.get(), d.get()};
  std::vector<int> seen(kMessages, 0);
  auto union_complete = [&] {
    std::fill(seen.begin(), seen.end(), 0);
    for (const Member* m : members) {
      for (const LedgerEntry& e : read_ledger(m->ledger())) {
        if (e.seq >= 0 && static_cast<uint64_t>(e.seq) < kMessages) ++seen[e.seq];
      }
    }
    return std::count(seen.begin(), seen.end(), 0) == 0;
  };
  EXPECT_TRUE(wait_for(union_complete, 120))
      << "sequences never processed: " << std::count(seen.begin(), seen.end(), 0);
  c->signal(SIGTERM);
  d->signal(SIGTERM);
  EXPECT_EQ(c->wait(), 0);
  EXPECT_EQ(d->wait(), 0);
  union_complete();

  uint64_t extra = 0;
  for (int n : seen) extra += n > 1 ? n - 1 : 0;
  // The bound: the killed member's records at or above the group's commit when it died, plus
  // every window a member logged as handed over uncommitted.
  uint64_t kill_bound = 0;
  for (const LedgerEntry& e : read_ledger(a->ledger())) {
    const auto it = committed_at_kill.find(e.partition);
    if (it == committed_at_kill.end() || e.offset >= it->second) ++kill_bound;
  }
  uint64_t handover_bound = 0;
  for (const Member* m : members) handover_bound += logged_handover_records(m->log_text());
  EXPECT_LE(extra, kill_bound + handover_bound);
  std::printf(
      "[ figures  ] fleet: %llu of %llu messages delivered twice (%.1f %%); bound %llu (SIGKILL "
      "%llu, logged hand-overs %llu)\n",
      static_cast<unsigned long long>(extra), static_cast<unsigned long long>(kMessages),
      100.0 * static_cast<double>(extra) / kMessages,
      static_cast<unsigned long long>(kill_bound + handover_bound),
      static_cast<unsigned long long>(kill_bound), static_cast<unsigned long long>(handover_bound));
  broker.signal(SIGTERM);
  broker.wait();
}

// Two members share a backlog: each computes the replica count from the whole group's lag and
// its own per-worker rate, so they agree (within one), and the figure is the group's, not half
// of it.
TEST(FleetCli, MembersAgreeOnRecommendedReplicas) {
  constexpr int kPartitions = 8;
  ChildProcess broker(
      {kBinary, "broker", "--topic", "events", "--partitions", std::to_string(kPartitions)});
  const std::string bootstrap = start_broker(broker);
  auto p = run_command(kBinary + " produce --bootstrap " + bootstrap +
                       " --topic events --rate 50000 --keys 64 --count 40000");
  ASSERT_EQ(p.exit_code, 0) << p.output;
  // 20 ms per message, at most 4 workers per member: 200 messages/s per member, so the backlog
  // lasts long enough to be measured. Needed: 40,000 / 60 s / 50 per worker = 13 workers, 4
  // members of 4 (each member's own half would say 2).
  const std::string config = kFleetCliScratch.write("agree.json", R"({"broker": "external",
                        "handler": {"service_mean_seconds": 0.02, "service_cv": 0.1},
                        "guards": {"min_workers": 4, "max_workers": 4},
                        "kafka": {"group_id": "agree", "commit_interval_seconds": 0.5,
                                  "properties": {"session.timeout.ms": "6000",
                                                 "heartbeat.interval.ms": "500"}}})");
  // Port 0: each member binds a port nobody can take in between, and says which one.
  Member a("agree-a", bootstrap, config, {"--listen", "127.0.0.1:0"});
  ASSERT_TRUE(wait_for([&] { return a.active(); }, 30)) << a.log_text();
  Member b("agree-b", bootstrap, config, {"--listen", "127.0.0.1:0"});
  ASSERT_TRUE(wait_for([&] { return b.api_port() > 0; }, 30)) << b.log_text();
  const int port_a = a.api_port();
  const int port_b = b.api_port();
  ASSERT_GT(port_a, 0) << a.log_text();
  auto replicas = [](int port) {
    try {
      const auto j = nlohmann::json::parse(http_get(port, "/v1/status"));
      const auto& rt = j.at("runtime");
      if (!rt.at("capacity").at("group_wide").get<bool>() ||
          !rt.at("capacity").at("rate_measured").get<bool>() || rt.at("assigned_partitions") == 0) {
        return -1;
      }
      return rt.at("recommended_replicas").get<int>();
    } catch (const std::exception&) {
      return -1;
    }
  };
  int ra = -1, rb = -1;
  const bool both = wait_for(
      [&] {
        ra = replicas(port_a);
        rb = replicas(port_b);
        return ra > 0 && rb > 0;
      },
      60);
  ASSERT_TRUE(both) << a.log_text() << b.log_text();
  EXPECT_LE(std::abs(ra - rb), 1) << ra << " vs " << rb;
  EXPECT_GE(std::min(ra, rb), 3) << "the group's backlog needs about 4 members of 4 workers";
  EXPECT_LE(std::max(ra, rb), kPartitions);
  const std::string metrics = http_get(port_a, "/metrics");
  EXPECT_NE(metrics.find("lagpilot_group_lag{topic=\"events\"}"), std::string::npos);
  EXPECT_NE(metrics.find("lagpilot_group_partitions 8"), std::string::npos);
  std::printf("[ figures  ] recommended replicas: %d and %d\n", ra, rb);
  broker.signal(SIGTERM);
  broker.wait();
}

}  // namespace
}  // namespace lagpilot
