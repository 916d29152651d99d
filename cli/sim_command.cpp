// `lagpilot sim`: replay one trace through the simulator under several policies (same arrivals
// for all) and print one KPI row per policy; optionally JSON and a CSV time series.
#include <fstream>
#include <iostream>
#include <thread>

#include <spdlog/spdlog.h>

#include "cli/app_config.h"
#include "cli/commands.h"
#include "policies/policy_factory.h"
#include "sim/report.h"
#include "sim/simulation.h"
#include "sim/trace_reader.h"

namespace lagpilot::cli {
namespace {

// "pid,threshold,static:16,pid:metric=drain_time,setpoint=10" -> one spec text per policy. Commas
// inside brackets ("threshold:steps=[{...},{...}]") do not split; a piece with '=' and no ':'
// before it continues the previous spec's parameters.
std::vector<std::string> split_policy_list(const std::vector<std::string>& args) {
  std::vector<std::string> pieces;
  for (const auto& arg : args) {
    std::string piece;
    int depth = 0;
    for (char c : arg) {
      if (c == '[' || c == '{') ++depth;
      if (c == ']' || c == '}') --depth;
      if (c == ',' && depth <= 0) {
        pieces.push_back(piece);
        piece.clear();
      } else {
        piece += c;
      }
    }
    pieces.push_back(piece);
  }
  std::vector<std::string> specs;
  for (const auto& piece : pieces) {
    const std::size_t eq = piece.find('=');
    const bool continuation = eq != std::string::npos && piece.find(':') > eq && !specs.empty();
    if (continuation) {
      specs.back() += "," + piece;
    } else if (!piece.empty()) {
      specs.push_back(piece);
    }
  }
  return specs;
}

void write_text_file(const std::string& path, const std::string& content) {
  if (path == "-") {
    std::cout << content;
    return;
  }
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot write");
  out << content;
}

}  // namespace

CommandMain add_sim_command(CLI::App& app) {
  struct Options {
    std::string trace;
    sim::TraceLoadOptions load;
    std::vector<std::string> policies{"pid,threshold,hpa,keda,static:16"};
    std::string config_path;
    uint64_t seed = 0;
    bool seed_set = false;
    double speedup = 1.0;
    double peak_load = 0.0;
    std::string fidelity;
    double tick = 0.0;
    int64_t slo = -1;
    std::string json_out, csv_out;
    int threads = 0;
  };
  auto o = std::make_shared<Options>();
  app.add_option("--trace", o->trace, "Trace file (see README: formats)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--format", o->load.format, "Trace format")
      ->check(CLI::IsMember({"auto", "rate", "prometheus", "events", "lag"}))
      ->capture_default_str();
  app.add_option("--metric", o->load.metric, "Prometheus export: the __name__ to use");
  app.add_option("--event-bin", o->load.event_bin_seconds,
                 "One-row-per-event traces: bin width, seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--companion", o->load.companion,
                 "Lag recordings: the worker-count or processed-rate recording")
      ->check(CLI::ExistingFile);
  app.add_option("--per-worker-rate", o->load.per_worker_rate,
                 "Lag + worker-count recordings: messages/s of one worker")
      ->check(CLI::PositiveNumber);
  app.add_option("--policy", o->policies,
                 "Comma-separated policy specs: NAME, static:N, NAME:key=value,...")
      ->capture_default_str();
  app.add_option("--config", o->config_path,
                 "Config file: \"sim\", \"guards\" and the params of the configured policy")
      ->check(CLI::ExistingFile);
  app.add_option("--seed", o->seed, "Random seed (same seed, same output)")
      ->each([o](const std::string&) { o->seed_set = true; });
  app.add_option("--speedup", o->speedup, "Compress the trace's time by this factor")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--peak-load", o->peak_load,
                 "Scale rates so the peak is this multiple of the capacity at max workers")
      ->check(CLI::PositiveNumber);
  app.add_option("--fidelity", o->fidelity, "message, batch or auto (config: sim.fidelity)")
      ->check(CLI::IsMember({"message", "batch", "auto"}));
  app.add_option("--tick", o->tick, "Control tick, seconds (config: sim.tick_seconds)")
      ->check(CLI::PositiveNumber);
  app.add_option("--slo", o->slo, "Lag SLO, messages (config: sim.lag_slo; default 10000)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--json", o->json_out, "Write the results as JSON to this file ('-': stdout)");
  app.add_option("--csv", o->csv_out, "Write the time series as CSV to this file ('-': stdout)");
  app.add_option("--threads", o->threads, "Policies simulated in parallel (0: all cores)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();

  return [o]() -> int {
    AppConfig cfg = o->config_path.empty() ? AppConfig{} : AppConfig::load(o->config_path);
    sim::SimConfig sc;
    try {
      sc = sim::SimConfig::from_json(cfg.sim, "sim");
    } catch (const ConfigError& e) {
      throw std::runtime_error(o->config_path + ": " + e.what());
    }
    if (o->seed_set) sc.seed = o->seed;
    if (!o->fidelity.empty()) sc.fidelity = o->fidelity;
    if (o->tick > 0) sc.tick_seconds = o->tick;
    if (o->slo >= 0) sc.lag_slo = o->slo;
    sc.record_series = !o->csv_out.empty();

    std::vector<PolicySpec> specs;
    for (const auto& text : split_policy_list(o->policies)) {
      PolicySpec spec = parse_policy_spec(text);
      // The config's parameters apply to the policy it names, when the spec gives none.
      if (spec.name == cfg.policy_name && spec.params.empty() && !o->config_path.empty()) {
        spec.params = cfg.policy_params;
      }
      specs.push_back(std::move(spec));
    }
    if (specs.empty()) throw ConfigError("--policy", "no policy given");

    sim::Trace trace = sim::load_trace(o->trace, o->load);
    sim::TraceInfo info;
    if (o->speedup != 1.0) trace = sim::compress_time(std::move(trace), o->speedup);
    double peak = 0;
    if (o->peak_load > 0) {
      peak = o->peak_load * sc.model.capacity(cfg.guards.max_workers);
      trace = sim::scale_to_peak(std::move(trace), peak);
    }
    info = sim::TraceInfo::of(trace);
    info.notes = {{"speedup", o->speedup}};
    if (peak > 0) info.notes["peak_load"] = o->peak_load;

    const int threads = o->threads > 0 ? o->threads
                                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    spdlog::info("{}: {} bins of {:.4g} s ({:.1f} h), peak {:.0f}/s, ~{:.0f} messages; {} "
                 "fidelity; {} policies on {} threads",
                 o->trace, trace.rates.size(), trace.bin_seconds, trace.duration() / 3600,
                 trace.peak_rate(), trace.total_messages(), sc.resolve_fidelity(trace),
                 specs.size(), threads);
    const std::vector<sim::RunResult> results =
        sim::simulate_all(trace, specs, cfg.guards, sc, threads);

    std::cout << sim::format_kpi_table(results);
    if (!o->json_out.empty()) {
      write_text_file(o->json_out, sim::to_json(results, sc, info).dump(2) + "\n");
    }
    if (!o->csv_out.empty()) {
      std::ostringstream csv;
      sim::write_series_csv(csv, results);
      write_text_file(o->csv_out, csv.str());
    }
    return 0;
  };
}

}  // namespace lagpilot::cli
