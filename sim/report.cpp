#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>

#include "policies/number_text.h"

namespace lagpilot::sim {
namespace {

// Rounds to 9 significant digits so that the written text is short and stable.
double round9(double v) {
  if (!std::isfinite(v) || v == 0.0) return v;
  return std::strtod(text::general(v, 9).c_str(), nullptr);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_number(double v) {
  return text::general(v, 9);
}

}  // namespace

nlohmann::json rounded_json(nlohmann::json j) {
  if (j.is_number_float()) {
    const double v = j.get<double>();
    return std::isfinite(v) ? nlohmann::json(round9(v)) : nlohmann::json(nullptr);
  }
  if (j.is_object() || j.is_array()) {
    for (auto& v : j) v = rounded_json(std::move(v));
  }
  return j;
}

TraceInfo TraceInfo::of(const Trace& trace) {
  TraceInfo info;
  info.source = trace.source;
  info.bins = trace.rates.size();
  info.bin_seconds = trace.bin_seconds;
  info.duration_seconds = trace.duration();
  info.mean_rate = trace.mean_rate();
  info.peak_rate = trace.peak_rate();
  info.total_messages = trace.total_messages();
  return info;
}

const RunResult* find_oracle(const std::vector<RunResult>& results) {
  for (const RunResult& r : results) {
    if (r.policy == "oracle") return &r;
  }
  return nullptr;
}

std::string format_kpi_table(const std::vector<RunResult>& results) {
  struct Column {
    std::string name;
    std::string unit;
    std::function<std::string(const RunResult&)> value;
  };
  std::vector<Column> columns = {
      {"policy", "", [](const RunResult& r) { return r.label; }},
      {"lag_integral", "msg*s",
       [](const RunResult& r) { return text::human(r.kpis.lag_integral, 3); }},
      {"max_lag", "msg", [](const RunResult& r) { return text::human(double(r.kpis.max_lag), 3); }},
      {"p99_lag", "msg", [](const RunResult& r) { return text::human(double(r.kpis.p99_lag), 3); }},
      {"above_slo", "s",
       [](const RunResult& r) { return text::human(r.kpis.seconds_above_slo, 3); }},
      {"worker_seconds", "worker*s",
       [](const RunResult& r) { return text::human(r.kpis.worker_seconds, 3); }},
      {"mean_workers", "workers",
       [](const RunResult& r) { return text::fixed(r.kpis.mean_workers, 2); }},
      {"max_workers", "workers",
       [](const RunResult& r) { return std::to_string(r.kpis.max_workers); }},
      {"scale_actions", "count",
       [](const RunResult& r) { return std::to_string(r.kpis.scale_actions); }},
      {"reversals", "count", [](const RunResult& r) { return std::to_string(r.kpis.reversals); }},
      {"mean_wait", "s",
       [](const RunResult& r) { return text::general(r.kpis.mean_wait_seconds, 4); }},
      {"arrived", "msg", [](const RunResult& r) { return std::to_string(r.kpis.arrived); }},
      {"processed", "msg", [](const RunResult& r) { return std::to_string(r.kpis.processed); }},
      {"final_lag", "msg", [](const RunResult& r) { return std::to_string(r.kpis.final_lag); }},
  };
  // Shedding columns only when a run shed (SimConfig::shedding): other tables stay as they were.
  if (std::any_of(results.begin(), results.end(),
                  [](const RunResult& r) { return r.kpis.shedding; })) {
    columns.push_back({"shed", "msg", [](const RunResult& r) {
                         return r.kpis.shedding ? std::to_string(r.kpis.shed) : std::string("-");
                       }});
    columns.push_back({"shed_time", "s", [](const RunResult& r) {
                         return r.kpis.shedding ? text::human(r.kpis.shed_seconds, 3)
                                                : std::string("-");
                       }});
  }
  if (const RunResult* oracle = find_oracle(results)) {
    const Kpis floor = oracle->kpis;  // a copy: `results` may be reallocated by the caller
    columns.push_back({"ws_vs_oracle", "ratio", [floor](const RunResult& r) {
                         return floor.worker_seconds > 0
                                    ? text::fixed(r.kpis.worker_seconds / floor.worker_seconds, 3) +
                                          "x"
                                    : std::string("n/a");
                       }});
    columns.push_back({"above_slo_vs_oracle", "s", [floor](const RunResult& r) {
                         const double d = r.kpis.seconds_above_slo - floor.seconds_above_slo;
                         std::string cell(1, d < 0 ? '-' : '+');
                         cell += text::human(std::fabs(d), 3);
                         return cell;
                       }});
  }
  std::vector<std::vector<std::string>> cells;
  cells.push_back({});
  cells.push_back({});
  for (const Column& c : columns) {
    cells[0].push_back(c.name);
    cells[1].push_back(c.unit.empty() ? "" : "[" + c.unit + "]");
  }
  for (const RunResult& r : results) {
    cells.push_back({});
    for (const Column& c : columns) cells.back().push_back(c.value(r));
  }
  std::vector<std::size_t> width(columns.size(), 0);
  for (const auto& row : cells) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::size_t pad = width[i] - row[i].size();
      if (i == 0) {
        line += row[i] + std::string(pad, ' ');  // names left-aligned
      } else {
        line += "  " + std::string(pad, ' ') + row[i];  // numbers right-aligned
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

nlohmann::json kpis_to_json(const Kpis& k) {
  nlohmann::json j{{"lag_integral_msg_s", k.lag_integral},
                   {"max_lag", k.max_lag},
                   {"p99_lag", k.p99_lag},
                   {"seconds_above_slo", k.seconds_above_slo},
                   {"worker_seconds", k.worker_seconds},
                   {"mean_workers", k.mean_workers},
                   {"scale_actions", k.scale_actions},
                   {"reversals", k.reversals},
                   {"max_workers", k.max_workers},
                   {"arrived", k.arrived},
                   {"processed", k.processed},
                   {"final_lag", k.final_lag},
                   {"mean_wait_seconds", k.mean_wait_seconds},
                   {"mean_service_seconds", k.mean_service_seconds},
                   {"ticks", k.ticks},
                   {"duration_seconds", k.duration_seconds}};
  if (k.shedding) {  // only with shedding configured: other runs' JSON stays as it was
    j["shed"] = nlohmann::json{{"total", k.shed}, {shed_reason_name(ShedReason::age), k.shed}};
    j["shed_seconds"] = k.shed_seconds;
    j["shed_starts"] = k.shed_starts;
  }
  return rounded_json(std::move(j));
}

nlohmann::json to_json(const std::vector<RunResult>& results, const SimConfig& config,
                       const TraceInfo& trace) {
  nlohmann::json runs = nlohmann::json::array();
  const RunResult* oracle = find_oracle(results);
  for (const RunResult& r : results) {
    nlohmann::json actions = nlohmann::json::array();
    for (const Decision& d : r.decisions) {
      actions.push_back(nlohmann::json{
          {"t", d.time}, {"from", d.previous_workers}, {"to", d.workers}, {"reason", describe(d)}});
    }
    runs.push_back(nlohmann::json{{"label", r.label},
                                  {"policy", r.policy},
                                  {"params", r.policy_params},
                                  {"fidelity", r.fidelity},
                                  {"kpis", kpis_to_json(r.kpis)},
                                  {"scale_actions_recorded", std::move(actions)}});
    if (oracle != nullptr) {
      const Kpis& floor = oracle->kpis;
      auto ratio = [](double v, double ref) -> nlohmann::json {
        return ref > 0 ? nlohmann::json(v / ref) : nlohmann::json(nullptr);
      };
      runs.back()["vs_oracle"] = nlohmann::json{
          {"worker_seconds_ratio", ratio(r.kpis.worker_seconds, floor.worker_seconds)},
          {"seconds_above_slo_excess", r.kpis.seconds_above_slo - floor.seconds_above_slo},
          {"seconds_above_slo_ratio", ratio(r.kpis.seconds_above_slo, floor.seconds_above_slo)}};
    }
  }
  nlohmann::json t{{"source", trace.source},
                   {"bins", trace.bins},
                   {"bin_seconds", trace.bin_seconds},
                   {"duration_seconds", trace.duration_seconds},
                   {"mean_rate", trace.mean_rate},
                   {"peak_rate", trace.peak_rate},
                   {"total_messages", trace.total_messages},
                   {"notes", trace.notes}};
  nlohmann::json report{
      {"trace", std::move(t)}, {"sim", config.to_json()}, {"runs", std::move(runs)}};
  // Beside "sim" as in a config file, and only when configured.
  if (config.shedding.enabled) report["shedding"] = config.shedding.to_json();
  return rounded_json(std::move(report));
}

void write_series_csv(std::ostream& out, const std::vector<RunResult>& results) {
  if (results.empty()) throw std::invalid_argument("write_series_csv: no runs");
  const std::size_t n = results[0].series.size();
  for (const RunResult& r : results) {
    if (r.series.size() != n) {
      throw std::invalid_argument("write_series_csv: run '" + r.label + "' has " +
                                  std::to_string(r.series.size()) + " series points, run '" +
                                  results[0].label + "' has " + std::to_string(n) +
                                  " (same trace and config, record_series on?)");
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (r.series[i].t != results[0].series[i].t) {
        throw std::invalid_argument("write_series_csv: run '" + r.label +
                                    "' has different series times");
      }
    }
  }
  out << "t,arrival_rate";
  for (const RunResult& r : results) {
    out << ',' << csv_field(r.label + "_lag") << ',' << csv_field(r.label + "_workers") << ','
        << csv_field(r.label + "_latency_p99");
    if (r.kpis.shedding) out << ',' << csv_field(r.label + "_shed_rate");
  }
  out << '\n';
  for (std::size_t i = 0; i < n; ++i) {
    out << csv_number(results[0].series[i].t) << ','
        << csv_number(results[0].series[i].arrival_rate);
    for (const RunResult& r : results) {
      const SeriesPoint& p = r.series[i];
      out << ',' << p.lag << ',' << p.workers << ',' << csv_number(p.latency_p99);
      if (r.kpis.shedding) out << ',' << csv_number(p.shed_rate);
    }
    out << '\n';
  }
}

}  // namespace lagpilot::sim
