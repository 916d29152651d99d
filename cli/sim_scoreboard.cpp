#include "cli/sim_scoreboard.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "cli/output_file.h"
#include "sim/action_bound.h"
#include "sim/html_report.h"
#include "sim/report.h"
#include "sim/scoreboard.h"

namespace lagpilot::cli {

int run_scoreboard(const ScoreboardCommand& c) {
  std::vector<sim::TraceRuns> all;
  std::vector<sim::TraceActionBound> bounds;
  for (const std::string& path : c.traces) {
    sim::TraceInfo info;
    const sim::Trace trace = load_scaled_trace(path, c.trace_options, c.config, c.guards, &info);
    spdlog::info("{}: {} bins of {:.4g} s ({:.1f} h), peak {:.0f}/s", path, trace.rates.size(),
                 trace.bin_seconds, trace.duration() / 3600, trace.peak_rate());
    all.push_back({std::filesystem::path(path).stem().string(), c.run(trace)});
    if (c.action_bound) {
      const int64_t budget = sim::action_budget_of(all.back().runs);
      if (budget < 0) throw std::logic_error("scoreboard: no hpa run for the action bound");
      const auto start = std::chrono::steady_clock::now();
      sim::TraceActionBound a;
      a.trace = all.back().trace;
      a.bound = sim::action_budget_bound(trace, c.config, c.guards, budget);
      for (const sim::RunResult& r : all.back().runs) {
        if (r.policy == "hpa" && r.label == "hpa") {
          a.hpa_scale_actions = r.kpis.scale_actions;
          a.hpa_reversals = r.kpis.reversals;
        }
      }
      spdlog::info(
          "{}: least worker-seconds with at most {} actions >= {:.0f} ({:.3f}x the "
          "oracle's; {} DPs, {:.1f} s)",
          a.trace, budget, a.bound.bound_worker_seconds(), a.bound.bound_ratio(),
          a.bound.probes.size(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      const int64_t reversals = sim::reversal_budget_of(all.back().runs);
      const double warmup_ticks = c.config.model.warmup_seconds / c.config.tick_seconds;
      if (warmup_ticks == std::floor(warmup_ticks)) {
        a.has_reversal_bound = true;
        a.reversal_bound = sim::reversal_budget_bound(trace, c.config, c.guards, reversals);
        a.joint = sim::joint_budget_bound(trace, c.config, c.guards, a.bound, a.reversal_bound);
        spdlog::info("{}: least worker-seconds with at most {} reversals >= {:.0f} ({:.3f}x)",
                     a.trace, reversals, a.reversal_bound.bound_worker_seconds(),
                     a.reversal_bound.bound_ratio());
        // The SLO goal's allowance could buy back worker-seconds: bound that too, unless a
        // schedule within the SLO already meets the worker-seconds goal with R reversals.
        const std::string within_slo = sim::action_budget_verdict(
            a.reversal_bound, sim::ScoreboardGoals{}.max_worker_seconds_ratio);
        if (within_slo != "possible") {
          sim::ActionBoundOptions o;
          o.slo_allowance_ticks =
              sim::slo_allowance_ticks_of(all.back().runs, c.config.tick_seconds);
          const auto slo_start = std::chrono::steady_clock::now();
          a.has_slo_bound = true;
          a.slo_bound = sim::reversal_budget_bound(trace, c.config, c.guards, reversals, o);
          spdlog::info(
              "{}: ... and at most {} ticks above the SLO >= {:.0f} ({:.3f}x; witness {}; {} "
              "DPs, {:.1f} s)",
              a.trace, o.slo_allowance_ticks, a.slo_bound.bound_worker_seconds(),
              a.slo_bound.bound_ratio(),
              a.slo_bound.has_witness ? fmt::format("{:.3f}x", a.slo_bound.witness_ratio())
                                      : std::string("none"),
              a.slo_bound.probes.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - slo_start).count());
        }
      } else {
        spdlog::warn("{}: no reversal bound (the warm-up is not a whole number of ticks)", a.trace);
      }
      bounds.push_back(std::move(a));
    }
  }
  sim::Scoreboard board = sim::build_scoreboard(all, sim::model_peak_workers(c.config.model));
  board.action_bounds = std::move(bounds);
  std::cout << sim::format_scoreboard(board);
  if (!c.json_out.empty()) {
    nlohmann::json report = sim::scoreboard_to_json(board);
    report["sim"] = c.config.to_json();
    report["lag_slo"] = c.config.lag_slo;
    report["guards"] = c.guards.to_json();
    write_output(c.json_out, report.dump(2) + "\n");
  }
  if (!c.html_out.empty()) {
    sim::ScoreboardHtmlReport html;
    html.title = "lagpilot sim: " + std::to_string(c.traces.size()) + " traces";
    html.board = board;
    html.config = c.config;
    for (const sim::TraceRuns& t : all) {
      html.trace_kpis.emplace_back(t.trace, std::vector<sim::RunResult>{});
      for (const sim::RunResult& r : t.runs) {
        sim::RunResult light = r;  // the KPIs only: the page has no charts per trace
        light.series.clear();
        light.decisions.clear();
        html.trace_kpis.back().second.push_back(std::move(light));
      }
    }
    write_output(c.html_out, sim::render_scoreboard_html(html));
    spdlog::info("wrote {}", c.html_out);
  }
  return 0;
}

}  // namespace lagpilot::cli
