#pragma once
// Reading the ops artifacts in config/ (Grafana dashboard, Prometheus rules, Kubernetes
// manifests) from tests: their PromQL queries, the lagpilot_* metric names those queries use,
// and the metric families RuntimeMetrics really exports. Shared by ops_artifacts_test.cpp and
// prometheus_scrape_test.cpp. Test code: plain functions, no state, any thread.

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "controller/metrics/delivery_metrics.h"
#include "controller/metrics/metrics.h"

namespace lagpilot::testing {

inline std::string source_path(const std::string& relative) {
  return std::string(LAGPILOT_SOURCE_DIR) + "/" + relative;
}

inline std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// One PromQL query of an artifact and where it comes from (for failure messages).
struct ArtifactQuery {
  std::string where;  // "dashboard panel 3 \"Rates\" target B", "alerts.yml:12", ...
  std::string expr;
};

// Every query of the Grafana dashboard: each panel target's "expr" and each query variable.
// Throws if the file is not valid JSON.
inline std::vector<ArtifactQuery> dashboard_queries(const nlohmann::json& dashboard) {
  std::vector<ArtifactQuery> queries;
  for (const auto& panel : dashboard.value("panels", nlohmann::json::array())) {
    for (const auto& target : panel.value("targets", nlohmann::json::array())) {
      queries.push_back({"dashboard panel " + std::to_string(panel.value("id", 0)) + " \"" +
                             panel.value("title", "") + "\" target " + target.value("refId", "?"),
                         target.value("expr", "")});
    }
  }
  for (const auto& variable : dashboard["templating"].value("list", nlohmann::json::array())) {
    if (variable.value("type", "") != "query") continue;
    const auto& q = variable["query"];
    queries.push_back({"dashboard variable $" + variable.value("name", ""),
                       q.is_object() ? q.value("query", "") : q.get<std::string>()});
  }
  return queries;
}

// The values of `key` in a YAML file, read line by line (enough for the files in config/, not
// a YAML parser): `key: value`, `- key: value`, quoted values, and block scalars (`key: |`,
// `key: >-`), whose lines (more indented than the key) are joined with '\n'.
inline std::vector<ArtifactQuery> yaml_values(const std::string& file, const std::string& key) {
  std::vector<ArtifactQuery> values;
  std::istringstream in(read_text_file(file));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const std::regex key_line("^( *)(- +)?" + std::regex_replace(key, std::regex(R"([.])"), R"(\.)") +
                            R"(: *(.*)$)");
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_match(lines[i], m, key_line)) continue;
    const std::size_t indent = m[1].length() + m[2].length();
    std::string value = m[3];
    const std::string where = file.substr(file.rfind('/') + 1) + ":" + std::to_string(i + 1);
    if (value == "|" || value == "|-" || value == ">" || value == ">-") {
      std::string block;
      for (std::size_t j = i + 1; j < lines.size(); ++j) {
        const std::string& next = lines[j];
        const auto first = next.find_first_not_of(' ');
        if (first == std::string::npos) continue;  // blank line inside the block
        if (first <= indent) break;
        block += (block.empty() ? "" : "\n") + next.substr(first);
      }
      values.push_back({where, block});
      continue;
    }
    if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    values.push_back({where, value});
  }
  return values;
}

// Identifiers starting with lagpilot_ in a PromQL expression (metric names; lagpilot does not
// use such label names or values).
inline std::set<std::string> metric_identifiers(const std::string& expr) {
  static const std::regex identifier(R"((^|[^A-Za-z0-9_:])(lagpilot_[A-Za-z0-9_:]*))");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), identifier);
       it != std::sregex_iterator(); ++it) {
    names.insert((*it)[2]);
  }
  return names;
}

// Metric family -> type ("gauge", "counter", "histogram") as RuntimeMetrics and DeliveryMetrics
// export them into one registry (as lagpilot run does): the `# TYPE` lines of its text page
// after one tick (so that every family has a series).
inline std::map<std::string, std::string> exported_metric_types() {
  auto registry = std::make_shared<prometheus::Registry>();
  RuntimeMetrics metrics(registry);
  DeliveryMetrics deliveries(*registry);
  deliveries.record(DeliveryStats{}, 0);
  TickReport report;
  report.decision.policy = "pid";
  PartitionStatus partition;
  partition.topic = "events";
  report.source.partitions.push_back(partition);
  metrics.record_tick(report, GuardConfig{}, false, 0.001, 1.7e9);
  std::map<std::string, std::string> types;
  std::istringstream in(metrics.render());
  static const std::regex type_line(R"(^# TYPE ([A-Za-z_:][A-Za-z0-9_:]*) ([a-z]+)$)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, type_line)) types[m[1]] = m[2];
  }
  return types;
}

// Whether `name` is a series name of an exported family: the family itself, or a histogram's
// (or summary's) _bucket/_sum/_count series.
inline bool is_exported_series(const std::map<std::string, std::string>& types,
                               const std::string& name) {
  if (types.count(name)) return true;
  for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      auto it = types.find(name.substr(0, name.size() - suffix.size()));
      if (it != types.end() && (it->second == "histogram" || it->second == "summary")) {
        return suffix != "_bucket" || it->second == "histogram";
      }
    }
  }
  return false;
}

}  // namespace lagpilot::testing
