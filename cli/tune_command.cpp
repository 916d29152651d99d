// `lagpilot tune`: search a policy's parameters on train traces through the simulator, print the
// Pareto front (worker-seconds vs seconds above the lag SLO), the best parameters and how they
// (and the baseline) do on the train and held-out test traces; optionally write them as a
// config file for `lagpilot run`, the whole search as JSON, and an HTML report.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/config.h"
#include "cli/output_file.h"
#include "cli/trace_options.h"
#include "policies/config_reader.h"
#include "policies/number_text.h"
#include "policies/policy_factory.h"
#include "sim/html_report.h"
#include "sim/parallel_for.h"
#include "sim/report.h"
#include "sim/simulation.h"
#include "sim/tuner.h"

namespace lagpilot::cli {
namespace {

// A table cell: a few significant digits, whole numbers as they are, "-" for no value.
std::string cell(double v) {
  return std::isfinite(v) ? text::human(v, 4) : "-";
}

// Aligned text table: the first row is the header; columns right-aligned except those listed.
std::string table(const std::vector<std::vector<std::string>>& rows,
                  const std::vector<bool>& left_aligned) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string pad(width[i] - row[i].size(), ' ');
      const bool left = i < left_aligned.size() && left_aligned[i];
      if (i > 0) line += "  ";
      line += left ? row[i] + (i + 1 == row.size() ? "" : pad) : pad + row[i];
    }
    out += line + "\n";
  }
  return out;
}

// Progress on stderr: a bar redrawn in place on a terminal, else a log line every 10 %.
class ProgressReporter {
 public:
  explicit ProgressReporter(bool tty) : tty_(tty), start_(std::chrono::steady_clock::now()) {}

  void operator()(const sim::TuneProgress& p) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double fraction = p.total > 0 ? std::min(1.0, double(p.done) / p.total) : 1.0;
    const std::string best =
        std::isfinite(p.best_objective) ? text::general(p.best_objective, 4) : std::string("-");
    if (tty_) {
      constexpr int kWidth = 30;
      const int filled = static_cast<int>(fraction * kWidth);
      std::string bar(static_cast<std::size_t>(filled), '#');
      bar += std::string(static_cast<std::size_t>(kWidth - filled), '.');
      std::fprintf(stderr, "\r[%s] %d/%d configs  best %s  %.0f s ", bar.c_str(), p.done, p.total,
                   best.c_str(), elapsed);
      std::fflush(stderr);
      drawn_ = true;
    } else {
      const int decile = static_cast<int>(fraction * 10);
      if (decile > last_decile_) {
        last_decile_ = decile;
        spdlog::info("tune: {}/{} configurations, best objective {}, {:.1f} s", p.done, p.total,
                     best, elapsed);
      }
    }
  }

  void finish() {
    if (drawn_) std::fprintf(stderr, "\n");
  }

 private:
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  bool drawn_ = false;
  int last_decile_ = 0;
};

std::string params_text(const nlohmann::json& params) {
  return params.dump();
}

// When every configuration spent (nearly) the same seconds above the lag SLO, and some, the
// trace saturates the consumer whatever the parameters: the Pareto front is a flat line that
// shows no trade-off. Returns the sentence that says so (and what to do), else "".
constexpr double kSameInfeasibility = 0.05;  // spread of seconds above the SLO, of the largest

std::string equally_infeasible_note(const sim::TuneResult& result, int64_t lag_slo) {
  double least = HUGE_VAL, most = 0.0;
  int valid = 0;
  for (const auto& e : result.evaluations) {
    if (!e.error.empty()) continue;
    ++valid;
    least = std::min(least, e.seconds_above_slo);
    most = std::max(most, e.seconds_above_slo);
  }
  if (valid < 2 || !(least > 0) || most - least > kSameInfeasibility * most) return "";
  return "every configuration spent " + text::thousands(least) +
         (most > least ? " to " + text::thousands(most) : std::string()) +
         " s above the lag SLO of " + std::to_string(lag_slo) + " (within " +
         text::fixed(100 * kSameInfeasibility, 0) +
         " %): the train traces saturate the consumer whatever the parameters, so there is no "
         "trade-off to show and no Pareto front. Scale the traces with --peak-load (for example "
         "--peak-load 1.2: the peak at 1.2x the capacity at max workers) or raise the max "
         "workers (guards.max_workers).\n";
}

nlohmann::json kpis_row_json(const sim::RunResult& run, const sim::ObjectiveWeights& w) {
  return {{"trace", run.label},
          {"objective", sim::run_objective(run.kpis, w)},
          {"kpis", sim::kpis_to_json(run.kpis)}};
}

}  // namespace

CommandMain add_tune_command(CLI::App& app) {
  struct Options {
    std::string policy = "hybrid";  // the default policy of `run`
    std::vector<std::string> train, test;
    std::string strategy = "random";
    int budget = 100;
    uint64_t seed = 1;
    bool seed_set = false;
    int threads = 0;
    int starts = 2;
    std::string space_path, weights, write_config, html_out, json_out, config_path;
  };
  auto o = std::make_shared<Options>();
  auto traces = std::make_shared<TraceOptions>();
  auto overrides = std::make_shared<SimOverrides>();
  CLI::Option* policy_option =
      app.add_option("--policy", o->policy, "Policy to tune: " + policy_name_list())
          ->capture_default_str();
  app.add_option("--train", o->train,
                 "Train trace (repeat for several); the search minimizes "
                 "the mean objective over them")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--test", o->test, "Held-out test trace (repeat for several)")
      ->check(CLI::ExistingFile);
  app.add_option("--strategy", o->strategy, "grid, random or nelder-mead")
      ->check(CLI::IsMember({"grid", "random", "nelder-mead"}))
      ->capture_default_str();
  app.add_option("--budget", o->budget, "Distinct configurations to simulate")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  app.add_option("--seed", o->seed, "Seed of the search and of the simulator (config: sim.seed)")
      ->each([o](const std::string&) { o->seed_set = true; });
  app.add_option("--threads", o->threads, "Simulation threads (0: all cores)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--starts", o->starts, "nelder-mead: independent searches run in lock step")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--space", o->space_path, "Search space (JSON; default: the policy's built-in)")
      ->check(CLI::ExistingFile);
  app.add_option("--weights", o->weights,
                 "Objective weights: slo=W (worker-s per s above SLO, default 100), "
                 "actions=W (worker-s per scale action, default 10)");
  app.add_option("--config", o->config_path,
                 "Config file: \"sim\", \"guards\", \"lag_slo\", and the policy's params as the "
                 "baseline")
      ->check(CLI::ExistingFile);
  app.add_option("--write-config", o->write_config,
                 "Write the best parameters as a config file for `lagpilot run --config`");
  app.add_option("--json", o->json_out, "Write the whole search as JSON ('-': stdout)");
  app.add_option("--html", o->html_out, "Write an HTML report (Pareto front, train/test table)");
  add_trace_options(app, traces);
  add_sim_overrides(app, overrides);

  return [o, traces, overrides, policy_option]() -> int {
    // Config: simulator settings, guards, and the baseline params of the tuned policy.
    // load() checks "sim" and names the file in its errors; lag_slo is the top-level one.
    const AppConfig cfg = o->config_path.empty() ? AppConfig{} : load_config(o->config_path);
    sim::SimConfig sc = sim_config(cfg);
    if (const std::string w = shedding_sim_warning(sc); !w.empty()) spdlog::warn("{}", w);
    overrides->apply(sc);
    match_model_to_reconstruction(*traces, cfg.sim, o->config_path, sc);
    if (o->seed_set) sc.seed = o->seed;
    if (traces->load.companion.size() && o->train.size() + o->test.size() > 1) {
      throw ConfigError("--companion", "applies to one lag recording; got " +
                                           std::to_string(o->train.size() + o->test.size()) +
                                           " trace files");
    }

    // Search space.
    sim::TuneSpace space;
    const bool policy_given = policy_option->count() > 0;
    if (!o->space_path.empty()) {
      const nlohmann::json spec = read_json_file(o->space_path);
      try {
        space = sim::TuneSpace::from_json(spec, policy_given ? o->policy : "", "tune");
      } catch (const ConfigError& e) {
        throw std::runtime_error(o->space_path + ": " + e.what());
      }
    } else {
      space = sim::TuneSpace::default_for(o->policy, cfg.guards);
    }
    // Untuned params: the config's, when it configures this policy, under the space's fixed.
    if (!o->config_path.empty() && cfg.policy_name == space.policy) {
      nlohmann::json fixed =
          cfg.policy_params.is_object() ? cfg.policy_params : nlohmann::json::object();
      fixed.merge_patch(space.fixed);
      space.fixed = fixed;
    }
    const nlohmann::json baseline = make_policy(space.policy, space.fixed, "tune.fixed")->params();

    sim::ObjectiveWeights weights = space.has_weights ? space.weights : sim::ObjectiveWeights{};
    if (!o->weights.empty()) weights = sim::ObjectiveWeights::parse(o->weights, weights);

    // Traces.
    std::vector<sim::Trace> train, test;
    for (const auto& path : o->train)
      train.push_back(load_scaled_trace(path, *traces, sc, cfg.guards));
    for (const auto& path : o->test)
      test.push_back(load_scaled_trace(path, *traces, sc, cfg.guards));
    const int threads = sim::hardware_threads(o->threads);
    double train_hours = 0;
    for (const auto& t : train) train_hours += t.duration() / 3600;
    spdlog::info(
        "tune {}: {} parameters ({}), {} strategy, budget {}, {} train trace(s) "
        "({:.1f} h simulated per configuration), {} test trace(s), {} threads, seed {}",
        space.policy, space.params.size(),
        [&] {
          std::string s;
          for (const auto& p : space.params) s += (s.empty() ? "" : ", ") + p.name;
          return s;
        }(),
        o->strategy, o->budget, train.size(), train_hours, test.size(), threads, o->seed);

    sim::TuneOptions options;
    options.strategy = o->strategy;
    options.budget = o->budget;
    options.seed = o->seed;
    options.threads = threads;
    options.starts = o->starts;
    options.weights = weights;
    options.baseline = baseline;
    // The report's train runs of the best and the baseline (below) are the search's own when
    // both simulate with the same SimConfig, which holds unless the config asks for series
    // (tune turns them off; the report's runs would keep them). Then the best's runs are
    // already done and the baseline's go with the first round, sharing its groups.
    sim::SimConfig report_config = sc;
    report_config.max_decisions = 0;
    const bool train_runs_from_search = !report_config.record_series;
    if (train_runs_from_search) options.extra_params = {baseline};
    auto reporter = std::make_shared<ProgressReporter>(::isatty(STDERR_FILENO) == 1);
    options.progress = [reporter](const sim::TuneProgress& p) { (*reporter)(p); };
    const auto started = std::chrono::steady_clock::now();
    const sim::TuneResult result = sim::tune(space, train, cfg.guards, sc, options);
    reporter->finish();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    int invalid = 0;
    for (const auto& e : result.evaluations) invalid += e.error.empty() ? 0 : 1;
    spdlog::info("tune: {} configurations in {:.1f} s ({:.0f}/min){}", result.evaluations.size(),
                 seconds, seconds > 0 ? 60.0 * result.evaluations.size() / seconds : 0.0,
                 invalid ? ", " + text::fixed(invalid, 0) + " rejected by the policy" : "");
    for (const auto& e : result.evaluations) {
      if (!e.error.empty()) {
        spdlog::warn("first rejected configuration: {}", e.error);
        break;
      }
    }

    const sim::TuneEvaluation& best = result.best_evaluation();
    std::cout << "objective: " << weights.describe() << " (workers; lower is better)\n\n";

    // Pareto front, unless there is none to speak of.
    const std::string flat_note = equally_infeasible_note(result, sc.lag_slo);
    std::vector<std::vector<std::string>> rows;
    if (!flat_note.empty()) {
      std::cout << flat_note << "\n";
    } else {
      std::cout << "Pareto front (" << result.pareto_front.size() << " of "
                << result.evaluations.size()
                << " configurations; worker-seconds vs seconds above the lag SLO of " << sc.lag_slo
                << ", summed over train traces):\n";
      // Configurations with equal (worker_s, above_slo_s) share a row: the lowest objective's.
      rows = {{"", "objective", "worker_s", "above_slo_s", "actions", "parameters"}};
      const auto& front = result.pareto_front;
      for (std::size_t a = 0; a < front.size();) {
        std::size_t b = a + 1;
        std::size_t shown = front[a];
        auto same_point = [&](std::size_t i, std::size_t j) {
          return result.evaluations[i].worker_seconds == result.evaluations[j].worker_seconds &&
                 result.evaluations[i].seconds_above_slo == result.evaluations[j].seconds_above_slo;
        };
        bool has_best = front[a] == result.best;
        for (; b < front.size() && same_point(front[a], front[b]); ++b) {
          has_best = has_best || front[b] == result.best;
          if (result.evaluations[front[b]].objective < result.evaluations[shown].objective) {
            shown = front[b];
          }
        }
        if (has_best) shown = result.best;
        const auto& e = result.evaluations[shown];
        std::string params = space.describe(e.values);
        if (b - a > 1) params += "  (+" + std::to_string(b - a - 1) + " with the same point)";
        rows.push_back({has_best ? "*" : "", text::fixed(e.objective, 4), cell(e.worker_seconds),
                        cell(e.seconds_above_slo), std::to_string(e.scale_actions), params});
        a = b;
      }
      std::cout << table(rows, {true, false, false, false, false, true}) << "\n";
    }

    // Best.
    std::cout << "best (objective " << text::fixed(best.objective, 4)
              << " on train): " << space.describe(best.values) << "\n"
              << "  params: " << params_text(best.params) << "\n"
              << "  baseline: " << params_text(baseline) << "\n\n";

    // Held out: the best and the baseline on train and test, side by side.
    // Both configurations in one pool of runs (on one long trace, side by side on two threads).
    const std::vector<nlohmann::json> both = {best.params, baseline};
    std::vector<sim::SetEvaluation> on_train;
    if (train_runs_from_search) {
      on_train.push_back(sim::set_evaluation(best.kpis, train, weights));
      on_train.push_back(sim::set_evaluation(result.extra_kpis.at(0), train, weights));
    } else {
      on_train =
          sim::evaluate_on(space.policy, both, train, cfg.guards, report_config, weights, threads);
    }
    const sim::SetEvaluation best_train = std::move(on_train[0]);
    const sim::SetEvaluation base_train = std::move(on_train[1]);
    sim::SetEvaluation best_test, base_test;
    if (!test.empty()) {
      std::vector<sim::SetEvaluation> on_test =
          sim::evaluate_on(space.policy, both, test, cfg.guards, report_config, weights, threads);
      best_test = std::move(on_test[0]);
      base_test = std::move(on_test[1]);
    }
    std::cout << "train / test (best vs baseline):\n";
    rows = {{"set", "config", "trace", "objective", "worker_s", "mean_workers", "above_slo_s",
             "actions", "reversals", "p99_lag", "max_lag"}};
    auto add_rows = [&](const std::string& set, const std::string& config,
                        const sim::SetEvaluation& eval) {
      for (const auto& run : eval.runs) {
        const sim::Kpis& k = run.kpis;
        rows.push_back({set, config, run.label, text::fixed(sim::run_objective(k, weights), 4),
                        cell(k.worker_seconds), text::fixed(k.mean_workers, 2),
                        cell(k.seconds_above_slo), std::to_string(k.scale_actions),
                        std::to_string(k.reversals), cell(double(k.p99_lag)),
                        cell(double(k.max_lag))});
      }
      if (eval.runs.size() > 1) {
        rows.push_back(
            {set, config, "(mean)", text::fixed(eval.objective, 4), "", "", "", "", "", "", ""});
      }
    };
    add_rows("train", "best", best_train);
    add_rows("train", "baseline", base_train);
    if (!test.empty()) {
      add_rows("test", "best", best_test);
      add_rows("test", "baseline", base_test);
    }
    std::cout << table(rows, {true, true, true});
    if (test.empty())
      std::cout << "(no --test traces: nothing held out)\n";
    else {
      std::cout << "objective: train " << text::fixed(best_train.objective, 4) << ", test "
                << text::fixed(best_test.objective, 4) << " (baseline: train "
                << text::fixed(base_train.objective, 4) << ", test "
                << text::fixed(base_test.objective, 4) << ")\n";
    }

    // Outputs.
    if (!o->write_config.empty()) {
      nlohmann::json root =
          o->config_path.empty() ? nlohmann::json::object() : read_json_file(o->config_path);
      root["policy"] = {{"name", space.policy}, {"params", best.params}};
      root["guards"] = cfg.guards.to_json();
      nlohmann::json sim_json = sc.to_json();
      sim_json.erase("record_series");
      sim_json.erase("series_interval_seconds");
      sim_json.erase("max_decisions");
      root["sim"] = sim_json;
      // The SLO the search used (--slo, else the config's), for `run` and `sim` alike.
      root["lag_slo"] =
          overrides->slo >= 0 ? static_cast<double>(overrides->slo) : cfg.runtime.lag_slo;
      try {
        config_from_json(root);  // what `lagpilot run --config` will do
      } catch (const ConfigError& e) {
        throw std::logic_error("tune: the config to write does not load back: " +
                               std::string(e.what()));
      }
      write_output(o->write_config, root.dump(2) + "\n");
      spdlog::info("wrote {} (lagpilot run --config {})", o->write_config, o->write_config);
    }
    if (!o->json_out.empty()) {
      nlohmann::json j = sim::to_json(result, space, weights);
      j["seed"] = o->seed;
      j["budget"] = o->budget;
      j["sim"] = sc.to_json();
      j["lag_slo"] = sc.lag_slo;
      j["baseline"] = baseline;
      nlohmann::json held = nlohmann::json::object();
      auto set_json = [&](const sim::SetEvaluation& eval) {
        nlohmann::json runs = nlohmann::json::array();
        for (const auto& run : eval.runs) runs.push_back(kpis_row_json(run, weights));
        return nlohmann::json{{"objective", eval.objective}, {"runs", runs}};
      };
      held["best"] = {{"train", set_json(best_train)}};
      held["baseline"] = {{"train", set_json(base_train)}};
      if (!test.empty()) {
        held["best"]["test"] = set_json(best_test);
        held["baseline"]["test"] = set_json(base_test);
      }
      j["held_out"] = held;
      write_output(o->json_out, j.dump(2) + "\n");
    }
    if (!o->html_out.empty()) {
      sim::TuneHtmlReport report;
      report.title = "lagpilot tune: " + space.policy;
      report.policy = space.policy;
      report.objective = weights.describe();
      for (const auto& e : result.evaluations) {
        if (!e.error.empty()) continue;
        // Only the tuned values: the rest is the same for every point.
        nlohmann::json tuned = nlohmann::json::object();
        for (std::size_t i = 0; i < space.params.size(); ++i) {
          if (space.params[i].integer) {
            tuned[space.params[i].name] = std::llround(e.values[i]);
          } else {
            tuned[space.params[i].name] = e.values[i];
          }
        }
        report.points.push_back(sim::TunePoint{tuned, e.worker_seconds, e.seconds_above_slo,
                                               e.scale_actions, e.objective, e.on_pareto_front});
      }
      report.best_params = best.params;
      for (const auto& run : best_train.runs) report.train_rows.emplace_back(run.label, run.kpis);
      for (const auto& run : best_test.runs) report.test_rows.emplace_back(run.label, run.kpis);
      // The best configuration's series on the first held-out trace (else the first train one).
      const sim::Trace& shown = test.empty() ? train.front() : test.front();
      sim::SimConfig series_config = report_config;
      series_config.record_series = true;
      series_config.series_interval_seconds = std::max(shown.duration() / 2000.0, sc.tick_seconds);
      report.best_run = sim::simulate(shown, PolicySpec{space.policy, best.params, "best"},
                                      cfg.guards, series_config);
      report.has_best_run = true;
      report.best_run_trace = sim::TraceInfo::of(shown);
      report.lag_slo = sc.lag_slo;
      report.no_front_note = flat_note;
      write_output(o->html_out, sim::render_tune_html(report));
      spdlog::info("wrote {}", o->html_out);
    }
    return 0;
  };
}

}  // namespace lagpilot::cli
