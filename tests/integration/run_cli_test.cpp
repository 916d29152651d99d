// `lagpilot run`, `broker` and `produce` as a user runs them: bad config, defaults, kcat against
// the standalone broker, and crash safety (SIGKILL at random moments, restart, nothing lost).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "cli_test_util.h"
#include "controller/loadgen/ledger.h"
#include "tests/common/ci_skip.h"

namespace lagpilot {
namespace {

using testing::ChildProcess;
using testing::kBinary;
using testing::run_command;
using testing::shell_quote;
using testing::start_broker;

const testing::ScratchDir kRunCliScratch("lagpilot-it");

TEST(RunCli, PrintConfigShowsDocumentedDefaults) {
  auto r = run_command(kBinary + " run --print-config");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["broker"], "embedded");
  EXPECT_EQ(j["kafka"]["topics"][0], "events");
  EXPECT_EQ(j["topic_partitions"], 8);
  EXPECT_EQ(j["policy"]["name"], "hybrid");
  EXPECT_EQ(j["guards"]["min_workers"], 4);
  EXPECT_EQ(j["guards"]["max_workers"], 16);
  EXPECT_EQ(j["tick_seconds"], 1.0);
}

// config/defaults.json is the whole default config and config/policies/<name>.json each
// policy's defaults (README): both are written by hand, so a default changed in the code and not
// in the file, or the other way round, fails here.
TEST(RunCli, TheShippedConfigFilesAreTheDefaults) {
  const std::string config_dir = std::string(LAGPILOT_SOURCE_DIR) + "/config";
  auto printed = [](const std::string& args) {
    const auto r = run_command(kBinary + " run --print-config" + args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.output;
    return nlohmann::json::parse(r.output, nullptr, false);
  };
  EXPECT_EQ(nlohmann::json::parse(testing::slurp(config_dir + "/defaults.json")), printed(""))
      << "config/defaults.json differs from `lagpilot run --print-config`";
  int policies = 0;
  for (const auto& entry : std::filesystem::directory_iterator(config_dir + "/policies")) {
    if (entry.path().extension() != ".json") continue;
    ++policies;
    const std::string name = entry.path().stem().string();
    const nlohmann::json file = nlohmann::json::parse(testing::slurp(entry.path().string()));
    const nlohmann::json defaults = printed(" --policy " + name);
    ASSERT_TRUE(defaults.is_object()) << name;
    EXPECT_EQ(file.at("policy"), defaults.at("policy"))
        << entry.path() << " differs from `lagpilot run --print-config --policy " << name << "`";
  }
  EXPECT_GE(policies, 7);  // hpa, hybrid, keda, model, pid, static, threshold
}

struct BadConfig {
  std::string json;
  std::string expected;  // substring of the error
};

TEST(RunCli, BadConfigExitsTwoNamingThePath) {
  const std::vector<BadConfig> cases = {
      {R"({"guards": {"max_workers": 16, "min_wrokers": 2}})", "guards.min_wrokers: unknown key"},
      {R"({"guards": {"max_workers": "sixteen"}})", "guards.max_workers: must be an integer"},
      {R"({"guards": {"max_workers": 0}})", "guards.max_workers: must be between"},
      {R"({"tick_seconds": -1})", "tick_seconds: must be between"},
      {R"({"pool": {"queue_capacity": 0}})", "pool.queue_capacity"},
      {R"({"policy": {"name": "magic"}})", "policy.name: must be one of"},
      {R"({"policy": {"name": "pid", "params": {"kp": -1}}})", "policy.params.kp"},
      {R"({"kafka": {"ordering": "random"}})", "kafka.ordering"},
      {R"({"handler": {"service_mean_seconds": -0.5}})", "handler.service_mean_seconds"},
      {"{\n  \"guards\": {\n    \"max_workers\": 16,,\n  }\n}", ":3:"},
  };
  int i = 0;
  for (const auto& c : cases) {
    const std::string path = kRunCliScratch.write("bad" + std::to_string(i++) + ".json", c.json);
    auto r = run_command(kBinary + " run --print-config --config " + shell_quote(path));
    EXPECT_EQ(r.exit_code, 2) << c.json << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos)
        << "expected '" << c.expected << "' in:\n"
        << r.output;
    EXPECT_NE(r.output.find(path), std::string::npos) << "error must name the file: " << r.output;
  }
}

TEST(RunCli, BadFlagsExitTwo) {
  EXPECT_EQ(run_command(kBinary + " run --log-format yaml").exit_code, 2);
  EXPECT_EQ(run_command(kBinary + " run --no-such-flag").exit_code, 2);
  EXPECT_EQ(run_command(kBinary + " run --policy magic --print-config").exit_code, 2);
  auto help = run_command(kBinary + " --help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* sub : {"sim", "run", "broker", "produce"}) {
    EXPECT_NE(help.output.find(sub), std::string::npos) << sub;
  }
}

TEST(BrokerCli, KcatProducesAndConsumes) {
  if (run_command("command -v kcat").exit_code != 0) {
    LAGPILOT_SKIP_UNLESS_CI("kcat not installed (scripts/install-deps.sh installs it)");
  }
  ChildProcess broker({kBinary, "broker", "--topic", "events", "--partitions", "4"});
  const std::string bootstrap = start_broker(broker);
  const std::string input = kRunCliScratch.path("kcat-in.txt");
  {
    std::ofstream out(input);
    for (int i = 0; i < 100; ++i) out << "message-" << i << "\n";
  }
  auto p = run_command("kcat -P -b " + bootstrap + " -t events -l " + shell_quote(input));
  ASSERT_EQ(p.exit_code, 0) << p.output;
  auto c = run_command("timeout 60 kcat -C -b " + bootstrap + " -t events -o beginning -e -q");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  int lines = 0;
  for (char ch : c.output) lines += ch == '\n';
  EXPECT_EQ(lines, 100);
  for (int i : {0, 42, 99}) {
    EXPECT_NE(c.output.find("message-" + std::to_string(i) + "\n"), std::string::npos);
  }
  broker.signal(SIGTERM);
  EXPECT_EQ(broker.wait(), 0);
}

TEST(RunCli, SigkillAtRandomMomentsLosesNothing) {
  ChildProcess broker({kBinary, "broker", "--topic", "events", "--partitions", "4"});
  const std::string bootstrap = start_broker(broker);
  const uint64_t total = 20000;
  auto p = run_command(kBinary + " produce --bootstrap " + bootstrap +
                       " --topic events --rate 20000 --keys 32 --count " + std::to_string(total));
  ASSERT_EQ(p.exit_code, 0) << p.output;
  ASSERT_NE(p.output.find("delivered=" + std::to_string(total)), std::string::npos) << p.output;

  const std::string ledger = kRunCliScratch.path("crash-ledger.txt");
  std::filesystem::remove(ledger);
  const std::string config = kRunCliScratch.write(
      "crash.json", R"({"broker": "external", "handler": {"service_mean_seconds": 0.002},
                        "kafka": {"commit_interval_seconds": 0.5,
                                  "properties": {"session.timeout.ms": "6000",
                                                 "heartbeat.interval.ms": "500"}}})");
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pause_ms(1500, 5000);
  for (int kill = 0; kill < 5; ++kill) {
    ChildProcess run(
        {kBinary, "run", "--config", config, "--bootstrap", bootstrap, "--ledger", ledger},
        kRunCliScratch.path("crash-run.log"));
    // Real processes on the wall clock: this is the point of the test.
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(rng)));
    run.signal(SIGKILL);
    EXPECT_EQ(run.wait(), 128 + SIGKILL);
  }
  ChildProcess last({kBinary, "run", "--config", config, "--bootstrap", bootstrap, "--ledger",
                     ledger, "--until-drained"},
                    kRunCliScratch.path("crash-run.log"));
  EXPECT_EQ(last.wait(), 0);

  std::vector<int> seen(total, 0);
  for (const LedgerEntry& e : read_ledger(ledger)) {
    ASSERT_GE(e.seq, 0);
    ASSERT_LT(static_cast<uint64_t>(e.seq), total);
    ++seen[e.seq];
  }
  uint64_t missing = 0;
  for (int v : seen) missing += v == 0;
  EXPECT_EQ(missing, 0u) << "sequence numbers never processed";
  broker.signal(SIGTERM);
  broker.wait();
}

TEST(RunCli, SigtermCommitsAndExitsZero) {
  ChildProcess broker({kBinary, "broker", "--topic", "events", "--partitions", "2"});
  const std::string bootstrap = start_broker(broker);
  auto p = run_command(kBinary + " produce --bootstrap " + bootstrap +
                       " --topic events --rate 50000 --count 3000");
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const std::string ledger = kRunCliScratch.path("term-ledger.txt");
  std::filesystem::remove(ledger);
  // A short session timeout: the mock cluster waits that long for a departed member.
  const std::string config =
      kRunCliScratch.write("term.json", R"({"kafka": {"commit_interval_seconds": 0.5,
                                 "properties": {"session.timeout.ms": "6000",
                                                "heartbeat.interval.ms": "500"}}})");
  {
    ChildProcess run({kBinary, "run", "--config", config, "--bootstrap", bootstrap, "--ledger",
                      ledger, "--log-format", "json"},
                     kRunCliScratch.path("term-run.log"));
    // Wait (on the child's own status lines) until the backlog is consumed and committed.
    for (int lines = 0; lines < 120; ++lines) {
      const std::string line = run.read_line();
      ASSERT_FALSE(line.empty()) << "run exited early";
      auto status = nlohmann::json::parse(line);
      if (status["assigned_partitions"] > 0 && status["lag"] == 0) break;
    }
    run.signal(SIGTERM);
    EXPECT_EQ(run.wait(), 0);
  }
  {
    // A consumer that keeps up is not warned about its fetch and buffer sizes (the warning
    // waits for repeated pauses), whatever the defaults are.
    std::ifstream log(kRunCliScratch.path("term-run.log"));
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.find("smaller than one fetch"), std::string::npos) << text.substr(0, 2000);
  }
  const auto first = read_ledger(ledger).size();
  EXPECT_GE(first, 3000u);
  // Everything was committed on the way out: a second consumer in the group gets nothing again.
  ChildProcess again({kBinary, "run", "--config", config, "--bootstrap", bootstrap, "--ledger",
                      ledger, "--until-drained"},
                     kRunCliScratch.path("term-run.log"));
  EXPECT_EQ(again.wait(), 0);
  EXPECT_EQ(read_ledger(ledger).size(), first);
  broker.signal(SIGTERM);
  broker.wait();
}

}  // namespace
}  // namespace lagpilot
