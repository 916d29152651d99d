// The ops artifacts in config/ are valid and query only what RuntimeMetrics exports: the
// Prometheus alert rules (promtool check + promtool unit tests), the Grafana dashboard, the
// KEDA ScaledObject, the example scrape config, and the Kubernetes ConfigMap's lagpilot config.
// Renaming a metric in controller/metrics.cpp without updating config/ fails these tests.
#include "ops_artifacts.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "child_process.h"
#include "tests/common/ci_skip.h"

namespace lagpilot {
namespace {

using testing::ArtifactQuery;
using testing::exported_metric_types;
using testing::is_exported_series;
using testing::metric_identifiers;
using testing::read_text_file;
using testing::run_command;
using testing::shell_quote;
using testing::source_path;
using testing::yaml_values;

bool have_promtool() {
  return std::system("command -v promtool >/dev/null 2>&1") == 0;
}

// Every lagpilot_* name in `queries` is an exported series; returns the names seen.
std::set<std::string> expect_exported(const std::vector<ArtifactQuery>& queries) {
  static const std::map<std::string, std::string> types = exported_metric_types();
  std::set<std::string> seen;
  for (const ArtifactQuery& q : queries) {
    EXPECT_FALSE(q.expr.empty()) << q.where << ": empty query";
    const std::set<std::string> names = metric_identifiers(q.expr);
    EXPECT_FALSE(names.empty()) << q.where << ": queries no lagpilot metric: " << q.expr;
    for (const std::string& name : names) {
      EXPECT_TRUE(is_exported_series(types, name))
          << q.where << ": " << name << " is not exported by RuntimeMetrics (" << q.expr << ")";
      seen.insert(name);
    }
  }
  return seen;
}

TEST(OpsArtifacts, ExportedMetricTypesMatchTheDeclaredNames) {
  const auto types = exported_metric_types();
  auto names = RuntimeMetrics::metric_names();
  for (const std::string& n : DeliveryMetrics::metric_names()) names.push_back(n);
  EXPECT_EQ(types.size(), names.size());
  for (const std::string& name : names) EXPECT_TRUE(types.count(name)) << name;
  EXPECT_EQ(types.at("lagpilot_controller_tick_duration_seconds"), "histogram");
  // The helper accepts a histogram's series and nothing made up.
  EXPECT_TRUE(is_exported_series(types, "lagpilot_controller_tick_duration_seconds_bucket"));
  EXPECT_TRUE(is_exported_series(types, "lagpilot_controller_tick_duration_seconds_count"));
  EXPECT_FALSE(is_exported_series(types, "lagpilot_consumer_lag_bucket"));
  EXPECT_FALSE(is_exported_series(types, "lagpilot_no_such_metric"));
  EXPECT_EQ(metric_identifiers("sum(rate(lagpilot_a_total{x=\"y\"}[1m])) / lagpilot_b"),
            (std::set<std::string>{"lagpilot_a_total", "lagpilot_b"}));
}

TEST(OpsArtifacts, PromtoolAcceptsTheRulesAndTheirUnitTestsPass) {
  if (!have_promtool())
    LAGPILOT_SKIP_UNLESS_CI("promtool not installed (Debian package prometheus)");
  const std::string dir = source_path("config/prometheus");
  auto check = run_command("promtool check rules " + shell_quote(dir + "/alerts.yml"));
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find("SUCCESS"), std::string::npos) << check.output;
  auto unit = run_command("promtool test rules " + shell_quote(dir + "/alerts_test.yml"));
  EXPECT_EQ(unit.exit_code, 0) << unit.output;
  auto config = run_command("promtool check config " + shell_quote(dir + "/prometheus.yml"));
  EXPECT_EQ(config.exit_code, 0) << config.output;
}

TEST(OpsArtifacts, AlertRulesQueryExportedMetricsAndCoverTheIssue) {
  const std::string rules = source_path("config/prometheus/alerts.yml");
  const auto exprs = yaml_values(rules, "expr");
  ASSERT_GE(exprs.size(), 4u);
  const auto seen = expect_exported(exprs);
  std::set<std::string> alerts;
  for (const ArtifactQuery& a : yaml_values(rules, "alert")) alerts.insert(a.expr);
  for (const char* required : {"LagpilotLagRisingAtMaxWorkers", "LagpilotOverrideActiveTooLong",
                               "LagpilotConsumerPausedTooLong", "LagpilotControllerNotTicking"}) {
    EXPECT_TRUE(alerts.count(required)) << "missing alert " << required;
  }
  EXPECT_EQ(alerts.size(), exprs.size()) << "every rule is an alert with one expr";
  for (const char* metric :
       {"lagpilot_consumer_total_lag", "lagpilot_workers", "lagpilot_override_active",
        "lagpilot_paused_partitions", "lagpilot_last_tick_timestamp_seconds"}) {
    EXPECT_TRUE(seen.count(metric)) << metric;
  }

  // The unit tests feed synthetic series: they must be series RuntimeMetrics exports too, or
  // they test alerts on metrics that do not exist. Every alert is tested.
  const std::string tests = source_path("config/prometheus/alerts_test.yml");
  expect_exported(yaml_values(tests, "series"));
  std::set<std::string> tested;
  for (const ArtifactQuery& a : yaml_values(tests, "alertname")) tested.insert(a.expr);
  EXPECT_EQ(tested, alerts);
}

TEST(OpsArtifacts, DashboardImportsAndEveryPanelQueriesExportedMetrics) {
  const std::string path = source_path("config/grafana/lagpilot-dashboard.json");
  nlohmann::json dashboard;
  ASSERT_NO_THROW(dashboard = nlohmann::json::parse(read_text_file(path))) << path;
  EXPECT_GE(dashboard.value("schemaVersion", 0), 36);
  EXPECT_FALSE(dashboard.value("title", "").empty());
  EXPECT_FALSE(dashboard.value("uid", "").empty());

  // The data source is a template variable, so that import needs no mapping.
  std::set<std::string> datasource_variables;
  for (const auto& v : dashboard["templating"]["list"]) {
    if (v.value("type", "") == "datasource") {
      EXPECT_EQ(v.value("query", ""), "prometheus");
      datasource_variables.insert("${" + v.value("name", "") + "}");
    }
  }
  ASSERT_EQ(datasource_variables.size(), 1u);
  const auto& panels = dashboard["panels"];
  ASSERT_TRUE(panels.is_array());
  ASSERT_FALSE(panels.empty());
  std::set<int> ids;
  for (const auto& panel : panels) {
    const std::string title = panel.value("title", "");
    EXPECT_FALSE(title.empty());
    EXPECT_TRUE(ids.insert(panel.value("id", -1)).second) << "duplicate panel id: " << title;
    ASSERT_TRUE(panel.contains("gridPos")) << title;
    ASSERT_TRUE(panel.contains("targets") && panel["targets"].is_array() &&
                !panel["targets"].empty())
        << "panel \"" << title << "\" has no targets";
    for (const auto& target : panel["targets"]) {
      EXPECT_TRUE(datasource_variables.count(target["datasource"].value("uid", "")))
          << title << ": target data source is not the template variable";
    }
  }
  const auto seen = expect_exported(testing::dashboard_queries(dashboard));
  // What the issue asks the dashboard to show.
  for (const char* metric :
       {"lagpilot_consumer_total_lag", "lagpilot_consumer_lag",
        "lagpilot_arrival_rate_messages_per_second", "lagpilot_messages_processed_total",
        "lagpilot_workers", "lagpilot_process_latency_p50_seconds",
        "lagpilot_process_latency_p99_seconds", "lagpilot_scale_events_total",
        "lagpilot_override_active", "lagpilot_controller_tick_duration_seconds_bucket"}) {
    EXPECT_TRUE(seen.count(metric)) << "the dashboard does not show " << metric;
  }
}

TEST(OpsArtifacts, KedaScaledObjectQueriesExportedMetrics) {
  const std::string path = source_path("config/k8s/keda-scaledobject.yaml");
  const auto queries = yaml_values(path, "query");
  ASSERT_EQ(queries.size(), 1u);
  const auto seen = expect_exported(queries);
  // The group-wide figure, taken as the max over members (docs/kubernetes.md: not the sum).
  EXPECT_TRUE(seen.count("lagpilot_recommended_replicas")) << queries[0].expr;
  EXPECT_NE(queries[0].expr.find("max("), std::string::npos) << queries[0].expr;
  EXPECT_EQ(queries[0].expr.find("sum("), std::string::npos) << queries[0].expr;
  const std::string text = read_text_file(path);
  EXPECT_NE(text.find("kind: ScaledObject"), std::string::npos);
  EXPECT_NE(text.find("type: prometheus"), std::string::npos);
  const auto min = yaml_values(path, "minReplicaCount");
  const auto max = yaml_values(path, "maxReplicaCount");
  ASSERT_EQ(min.size(), 1u);
  ASSERT_EQ(max.size(), 1u);
  EXPECT_GE(std::stoi(min[0].expr), 1);
  EXPECT_GE(std::stoi(max[0].expr), std::stoi(min[0].expr));
}

// The ConfigMap's config.json is a config `lagpilot run` accepts, listening on all interfaces
// (allowed because the Deployment sets the token), and the Deployment wires what the docs say.
TEST(OpsArtifacts, KubernetesDeploymentRunsAValidConfig) {
  const std::string path = source_path("config/k8s/deployment.yaml");
  const auto configs = yaml_values(path, "config.json");
  ASSERT_EQ(configs.size(), 1u);
  nlohmann::json config;
  ASSERT_NO_THROW(config = nlohmann::json::parse(configs[0].expr)) << configs[0].expr;
  EXPECT_EQ(config["http"]["host"], "0.0.0.0");
  EXPECT_EQ(config["http"]["port"], 9464);

  const std::string file = "/tmp/lagpilot-k8s-config-" + std::to_string(::getpid()) + ".json";
  {
    std::ofstream out(file);
    out << configs[0].expr;
  }
  auto printed = run_command(std::string(LAGPILOT_BINARY) + " run --print-config --config " +
                             shell_quote(file));
  std::remove(file.c_str());
  ASSERT_EQ(printed.exit_code, 0) << printed.output;
  const auto effective = nlohmann::json::parse(printed.output);
  EXPECT_EQ(effective["broker"], "external");
  EXPECT_EQ(effective["http"]["token_env"], "LAGPILOT_API_TOKEN");

  const std::string text = read_text_file(path);
  for (const char* expected :
       {"kind: Deployment", "kind: Service", "kind: ConfigMap",
        R"(args: ["run", "--config", "/etc/lagpilot/config.json"])", "mountPath: /etc/lagpilot",
        "name: LAGPILOT_API_TOKEN", "secretKeyRef:", "path: /healthz", "path: /readyz",
        "prometheus.io/scrape: \"true\"", "prometheus.io/port: \"9464\"", "port: 9464"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << "deployment.yaml lacks " << expected;
  }
}

}  // namespace
}  // namespace lagpilot
