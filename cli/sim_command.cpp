// `lagpilot sim`: replay one trace through the simulator under several policies (same arrivals
// for all) and print one KPI row per policy; optionally JSON and a CSV time series.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "cli/commands.h"
#include "cli/config.h"
#include "cli/output_file.h"
#include "cli/sim_fleet.h"
#include "cli/sim_scoreboard.h"
#include "cli/trace_options.h"
#include "policies/policy_factory.h"
#include "sim/html_report.h"
#include "sim/oracle.h"
#include "sim/parallel_for.h"
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

// The pseudo-policies of `--policy` (sim/oracle.h): solved or replayed, not simulated. In the
// run order, a slot >= 0 is an index into the simulated specs.
constexpr int kOracleSlot = -1;        // "oracle": the fluid lower bound, its own fluid KPIs
constexpr int kOracleReplaySlot = -2;  // "oracle-replay": its schedule through the simulator

// Simulates `specs` and, when `order` asks for them, solves the oracle on its own thread beside
// them; returns the runs in `order`.
std::vector<sim::RunResult> run_all(const sim::Trace& trace, const std::vector<PolicySpec>& specs,
                                    const std::vector<int>& order, const GuardConfig& guards,
                                    const sim::SimConfig& config, int threads) {
  const bool oracle_wanted =
      std::any_of(order.begin(), order.end(), [](int slot) { return slot < 0; });
  std::future<sim::OracleResult> solving;
  const auto start = std::chrono::steady_clock::now();
  if (oracle_wanted) {
    solving =
        std::async(std::launch::async, [&] { return sim::solve_oracle(trace, config, guards); });
  }
  std::vector<sim::RunResult> simulated;
  if (!specs.empty()) simulated = sim::simulate_all(trace, specs, guards, config, threads);
  if (!oracle_wanted) return simulated;
  sim::OracleResult oracle;
  try {
    oracle = solving.get();
  } catch (const std::invalid_argument& e) {  // e.g. a capacity curve it cannot handle
    if (specs.empty()) throw;
    spdlog::error("{} (the oracle is left out of the report)", e.what());
    return simulated;
  }
  spdlog::info(
      "oracle: {:.4g} worker-seconds (mean {:.2f} workers) at the least, solved in {:.1f} s "
      "({} of {} ticks needed the DP)",
      oracle.run.kpis.worker_seconds, oracle.run.kpis.mean_workers,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
      oracle.dp_ticks, oracle.workers.size());
  if (!oracle.feasible()) {
    spdlog::warn(
        "oracle: infeasible even at max_workers {}: {:.0f} s above the lag SLO ({}) are "
        "unavoidable; the oracle minimizes those first, then worker-seconds",
        guards.max_workers, oracle.run.kpis.seconds_above_slo, config.lag_slo);
  }
  if (oracle.worker_ticks != oracle.bound_worker_ticks || oracle.forward_mismatches != 0 ||
      oracle.ticks_above_slo != oracle.unavoidable_ticks) {
    spdlog::warn(
        "oracle: self-check failed (schedule {} vs bound {} worker-ticks, {} mismatches, "
        "{} vs {} ticks above the SLO): please report this trace",
        oracle.worker_ticks, oracle.bound_worker_ticks, oracle.forward_mismatches,
        oracle.ticks_above_slo, oracle.unavoidable_ticks);
  }
  std::vector<sim::RunResult> runs;
  for (const int slot : order) {
    if (slot >= 0) {
      runs.push_back(std::move(simulated[static_cast<std::size_t>(slot)]));
    } else if (slot == kOracleSlot) {
      runs.push_back(oracle.run);
    } else {
      runs.push_back(sim::replay_schedule(trace, oracle.workers, "oracle-replay", guards, config));
    }
  }
  return runs;
}

// The scoreboard measures every policy against the oracle and the default HPA: add those runs
// when --policy does not name them (they are scored as references).
void add_scoreboard_references(std::vector<PolicySpec>& specs, std::vector<int>& order) {
  if (std::find(order.begin(), order.end(), kOracleSlot) == order.end()) {
    spdlog::info("scoreboard: adding the oracle (the worker-seconds reference)");
    order.push_back(kOracleSlot);
  }
  const bool has_hpa = std::any_of(specs.begin(), specs.end(), [](const PolicySpec& s) {
    return s.name == "hpa" && s.label == "hpa";
  });
  if (!has_hpa) {
    spdlog::info("scoreboard: adding hpa (the reference for SLO seconds and scale actions)");
    order.push_back(static_cast<int>(specs.size()));
    specs.push_back(parse_policy_spec("hpa"));
  }
}

}  // namespace

CommandMain add_sim_command(CLI::App& app) {
  struct Options {
    std::vector<std::string> traces;
    std::vector<std::string> policies{"hybrid,pid,threshold,hpa,keda,static:16,oracle"};
    std::string config_path;
    uint64_t seed = 0;
    bool seed_set = false;
    std::string json_out, csv_out;
    std::string html_out;
    int threads = 0;
    bool action_bound = false;
  };
  auto o = std::make_shared<Options>();
  auto trace_options = std::make_shared<TraceOptions>();
  auto overrides = std::make_shared<SimOverrides>();
  auto fleet = std::make_shared<FleetOptions>();
  app.add_option("--trace", o->traces,
                 "Trace file (see README: formats); several (--trace A --trace B) print the "
                 "multi-trace scoreboard (docs/control-quality.md)")
      ->required()
      ->check(CLI::ExistingFile);
  add_trace_options(app, trace_options);
  CLI::Option* policy_option =
      app.add_option("--policy", o->policies,
                     "Comma-separated policy specs: NAME (" + policy_name_list() +
                         "), static:N, NAME:key=value,...; "
                         "'oracle' is the clairvoyant lower bound (fluid model, see docs), "
                         "'oracle-replay' its schedule through the simulator")
          ->capture_default_str();
  app.add_option("--config", o->config_path,
                 "Config file: \"sim\", \"guards\", \"lag_slo\" and the params of the configured "
                 "policy")
      ->check(CLI::ExistingFile);
  app.add_option("--seed", o->seed, "Random seed (same seed, same output)")
      ->each([o](const std::string&) { o->seed_set = true; });
  add_sim_overrides(app, overrides);
  app.add_option("--json", o->json_out, "Write the results as JSON to this file ('-': stdout)");
  app.add_option("--csv", o->csv_out, "Write the time series as CSV to this file ('-': stdout)");
  app.add_option("--html", o->html_out,
                 "Write a self-contained HTML report (charts and KPI table) to this file");
  app.add_option("--threads", o->threads, "Policies simulated in parallel (0: all cores)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag(
      "--action-bound", o->action_bound,
      "With several traces: also the least worker-seconds any schedule needs with at "
      "most 0.5x HPA's scale actions, at most 0.5x its reversals, and both, per trace, and "
      "whether those goals and the worker-seconds goal can be met together "
      "(sim/action_bound.h; oracle DPs with prices: minutes per trace set)");
  add_fleet_options(app, fleet);

  return [o, trace_options, overrides, fleet, policy_option]() -> int {
    // load() checks "sim" and names the file in its errors; lag_slo is the top-level one.
    const AppConfig cfg = o->config_path.empty() ? AppConfig{} : load_config(o->config_path);
    sim::SimConfig sc = sim_config(cfg);
    if (const std::string w = shedding_sim_warning(sc); !w.empty()) spdlog::warn("{}", w);
    if (o->seed_set) sc.seed = o->seed;
    overrides->apply(sc);
    match_model_to_reconstruction(*trace_options, cfg.sim, o->config_path, sc);
    sc.record_series = !o->csv_out.empty() || !o->html_out.empty();

    std::vector<PolicySpec> specs;
    std::vector<int> order;  // the runs in the order given: spec indices or oracle slots
    for (const auto& text : split_policy_list(o->policies)) {
      if (text == "oracle" || text == "oracle-replay") {
        order.push_back(text == "oracle" ? kOracleSlot : kOracleReplaySlot);
        continue;
      }
      if (text.rfind("oracle:", 0) == 0 || text.rfind("oracle-replay:", 0) == 0) {
        throw ConfigError("--policy", "the oracle takes no parameters: \"" + text + "\"");
      }
      order.push_back(static_cast<int>(specs.size()));
      PolicySpec spec = parse_policy_spec(text);
      // The config's parameters apply to the policy it names, when the spec gives none.
      if (spec.name == cfg.policy_name && spec.params.empty() && !o->config_path.empty()) {
        spec.params = cfg.policy_params;
      }
      specs.push_back(std::move(spec));
    }
    if (order.empty()) throw ConfigError("--policy", "no policy given");
    const auto fleet_from_config = fleet_config(cfg);
    if (fleet->active(fleet_from_config.has_value())) {
      if (o->traces.size() > 1) throw ConfigError("--trace", "one trace only with --fleet");
      if (specs.size() != order.size() && policy_option->count() > 0) {
        throw ConfigError("--policy", "the oracle has no fleet version: leave it out with --fleet");
      }
      if (sc.shedding.enabled) {
        spdlog::warn("shedding: the fleet simulator does not shed (simulate one consumer for it)");
      }
      FleetSimCommand fc;
      fc.trace_path = o->traces.front();
      fc.specs = specs;
      fc.guards = cfg.guards;
      fc.config = sc;
      fc.fleet = fleet->resolve(fleet_from_config, sc);
      fc.json_out = o->json_out;
      fc.csv_out = o->csv_out;
      fc.html_out = o->html_out;
      fc.threads = sim::hardware_threads(o->threads);
      const sim::Trace trace =
          load_scaled_trace(fc.trace_path, *trace_options, sc, cfg.guards, &fc.info);
      if (!o->html_out.empty() && o->csv_out.empty() && sc.series_interval_seconds == 0) {
        const double ticks = std::ceil(trace.duration() / sc.tick_seconds / 20000.0);
        if (ticks > 1) fc.config.series_interval_seconds = ticks * sc.tick_seconds;
      }
      return run_fleet_sim(trace, fc);
    }
    if (o->action_bound && o->traces.size() < 2) {
      throw ConfigError("--action-bound", "several traces only (it is part of the scoreboard)");
    }
    if (o->traces.size() > 1) {
      if (!o->csv_out.empty()) {
        throw ConfigError("--csv", "one trace only (the scoreboard has no time series)");
      }
      ScoreboardCommand board;
      board.traces = o->traces;
      board.trace_options = *trace_options;
      board.config = sc;
      board.guards = cfg.guards;
      board.json_out = o->json_out;
      board.html_out = o->html_out;
      board.action_bound = o->action_bound;
      add_scoreboard_references(specs, order);
      const int threads = sim::hardware_threads(o->threads);
      // The scoreboard reports KPIs only: no run records a decision (no reason text is built).
      sim::SimConfig run_config = sc;
      run_config.max_decisions = 0;
      board.run = [&, run_config](const sim::Trace& trace) {
        return run_all(trace, specs, order, cfg.guards, run_config, threads);
      };
      return run_scoreboard(board);
    }
    const std::string& trace_path = o->traces.front();

    sim::TraceInfo info;
    const sim::Trace trace = load_scaled_trace(trace_path, *trace_options, sc, cfg.guards, &info);
    // --html alone: keep at most ~20k series points per run (the page draws ~2k per line anyway;
    // the KPIs still use every tick), so a long trace stays small in memory and on disk.
    if (!o->html_out.empty() && o->csv_out.empty() && sc.series_interval_seconds == 0) {
      const double ticks = std::ceil(trace.duration() / sc.tick_seconds / 20000.0);
      if (ticks > 1) sc.series_interval_seconds = ticks * sc.tick_seconds;
    }

    const int threads = sim::hardware_threads(o->threads);
    spdlog::info(
        "{}: {} bins of {:.4g} s ({:.1f} h), peak {:.0f}/s, ~{:.0f} messages; {} "
        "fidelity; {} policies on {} threads",
        trace_path, trace.rates.size(), trace.bin_seconds, trace.duration() / 3600,
        trace.peak_rate(), trace.total_messages(), sc.resolve_fidelity(trace), specs.size(),
        threads);
    // The recorded decisions (their reason text) are read by the JSON report alone
    // ("scale_actions_recorded"): without --json the runs record none, so policies and guards
    // build no reason text at all (the same numbers either way; sc itself, which the reports
    // print, keeps the configured max_decisions).
    sim::SimConfig run_config = sc;
    if (o->json_out.empty()) run_config.max_decisions = 0;
    const std::vector<sim::RunResult> results =
        run_all(trace, specs, order, cfg.guards, run_config, threads);

    std::cout << sim::format_kpi_table(results);
    if (!o->json_out.empty()) {
      nlohmann::json report = sim::to_json(results, sc, info);
      // Beside "sim" as in a config file: SimConfig::to_json() leaves the SLO out.
      report["lag_slo"] = sc.lag_slo;
      write_output(o->json_out, report.dump(2) + "\n");
    }
    if (!o->csv_out.empty()) {
      std::ostringstream csv;
      sim::write_series_csv(csv, results);
      write_output(o->csv_out, csv.str());
    }
    if (!o->html_out.empty()) {
      sim::SimHtmlReport html;
      html.title = "lagpilot sim: " + std::filesystem::path(trace_path).filename().string();
      html.trace = info;
      html.config = sc;
      html.runs = results;
      html.lag_slo = sc.lag_slo;
      write_output(o->html_out, sim::render_sim_html(html));
      spdlog::info("wrote {}", o->html_out);
    }
    return 0;
  };
}

}  // namespace lagpilot::cli
