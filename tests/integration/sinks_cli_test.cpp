// `lagpilot run` with the http and exec sinks against foreign processes: the example Python HTTP
// service (random 500s, keys it rejects for good, a concurrency limit with 429s) and the example
// exec worker (crashing every N messages). Checked with the ledger (nothing lost) and kcat (what
// the dead-letter topic holds).
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli_test_util.h"
#include "controller/loadgen/ledger.h"

namespace lagpilot::testing {
namespace {

const ScratchDir kSinksCliScratch("lagpilot-sinks-cli");
const std::string kExamples = std::string(LAGPILOT_SOURCE_DIR) + "/examples/";

// Starts examples/http-sink/server.py on a free port; returns its URL.
std::string start_service(ChildProcess& service) {
  const std::string line = service.read_line();  // "listening on http://127.0.0.1:PORT"
  const auto at = line.find("http://");
  if (at == std::string::npos) throw std::runtime_error("service did not start: '" + line + "'");
  return line.substr(at) + "/events";
}

void produce(const std::string& bootstrap, uint64_t count, int rate) {
  auto p = run_command(kBinary + " produce --bootstrap " + bootstrap +
                       " --topic events --keys 64 --rate " + std::to_string(rate) + " --count " +
                       std::to_string(count));
  ASSERT_EQ(p.exit_code, 0) << p.output;
  ASSERT_NE(p.output.find("delivered=" + std::to_string(count)), std::string::npos) << p.output;
}

// Sequence numbers 0..total-1 that the ledger never saw.
uint64_t missing_from_ledger(const std::string& ledger, uint64_t total) {
  std::vector<int> seen(total, 0);
  for (const LedgerEntry& e : read_ledger(ledger)) {
    if (e.seq >= 0 && static_cast<uint64_t>(e.seq) < total) ++seen[e.seq];
  }
  uint64_t missing = 0;
  for (int v : seen) missing += v == 0;
  return missing;
}

// The producer's key of sequence number `seq` with --keys 64.
std::string key_of(uint64_t seq) {
  return "k" + std::to_string(seq % 64);
}

TEST(SinksCli, HttpServiceWithRandomFailuresLosesNothingAndDeadLettersTheRejectedKeys) {
  ChildProcess broker({kBinary, "broker", "--topic", "events", "--partitions", "4"});
  const std::string bootstrap = start_broker(broker);
  ChildProcess service({"/usr/bin/python3", kExamples + "http-sink/server.py", "--port", "0",
                        "--latency-ms", "1", "--fail-rate", "0.1", "--reject-prefix", "k1"},
                       kSinksCliScratch.path("http-service.log"));
  const std::string url = start_service(service);
  constexpr uint64_t kTotal = 20000;
  produce(bootstrap, kTotal, 20000);

  const std::string ledger = kSinksCliScratch.path("http-ledger.txt");
  std::filesystem::remove(ledger);
  const nlohmann::json config = {
      {"broker", "external"},
      {"handler", {{"type", "http"}, {"url", url}, {"timeout_seconds", 5}}},
      {"failure",
       {{"initial_backoff_seconds", 0.01},
        {"max_backoff_seconds", 0.1},
        {"dead_letter", {{"topic", "events.dlq"}}}}},
      {"kafka", {{"properties", {{"session.timeout.ms", "6000"}}}}},
      {"http", {{"port", 0}}}};
  const std::string config_path = kSinksCliScratch.write("http.json", config.dump());
  ChildProcess run({kBinary, "run", "--config", config_path, "--bootstrap", bootstrap, "--ledger",
                    ledger, "--until-drained"},
                   kSinksCliScratch.path("http-run.log"));
  ASSERT_EQ(run.wait(), 0) << slurp(kSinksCliScratch.path("http-run.log")).substr(0, 4000);
  EXPECT_EQ(missing_from_ledger(ledger, kTotal), 0u);

  // The dead-letter topic holds exactly the records whose keys the service rejects (k1, k10 to
  // k19), each at least once, and nothing else.
  std::multiset<std::string> expected;
  for (uint64_t seq = 0; seq < kTotal; ++seq) {
    const std::string k = key_of(seq);
    if (k.rfind("k1", 0) == 0) expected.insert(k);
  }
  const auto dlq = run_command("timeout 60 kcat -C -b " + bootstrap +
                               " -t events.dlq -o beginning -e -q -f '%k|%h\\n'");
  ASSERT_EQ(dlq.exit_code, 0) << dlq.output.substr(0, 2000);
  std::multiset<std::string> got;
  std::istringstream lines(dlq.output);
  for (std::string line; std::getline(lines, line);) {
    const auto bar = line.find('|');
    ASSERT_NE(bar, std::string::npos) << line;
    got.insert(line.substr(0, bar));
    EXPECT_NE(line.find("lagpilot-error=HTTP 400"), std::string::npos) << line;
    EXPECT_NE(line.find("lagpilot-original-topic=events"), std::string::npos) << line;
  }
  EXPECT_GE(got.size(), expected.size());
  std::set<std::string> got_keys(got.begin(), got.end()),
      expected_keys(expected.begin(), expected.end());
  EXPECT_EQ(got_keys, expected_keys);
  for (const std::string& k : expected_keys) EXPECT_GE(got.count(k), expected.count(k)) << k;
  service.signal(SIGTERM);
  broker.signal(SIGTERM);
  broker.wait();
}

TEST(SinksCli, ExecWorkerThatCrashesLosesNothingWhileThePoolResizes) {
  ChildProcess broker({kBinary, "broker", "--topic", "events", "--partitions", "8"});
  const std::string bootstrap = start_broker(broker);
  const std::string ledger = kSinksCliScratch.path("exec-ledger.txt");
  std::filesystem::remove(ledger);
  const nlohmann::json config = {
      {"broker", "external"},
      {"handler",
       {{"type", "exec"},
        {"command",
         {"python3", kExamples + "exec-worker/worker.py", "--latency-ms", "2", "--crash-every",
          "700"}},
        {"restart_backoff_seconds", 0.05}}},
      {"guards", {{"scale_down_window_seconds", 3}}},
      {"policy",
       {{"name", "threshold"},
        {"params", {{"steps", {{{"above", 500}, {"below", 100}, {"workers", 12}}}}}}}},
      {"kafka", {{"properties", {{"session.timeout.ms", "6000"}}}}},
      {"http", {{"port", 0}}}};
  const std::string config_path = kSinksCliScratch.write("exec.json", config.dump());
  ChildProcess run({kBinary, "run", "--config", config_path, "--bootstrap", bootstrap, "--ledger",
                    ledger, "--log-format", "json", "--duration", "30"},
                   kSinksCliScratch.path("exec-run.log"));
  constexpr uint64_t kTotal = 15000;
  produce(bootstrap, kTotal, 2500);  // 6 s at about 2.5 x what 4 workers take
  std::vector<int> sizes;
  for (std::string line = run.read_line(); !line.empty(); line = run.read_line()) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("workers")) sizes.push_back(j["workers"].get<int>());
  }
  ASSERT_EQ(run.wait(), 0);
  EXPECT_EQ(missing_from_ledger(ledger, kTotal), 0u);
  ASSERT_FALSE(sizes.empty());
  const auto peak = std::max_element(sizes.begin(), sizes.end());
  EXPECT_GT(*peak, 4) << "the pool never grew";
  EXPECT_LT(*std::min_element(peak, sizes.end()), *peak) << "the pool never shrank";
  const std::string log = slurp(kSinksCliScratch.path("exec-run.log"));
  EXPECT_NE(log.find("crashing on purpose"), std::string::npos);  // the child's stderr
  EXPECT_NE(log.find("restarting it"), std::string::npos);
  broker.signal(SIGTERM);
  broker.wait();
}

TEST(SinksCli, SigkillWhileMessagesAreInRetryThenRestartLosesNothing) {
  ChildProcess broker({kBinary, "broker", "--topic", "events", "--partitions", "4"});
  const std::string bootstrap = start_broker(broker);
  constexpr uint64_t kTotal = 5000;
  produce(bootstrap, kTotal, 20000);
  const std::string ledger = kSinksCliScratch.path("retry-kill-ledger.txt");
  std::filesystem::remove(ledger);
  const auto config_for = [&](const std::string& url) {
    return kSinksCliScratch.write(
        "retry-kill.json",
        nlohmann::json{
            {"broker", "external"},
            {"handler", {{"type", "http"}, {"url", url}}},
            {"failure", {{"initial_backoff_seconds", 0.05}, {"max_backoff_seconds", 0.5}}},
            {"kafka",
             {{"commit_interval_seconds", 0.5}, {"properties", {{"session.timeout.ms", "6000"}}}}},
            {"http", {{"port", 0}}}}
            .dump());
  };
  {
    // A service failing half of its requests: many messages are in retry when the kill comes.
    ChildProcess flaky({"/usr/bin/python3", kExamples + "http-sink/server.py", "--port", "0",
                        "--latency-ms", "1", "--fail-rate", "0.5"});
    const std::string config = config_for(start_service(flaky));
    ChildProcess run(
        {kBinary, "run", "--config", config, "--bootstrap", bootstrap, "--ledger", ledger},
        kSinksCliScratch.path("retry-kill-run.log"));
    std::this_thread::sleep_for(std::chrono::seconds(6));  // real processes: the point
    run.signal(SIGKILL);
    EXPECT_EQ(run.wait(), 128 + SIGKILL);
    flaky.signal(SIGTERM);
  }
  EXPECT_GT(missing_from_ledger(ledger, kTotal), 0u) << "the kill came too late to test anything";
  ChildProcess healthy({"/usr/bin/python3", kExamples + "http-sink/server.py", "--port", "0"});
  const std::string config = config_for(start_service(healthy));
  ChildProcess last({kBinary, "run", "--config", config, "--bootstrap", bootstrap, "--ledger",
                     ledger, "--until-drained"},
                    kSinksCliScratch.path("retry-kill-run.log"));
  EXPECT_EQ(last.wait(), 0);
  EXPECT_EQ(missing_from_ledger(ledger, kTotal), 0u);
  healthy.signal(SIGTERM);
  broker.signal(SIGTERM);
  broker.wait();
}

TEST(SinksCli, PushbackFromASixSlotServiceHoldsThePoolNearSix) {
  ChildProcess broker({kBinary, "broker", "--topic", "events", "--partitions", "16"});
  const std::string bootstrap = start_broker(broker);
  ChildProcess service({"/usr/bin/python3", kExamples + "http-sink/server.py", "--port", "0",
                        "--latency-ms", "20", "--max-concurrency", "6"});
  const std::string url = start_service(service);
  // 6 slots x 20 ms = 300 messages/s at most; 600/s keeps the backlog growing, so the policy
  // alone would go to 16. The default policy (hybrid) sizes the backlog in one jump, before any
  // pushback shows; the guard then steps back to the share the sink took and holds there.
  std::thread producer([&] { produce(bootstrap, 24000, 600); });
  const nlohmann::json config = {
      {"broker", "external"},
      {"handler", {{"type", "http"}, {"url", url}}},
      {"failure", {{"initial_backoff_seconds", 0.02}, {"max_backoff_seconds", 0.2}}},
      {"guards", {{"sink_pushback_seconds", 4}, {"scale_down_window_seconds", 0}}},
      {"kafka", {{"ordering", "unordered"}, {"properties", {{"session.timeout.ms", "6000"}}}}},
      {"http", {{"port", 0}}}};
  const std::string config_path = kSinksCliScratch.write("pushback.json", config.dump());
  ChildProcess run({kBinary, "run", "--config", config_path, "--bootstrap", bootstrap,
                    "--log-format", "json", "--duration", "40"},
                   kSinksCliScratch.path("pushback-run.log"));
  std::vector<int> sizes;
  std::string ticks;  // every status line, for the failure messages
  bool guard_named = false;
  for (std::string line = run.read_line(); !line.empty(); line = run.read_line()) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("workers")) continue;
    ticks += line + "\n";
    sizes.push_back(j["workers"].get<int>());
    guard_named = guard_named || line.find("sink pushback") != std::string::npos;
  }
  EXPECT_EQ(run.wait(), 0);
  producer.join();
  ASSERT_GT(sizes.size(), 30u);
  for (std::size_t i = sizes.size() - 12; i < sizes.size(); ++i) {
    EXPECT_GE(sizes[i], 5) << "tick " << i;
    EXPECT_LE(sizes[i], 7) << "tick " << i;
  }
  if (::testing::Test::HasFailure()) ADD_FAILURE() << "status lines:\n" << ticks;
  EXPECT_TRUE(guard_named) << "no decision names the sink_pushback guard";
  service.signal(SIGTERM);
  broker.signal(SIGTERM);
  broker.wait();
}

}  // namespace
}  // namespace lagpilot::testing
