// `lagpilot advise` as a user runs it: exit 0 when every check passes, 1 with findings (one line
// each, naming the file and the JSON path), 2 for input it cannot read; `lagpilot run` warns
// with the same findings at start-up. And `lagpilot produce --pacing-url` against a local
// pacing server.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_test_util.h"
#include "controller/loadgen/embedded_broker.h"

namespace lagpilot {
namespace {

using lagpilot::testing::kBinary;
using lagpilot::testing::run_command;
using lagpilot::testing::ScratchDir;
using lagpilot::testing::shell_quote;

const ScratchDir kDir("lagpilot-advise-cli");

// A config that breaks every rule a running consumer can start with.
const char* kBadConfig = R"({
  "kafka": {"properties": {"fetch.max.bytes": 104857600, "max.poll.interval.ms": 60000}},
  "pool": {"high_watermark": 0.9, "low_watermark": 0.1},
  "traffic": {"training_and_online_share": "cluster"}
})";

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(AdviseCli, TheDefaultsPassAndExitZero) {
  const auto r = run_command(kBinary + " advise");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("all 7 checks pass"), std::string::npos) << r.output;
}

TEST(AdviseCli, FindingsExitOneAndNameTheFileAndTheJsonPath) {
  const std::string config = kDir.write("bad.json", kBadConfig);
  const auto r = run_command(kBinary + " advise --config " + shell_quote(config));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  for (const char* expected :
       {": kafka.properties.fetch.max.bytes: fetch.max.bytes is 104,857,600 bytes, above 50 MB",
        ": kafka.properties.max.poll.interval.ms: max.poll.interval.ms is 60,000, below 300,000",
        ": pool.high_watermark: high_watermark is 0.9, not 0.8",
        ": pool.low_watermark: low_watermark is 0.1, not 0.2",
        ": traffic.training_and_online_share: training and online traffic share one Kafka "
        "cluster"}) {
    EXPECT_NE(r.output.find(config + expected), std::string::npos) << expected << "\n" << r.output;
  }
  EXPECT_NE(r.output.find("advise: 5 findings (7 checks)"), std::string::npos) << r.output;
}

TEST(AdviseCli, TheCalibrationDecidesTheHandlingRulesAndItsHeadroomIsChecked) {
  const std::string config =
      kDir.write("records.json", R"({"kafka": {"properties": {"max.poll.records": 1000}}})");
  const std::string fast =
      kDir.write("fast.json",
                 R"({"steps": [{"workers": 1, "latency_p99_seconds": 0.004}], "headroom": 0.25})");
  const std::string slow = kDir.write(
      "slow.json", R"({"steps": [{"workers": 1, "latency_p99_seconds": 400}], "headroom": 0.1})");
  auto r = run_command(kBinary + " advise --config " + shell_quote(config) + " --calibration " +
                       shell_quote(fast));
  EXPECT_EQ(r.exit_code, 0) << r.output;  // 1,000 records of 4 ms each are fine
  r = run_command(kBinary + " advise --config " + shell_quote(config) + " --calibration " +
                  shell_quote(slow));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("[max_poll_records]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("max.poll.interval.ms is 300,000, below the worst observed batch time, "
                          "400,000 ms"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(slow + ": headroom: the calibration's burst headroom is 10 %"),
            std::string::npos)
      << r.output;
}

TEST(AdviseCli, BadInputExitsTwoNamingTheFileAndTheJsonPath) {
  const std::string bad_cal =
      kDir.write("bad-cal.json", R"({"steps": [{"workers": 1, "latency_p99_seconds": "slow"}]})");
  auto r = run_command(kBinary + " advise --calibration " + shell_quote(bad_cal));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(bad_cal + ": steps[0].latency_p99_seconds: must be a number"),
            std::string::npos)
      << r.output;
  const std::string headroom = kDir.write("headroom.json", R"({"pacing": {"headroom": 0.4}})");
  r = run_command(kBinary + " advise --config " + shell_quote(headroom));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(headroom + ": pacing.headroom: burst headroom must be between 20 % and "
                                     "30 %"),
            std::string::npos)
      << r.output;
  const std::string prop =
      kDir.write("prop.json", R"({"kafka": {"properties": {"fetch.max.bytes": "lots"}}})");
  r = run_command(kBinary + " advise --config " + shell_quote(prop));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(prop + ": kafka.properties.fetch.max.bytes: must be an integer"),
            std::string::npos)
      << r.output;
  const std::string syntax = kDir.write("syntax.json", "{\n  \"pool\": {,}\n}\n");
  r = run_command(kBinary + " advise --config " + shell_quote(syntax));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(syntax + ":2:"), std::string::npos) << r.output;
}

TEST(AdviseCli, RunWarnsAtStartUpWithTheSameFindings) {
  const std::string config = kDir.write("run.json", kBadConfig);
  const auto advice = run_command(kBinary + " advise --config " + shell_quote(config));
  ASSERT_EQ(advice.exit_code, 1) << advice.output;
  const auto run = run_command(kBinary + " run --config " + shell_quote(config) +
                               " --duration 0.2 --listen 127.0.0.1:0");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  int findings = 0;
  for (const std::string& line : lines(advice.output)) {
    if (line.rfind(config + ": ", 0) != 0) continue;
    ++findings;
    const std::string warning = "advise: " + line.substr(config.size() + 2);
    EXPECT_NE(run.output.find(warning), std::string::npos) << warning << "\n" << run.output;
  }
  EXPECT_EQ(findings, 5);
}

TEST(ProduceCli, FollowsThePacingUrl) {
  EmbeddedBrokerOptions bo;
  bo.topics.emplace_back("events", 2);
  EmbeddedBroker broker(bo);
  httplib::Server server;
  std::atomic<int> requests{0};
  server.Get("/v1/pacing", [&](const httplib::Request&, httplib::Response& res) {
    ++requests;
    res.set_content(R"({"rate": 4000, "burst": 100, "source": "measured"})", "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { server.listen_after_bind(); });
  // 400 messages: 8 s at the --rate of 50/s, a fraction of a second at the recommended 4,000/s.
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_command(kBinary + " produce --bootstrap " + broker.bootstrap_servers() +
                             " --rate 50 --count 400 --pacing-interval 0.1 --pacing-url "
                             "http://127.0.0.1:" +
                             std::to_string(port) + "/v1/pacing");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  server.stop();
  serving.join();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("pacing at 4000.0 msg/s, burst 100 (source measured)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("delivered=400"), std::string::npos) << r.output;
  EXPECT_GE(requests.load(), 1);
  EXPECT_LT(seconds, 6.0) << "still at --rate 50/s?\n" << r.output;

  const auto bad = run_command(kBinary + " produce --bootstrap " + broker.bootstrap_servers() +
                               " --count 1 --pacing-url https://example.invalid/v1/pacing");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--pacing-url"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace lagpilot
