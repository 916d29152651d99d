// A real Prometheus scrapes a running `lagpilot run`: the workers and lag series arrive through
// Prometheus's HTTP API with sane values, Prometheus loads and evaluates config/'s alert rules,
// and every query of the Grafana dashboard and of the KEDA ScaledObject returns data.
// Skipped (with a message) only where /usr/bin/prometheus is not installed.
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "cli_test_util.h"
#include "ops_artifacts.h"
#include "tests/common/ci_skip.h"
#include "tests/common/wait.h"

namespace lagpilot {
namespace {

using testing::ChildProcess;
using testing::free_loopback_port;
namespace fs = std::filesystem;

// How often a wait asks Prometheus or lagpilot: a real server's pace.
constexpr auto kServerPoll = std::chrono::milliseconds(250);

constexpr const char* kPrometheus = "/usr/bin/prometheus";
constexpr std::chrono::seconds kDeadline{60};  // for everything to show up; typically ~10 s

// Reads a child's stdout until it exits, so that it never blocks on a full pipe. Kills the
// child before joining (the read ends at EOF).
class StdoutDrain {
 public:
  explicit StdoutDrain(ChildProcess& child) : child_(child) {
    // read_line() returns "" for an empty line and at EOF; neither child prints two empty
    // lines in a row, and at EOF the empty reads repeat at once.
    thread_ = std::thread([this] {
      for (int empty_reads = 0; empty_reads < 2;) {
        empty_reads = child_.read_line().empty() ? empty_reads + 1 : 0;
      }
    });
  }
  ~StdoutDrain() {
    child_.signal(SIGKILL);
    thread_.join();
  }

 private:
  ChildProcess& child_;
  std::thread thread_;
};

class PrometheusScrape : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(kPrometheus, X_OK) != 0) {
      LAGPILOT_SKIP_UNLESS_CI(kPrometheus
                              << " not installed (Debian package prometheus; "
                                 "scripts/install-deps.sh installs it): cannot test a real scrape");
    }
    char dir_template[] = "/tmp/lagpilot-prometheus-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
  }
  void TearDown() override {
    if (!dir_.empty()) {
      std::error_code ignored;
      fs::remove_all(dir_, ignored);
    }
  }

  // GET /api/v1/query; the "data" object of a successful answer, or null.
  static nlohmann::json query(httplib::Client& client, const std::string& promql,
                              std::string* error = nullptr) {
    auto res = client.Get("/api/v1/query", httplib::Params{{"query", promql}}, {});
    if (!res) {
      if (error) *error = "no answer from Prometheus";
      return nullptr;
    }
    const auto body = nlohmann::json::parse(res->body, nullptr, false);
    if (body.is_discarded() || body.value("status", "") != "success") {
      if (error) *error = res->body;
      return nullptr;
    }
    return body["data"];
  }

  std::string dir_;
};

TEST_F(PrometheusScrape, PrometheusScrapesWorkersAndLagAndEvaluatesTheArtifacts) {
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  const int min_workers = 3, max_workers = 7;
  {
    std::ofstream config(dir_ + "/lagpilot.json");
    config << R"({"guards": {"min_workers": )" << min_workers << R"(, "max_workers": )"
           << max_workers << "}}";
  }
  // Port 0: lagpilot binds a port nobody can take in between, and its first status line (the
  // broker, the consumer and the API are up) says which one.
  ChildProcess lagpilot(
      {LAGPILOT_BINARY, "run", "--embedded-broker", "--config", dir_ + "/lagpilot.json", "--listen",
       "127.0.0.1:0", "--log-format", "json"},
      dir_ + "/lagpilot.log");
  const std::string first = lagpilot.read_line();
  ASSERT_FALSE(first.empty()) << "lagpilot run printed nothing; log: "
                              << testing::read_text_file(dir_ + "/lagpilot.log");
  const int lagpilot_port = testing::api_port_of_first_status_line(first);
  ASSERT_GT(lagpilot_port, 0) << "no API port in the first status line: " << first;
  // Prometheus says its port only in its log, so it gets a probed one.
  const int prometheus_port = free_loopback_port();
  StdoutDrain lagpilot_drain(lagpilot);

  {
    std::ofstream config(dir_ + "/prometheus.yml");
    config << "global:\n"
           << "  scrape_interval: 1s\n"
           << "  evaluation_interval: 1s\n"
           << "rule_files:\n"
           << "  - " << testing::source_path("config/prometheus/alerts.yml") << "\n"
           << "scrape_configs:\n"
           << "  - job_name: lagpilot\n"
           << "    static_configs:\n"
           << "      - targets: ['127.0.0.1:" << lagpilot_port << "']\n";
  }
  ChildProcess prometheus({kPrometheus, "--config.file=" + dir_ + "/prometheus.yml",
                           "--storage.tsdb.path=" + dir_ + "/data",
                           "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port)},
                          dir_ + "/prometheus.log");
  StdoutDrain prometheus_drain(prometheus);
  httplib::Client client("127.0.0.1", prometheus_port);
  client.set_connection_timeout(1);
  client.set_read_timeout(5);
  auto prometheus_log = [&] { return testing::read_text_file(dir_ + "/prometheus.log"); };

  // The workers series, once scraped: every state is there and the pool is within bounds.
  std::map<std::string, double> workers;
  const bool scraped = testing::wait_until(
      [&] {
        const auto data = query(client, R"(lagpilot_workers{job="lagpilot"})");
        if (data.is_null() || data["result"].size() < 6) return false;
        workers.clear();
        for (const auto& series : data["result"]) {
          workers[series["metric"].value("state", "")] =
              std::stod(series["value"][1].get<std::string>());
        }
        return true;
      },
      deadline, kServerPoll);
  ASSERT_TRUE(scraped) << "no lagpilot_workers series in Prometheus; its log:\n"
                       << prometheus_log();
  EXPECT_EQ(workers["min"], min_workers);
  EXPECT_EQ(workers["max"], max_workers);
  for (const char* state : {"current", "desired"}) {
    EXPECT_GE(workers[state], min_workers) << state;
    EXPECT_LE(workers[state], max_workers) << state;
  }
  EXPECT_GE(workers["busy"], 0);
  EXPECT_LE(workers["busy"], max_workers);

  // The lag series: the total and one series per assigned partition (8 by default), all >= 0.
  nlohmann::json partitions;
  ASSERT_TRUE(testing::wait_until(
      [&] {
        const auto data = query(client, R"(lagpilot_consumer_lag{job="lagpilot"})");
        if (data.is_null() || data["result"].size() < 8) return false;
        partitions = data["result"];
        return true;
      },
      deadline, kServerPoll))
      << "no per-partition lag series";
  for (const auto& series : partitions) {
    EXPECT_EQ(series["metric"].value("topic", ""), "events");
    EXPECT_GE(std::stod(series["value"][1].get<std::string>()), 0) << series.dump();
  }
  const auto total = query(client, R"(lagpilot_consumer_total_lag{job="lagpilot"})");
  ASSERT_FALSE(total.is_null());
  ASSERT_EQ(total["result"].size(), 1u);
  EXPECT_GE(std::stod(total["result"][0]["value"][1].get<std::string>()), 0);

  // Prometheus loaded config/prometheus/alerts.yml and evaluates every rule without errors.
  std::string rules_state;
  EXPECT_TRUE(testing::wait_until(
      [&] {
        auto res = client.Get("/api/v1/rules");
        if (!res) return false;
        const auto body = nlohmann::json::parse(res->body, nullptr, false);
        if (body.is_discarded()) return false;
        int rules = 0, healthy = 0;
        for (const auto& group : body["data"]["groups"]) {
          for (const auto& rule : group["rules"]) {
            ++rules;
            healthy += rule.value("health", "") == "ok";
          }
        }
        rules_state = res->body;
        return rules >= 4 && healthy == rules;
      },
      deadline, kServerPoll))
      << "alert rules not loaded or not healthy: " << rules_state;

  // Every dashboard query (its variables filled in) and the KEDA query return data from this
  // one consumer: the names, the label values and the functions are all right.
  std::vector<testing::ArtifactQuery> queries = testing::dashboard_queries(nlohmann::json::parse(
      testing::read_text_file(testing::source_path("config/grafana/lagpilot-dashboard.json"))));
  for (auto q :
       testing::yaml_values(testing::source_path("config/k8s/keda-scaledobject.yaml"), "query")) {
    // In Kubernetes the pods carry a namespace label; here the job stands in for it.
    q.expr = std::regex_replace(q.expr, std::regex(R"(namespace="lagpilot")"), R"(job="lagpilot")");
    queries.push_back(q);
  }
  for (auto& q : queries) {
    if (q.where.find("variable") != std::string::npos) continue;  // label_values(): Grafana only
    q.expr = std::regex_replace(q.expr, std::regex(R"(\$__rate_interval)"), "5s");
    q.expr = std::regex_replace(q.expr, std::regex(R"(\$job|\$instance)"), ".*");
    std::string error;
    nlohmann::json data;
    const bool answered = testing::wait_until(
        [&] {
          data = query(client, q.expr, &error);
          return !data.is_null() && !data["result"].empty();
        },
        deadline, kServerPoll);
    EXPECT_TRUE(answered) << q.where << ": no data for " << q.expr << " " << error;
  }

  // Both stop cleanly on SIGTERM (lagpilot: finish in-flight messages, commit, exit 0).
  prometheus.signal(SIGTERM);
  lagpilot.signal(SIGTERM);
  EXPECT_EQ(prometheus.wait(), 0);
  EXPECT_EQ(lagpilot.wait(), 0);
}

}  // namespace
}  // namespace lagpilot
