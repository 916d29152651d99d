#include "sim/scoreboard.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "policies/infinity.h"
#include "policies/number_text.h"
#include "sim/html_report.h"
#include "sim/report.h"

namespace lagpilot::sim {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const RunResult* find_reference(const std::vector<RunResult>& runs, const std::string& policy) {
  const RunResult* found = nullptr;
  for (const RunResult& r : runs) {
    if (r.policy != policy) continue;
    if (r.label == policy) return &r;
    if (!found) found = &r;
  }
  return found;
}

// count / reference, with 0 / 0 = 0 and n / 0 = +infinity: the goals are "at most a fraction
// of HPA's", so against a reference that never acted any action is too many.
double count_ratio(double count, double reference) {
  if (reference > 0.0) return count / reference;
  return count > 0.0 ? kInf : 0.0;
}

std::string ratio_text(double r) {
  if (std::isnan(r)) return "n/a";
  if (std::isinf(r)) return "inf";
  return text::fixed(r, 2) + "x";
}

std::string verdict(int misses, int traces) {
  return misses == 0 ? "pass" : "FAIL " + std::to_string(misses) + "/" + std::to_string(traces);
}

struct GoalColumn {
  const char* name;
  int PolicyScore::*misses;
};

const GoalColumn kGoals[] = {{"ws", &PolicyScore::worker_seconds_misses},
                             {"slo", &PolicyScore::slo_misses},
                             {"actions", &PolicyScore::actions_misses},
                             {"reversals", &PolicyScore::reversals_misses},
                             {"N*", &PolicyScore::peak_misses}};

// The rows of the table, as text, shared by the text and the HTML renderings.
std::vector<std::string> header() {
  return {"policy",
          "ws/oracle worst",
          "ws/oracle geomean",
          "avoidable s>SLO",
          "HPA's",
          "actions",
          "HPA's",
          "worst vs HPA",
          "reversals",
          "HPA's",
          "worst vs HPA",
          "max workers",
          "goals: ws",
          "slo",
          "actions",
          "reversals",
          "N*"};
}

std::vector<std::string> row(const Scoreboard& b, const PolicyScore& p) {
  const int n = static_cast<int>(p.traces.size());
  std::vector<std::string> cells = {p.label,
                                    ratio_text(p.worst_worker_seconds_ratio),
                                    ratio_text(p.geomean_worker_seconds_ratio),
                                    text::fixed(p.avoidable_seconds, 0),
                                    b.has_hpa ? text::fixed(p.hpa_avoidable_seconds, 0) : "n/a",
                                    std::to_string(p.scale_actions),
                                    b.has_hpa ? std::to_string(p.hpa_scale_actions) : "n/a",
                                    b.has_hpa ? ratio_text(p.worst_actions_ratio) : "n/a",
                                    std::to_string(p.reversals),
                                    b.has_hpa ? std::to_string(p.hpa_reversals) : "n/a",
                                    b.has_hpa ? ratio_text(p.worst_reversals_ratio) : "n/a",
                                    std::to_string(p.max_workers)};
  for (const GoalColumn& g : kGoals) {
    cells.push_back(p.is_oracle ? "(reference)" : verdict(p.*g.misses, n));
  }
  return cells;
}

const TraceActionBound* action_bound_of(const Scoreboard& b, const std::string& trace) {
  for (const TraceActionBound& a : b.action_bounds) {
    if (a.trace == trace) return &a;
  }
  return nullptr;
}

// Whether the worker-seconds goal and a budget (the actions', or with `reversals` the
// reversals') are proven unable to be met together on `trace`.
bool pair_impossible(const Scoreboard& b, const std::string& trace, bool reversals) {
  const TraceActionBound* a = action_bound_of(b, trace);
  if (a == nullptr || (reversals && !a->has_reversal_bound)) return false;
  // With the SLO allowance's bound, that one: it covers the schedules that spend the allowance.
  const ActionBound& x = !reversals         ? a->bound
                         : a->has_slo_bound ? a->slo_bound
                                            : a->reversal_bound;
  return std::string(action_budget_verdict(x, b.goals.max_worker_seconds_ratio)) == "impossible";
}

// worker_ticks / the oracle's, as "1.234x".
std::string oracle_ratio_text(int64_t worker_ticks, int64_t oracle_worker_ticks) {
  return text::fixed(double(worker_ticks) / double(std::max<int64_t>(1, oracle_worker_ticks)), 3) +
         "x";
}

std::vector<std::string> reversal_bound_header(const ScoreboardGoals& g) {
  return {"trace",
          "HPA's reversals",
          "R",
          "least ws at <=R reversals",
          "/ oracle",
          "witness / oracle",
          "witness reversals",
          "witness actions (K)",
          "price",
          "ws <= " + text::num(g.max_worker_seconds_ratio) + "x with <= R reversals",
          "both budgets: bound / oracle",
          "witness / oracle (actions, reversals)",
          "ws with <= K actions and <= R reversals",
          "A (ticks above the SLO)",
          "<= R reversals and <= A: bound / oracle",
          "witness / oracle (reversals, ticks above)",
          "ws <= " + text::num(g.max_worker_seconds_ratio) + "x with <= R reversals and <= A"};
}

std::vector<std::string> reversal_bound_row(const Scoreboard& b, const TraceActionBound& a) {
  const ActionBound& x = a.reversal_bound;
  return {
      a.trace,
      std::to_string(a.hpa_reversals),
      std::to_string(x.budget),
      x.budget_feasible ? text::fixed(x.bound_worker_seconds(), 0) : "none keeps the SLO",
      x.budget_feasible ? text::fixed(x.bound_ratio(), 3) + "x" : "inf",
      x.has_witness ? text::fixed(x.witness_ratio(), 3) + "x" : "-",
      x.has_witness ? std::to_string(x.witness_reversals) : "-",
      (x.has_witness ? std::to_string(x.witness_actions) : "-") + " (" +
          std::to_string(a.bound.budget) + ")",
      std::to_string(x.best_price),
      action_budget_verdict(x, b.goals.max_worker_seconds_ratio),
      x.budget_feasible && a.joint.budget_feasible
          ? oracle_ratio_text(a.joint.bound_worker_ticks, a.bound.oracle_worker_ticks)
          : "inf",
      a.joint.has_witness
          ? oracle_ratio_text(a.joint.witness_worker_ticks, a.bound.oracle_worker_ticks) + " (" +
                std::to_string(a.joint.witness_actions) + ", " +
                std::to_string(a.joint.witness_reversals) + ")"
          : "-",
      joint_budget_verdict(a.joint, a.bound.oracle_worker_ticks, b.goals.max_worker_seconds_ratio),
      a.has_slo_bound ? std::to_string(a.slo_bound.slo_allowance_ticks) : "-",
      !a.has_slo_bound              ? "-"
      : a.slo_bound.budget_feasible ? text::fixed(a.slo_bound.bound_ratio(), 3) + "x"
                                    : "inf",
      a.has_slo_bound && a.slo_bound.has_witness
          ? text::fixed(a.slo_bound.witness_ratio(), 3) + "x (" +
                std::to_string(a.slo_bound.witness_reversals) + ", " +
                std::to_string(a.slo_bound.witness_slo_ticks) + ")"
          : "-",
      a.has_slo_bound ? action_budget_verdict(a.slo_bound, b.goals.max_worker_seconds_ratio)
                      : "not needed"};
}

std::vector<std::string> action_bound_header(const ScoreboardGoals& g) {
  return {"trace",
          "HPA's actions",
          "K",
          "oracle ws",
          "oracle actions",
          "least ws at <=K actions",
          "/ oracle",
          "witness / oracle",
          "witness actions",
          "witness reversals (HPA's)",
          "price",
          "ws <= " + text::num(g.max_worker_seconds_ratio) + "x with <= K actions"};
}

std::vector<std::string> action_bound_row(const Scoreboard& b, const TraceActionBound& a) {
  const ActionBound& x = a.bound;
  return {a.trace,
          std::to_string(a.hpa_scale_actions),
          std::to_string(x.budget),
          text::fixed(x.oracle_worker_seconds(), 0),
          std::to_string(x.oracle_actions),
          x.budget_feasible ? text::fixed(x.bound_worker_seconds(), 0) : "none keeps the SLO",
          x.budget_feasible ? text::fixed(x.bound_ratio(), 3) + "x" : "inf",
          x.has_witness ? text::fixed(x.witness_ratio(), 3) + "x" : "-",
          x.has_witness ? std::to_string(x.witness_actions) : "-",
          (x.has_witness ? std::to_string(x.witness_reversals) : "-") + " (" +
              std::to_string(a.hpa_reversals) + ")",
          std::to_string(x.best_price),
          action_budget_verdict(x, b.goals.max_worker_seconds_ratio)};
}

// The JSON fields of a reversal-budget bound, with or without the SLO allowance.
nlohmann::json budget_bound_json(const ActionBound& y, double max_ratio) {
  const auto or_null = [](bool has, auto value) {
    return has ? nlohmann::json(value) : nlohmann::json(nullptr);
  };
  return {{"budget", y.budget},
          {"budget_feasible", y.budget_feasible},
          {"bound_worker_seconds", or_null(y.budget_feasible, y.bound_worker_seconds())},
          {"bound_ratio", or_null(y.budget_feasible, y.bound_ratio())},
          {"best_price", y.best_price},
          {"exact", y.exact},
          {"solves", y.probes.size()},
          {"witness_worker_seconds", or_null(y.has_witness, y.witness_worker_seconds())},
          {"witness_reversals", or_null(y.has_witness, y.witness_reversals)},
          {"verdict", action_budget_verdict(y, max_ratio)}};
}

void format_rows(std::ostringstream& out, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& r : rows) {
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  }
  for (const auto& r : rows) {
    for (std::size_t c = 0; c < r.size(); ++c) {
      const std::string pad(width[c] - r[c].size(), ' ');
      out << (c == 0 ? r[c] + pad : pad + r[c]) << (c + 1 < r.size() ? "  " : "\n");
    }
  }
}

// One table row's cells: the first is the row's name, and a cell `bold` picks is set in bold
// (the "best" class).
template <typename Bold>
void write_html_cells(std::ostringstream& out, const std::vector<std::string>& cells, Bold bold) {
  for (std::size_t c = 0; c < cells.size(); ++c) {
    out << "<td"
        << (c == 0           ? " class=\"name\""
            : bold(cells[c]) ? " class=\"best\""
                             : "")
        << ">" << html_escape(cells[c]) << "</td>";
  }
}

}  // namespace

int64_t action_budget_of(const std::vector<RunResult>& runs, const ScoreboardGoals& goals) {
  const RunResult* hpa = find_reference(runs, "hpa");
  if (hpa == nullptr) return -1;
  return static_cast<int64_t>(
      std::floor(goals.max_actions_ratio * double(hpa->kpis.scale_actions) + 1e-9));
}

int64_t slo_allowance_ticks_of(const std::vector<RunResult>& runs, double tick_seconds,
                               const ScoreboardGoals& goals) {
  const RunResult* hpa = find_reference(runs, "hpa");
  if (hpa == nullptr || !(tick_seconds > 0.0)) return -1;
  const RunResult* oracle = find_reference(runs, "oracle");
  const double unavoidable = oracle ? oracle->kpis.seconds_above_slo : 0.0;
  const double hpa_avoidable = std::max(0.0, hpa->kpis.seconds_above_slo - unavoidable);
  const double allowed =
      goals.avoidable_slo_factor * hpa_avoidable + goals.avoidable_slo_allowance_seconds;
  return static_cast<int64_t>(std::floor(allowed / tick_seconds + 1e-9));
}

int64_t reversal_budget_of(const std::vector<RunResult>& runs, const ScoreboardGoals& goals) {
  const RunResult* hpa = find_reference(runs, "hpa");
  if (hpa == nullptr) return -1;
  return static_cast<int64_t>(
      std::floor(goals.max_reversals_ratio * double(hpa->kpis.reversals) + 1e-9));
}

nlohmann::json ScoreboardGoals::to_json() const {
  return {{"max_worker_seconds_ratio", max_worker_seconds_ratio},
          {"avoidable_slo_factor", avoidable_slo_factor},
          {"avoidable_slo_allowance_seconds", avoidable_slo_allowance_seconds},
          {"max_actions_ratio", max_actions_ratio},
          {"max_reversals_ratio", max_reversals_ratio}};
}

double model_peak_workers(const ConsumerModelConfig& model) {
  if (!(model.usl_kappa > 0.0)) return kInf;
  return std::sqrt(std::max(0.0, 1.0 - model.usl_sigma) / model.usl_kappa);
}

Scoreboard build_scoreboard(const std::vector<TraceRuns>& traces, double peak_workers,
                            const ScoreboardGoals& goals) {
  if (traces.empty() || traces.front().runs.empty()) {
    throw std::invalid_argument("scoreboard: no runs to score");
  }
  Scoreboard board;
  board.goals = goals;
  board.peak_workers = peak_workers;
  board.has_oracle = true;
  board.has_hpa = true;
  const std::vector<RunResult>& first = traces.front().runs;
  for (const TraceRuns& t : traces) {
    board.traces.push_back(t.trace);
    if (t.runs.size() != first.size()) {
      throw std::invalid_argument("scoreboard: trace " + t.trace + " has " +
                                  std::to_string(t.runs.size()) + " runs, the first has " +
                                  std::to_string(first.size()));
    }
    for (std::size_t i = 0; i < first.size(); ++i) {
      if (t.runs[i].label != first[i].label) {
        throw std::invalid_argument("scoreboard: run " + std::to_string(i) + " of trace " +
                                    t.trace + " is \"" + t.runs[i].label + "\", not \"" +
                                    first[i].label + "\"");
      }
    }
    board.has_oracle = board.has_oracle && find_reference(t.runs, "oracle") != nullptr;
    board.has_hpa = board.has_hpa && find_reference(t.runs, "hpa") != nullptr;
  }

  for (std::size_t i = 0; i < first.size(); ++i) {
    PolicyScore p;
    p.label = first[i].label;
    p.policy = first[i].policy;
    double log_sum = 0.0;
    int ratios = 0;
    double worst = -kInf;
    for (const TraceRuns& t : traces) {
      const RunResult& run = t.runs[i];
      const RunResult* oracle = find_reference(t.runs, "oracle");
      const RunResult* hpa = find_reference(t.runs, "hpa");
      p.is_oracle = p.is_oracle || &run == oracle;
      p.is_hpa = p.is_hpa || &run == hpa;
      TraceScore s;
      s.trace = t.trace;
      s.kpis = run.kpis;
      const double unavoidable = oracle ? oracle->kpis.seconds_above_slo : 0.0;
      s.avoidable_seconds = std::max(0.0, run.kpis.seconds_above_slo - unavoidable);
      if (oracle && oracle->kpis.worker_seconds > 0.0) {
        s.worker_seconds_ratio = run.kpis.worker_seconds / oracle->kpis.worker_seconds;
        log_sum += std::log(s.worker_seconds_ratio);
        ++ratios;
        worst = std::max(worst, s.worker_seconds_ratio);
      }
      s.worker_seconds_ok = s.worker_seconds_ratio <= goals.max_worker_seconds_ratio;
      if (hpa) {
        s.hpa_avoidable_seconds = std::max(0.0, hpa->kpis.seconds_above_slo - unavoidable);
        s.hpa_scale_actions = hpa->kpis.scale_actions;
        s.hpa_reversals = hpa->kpis.reversals;
        s.slo_ok = s.avoidable_seconds <= goals.avoidable_slo_factor * s.hpa_avoidable_seconds +
                                              goals.avoidable_slo_allowance_seconds;
        s.actions_ok = run.kpis.scale_actions <= goals.max_actions_ratio * s.hpa_scale_actions;
        s.reversals_ok = run.kpis.reversals <= goals.max_reversals_ratio * s.hpa_reversals;
      }
      s.peak_ok = run.kpis.max_workers <= peak_workers;
      p.avoidable_seconds += s.avoidable_seconds;
      p.hpa_avoidable_seconds += s.hpa_avoidable_seconds;
      p.scale_actions += run.kpis.scale_actions;
      p.hpa_scale_actions += s.hpa_scale_actions;
      p.reversals += run.kpis.reversals;
      p.hpa_reversals += s.hpa_reversals;
      p.worst_actions_ratio =
          std::max(p.worst_actions_ratio, count_ratio(run.kpis.scale_actions, s.hpa_scale_actions));
      p.worst_reversals_ratio =
          std::max(p.worst_reversals_ratio, count_ratio(run.kpis.reversals, s.hpa_reversals));
      p.max_workers = std::max(p.max_workers, run.kpis.max_workers);
      p.worker_seconds_misses += s.worker_seconds_ok ? 0 : 1;
      p.slo_misses += s.slo_ok ? 0 : 1;
      p.actions_misses += s.actions_ok ? 0 : 1;
      p.reversals_misses += s.reversals_ok ? 0 : 1;
      p.peak_misses += s.peak_ok ? 0 : 1;
      p.traces.push_back(std::move(s));
    }
    if (ratios == static_cast<int>(traces.size())) {
      p.worst_worker_seconds_ratio = worst;
      p.geomean_worker_seconds_ratio = std::exp(log_sum / ratios);
    } else {
      p.worst_worker_seconds_ratio = p.geomean_worker_seconds_ratio = kNaN;
    }
    board.policies.push_back(std::move(p));
  }
  return board;
}

std::string format_scoreboard(const Scoreboard& b) {
  std::vector<std::vector<std::string>> rows = {header()};
  for (const PolicyScore& p : b.policies) rows.push_back(row(b, p));
  std::ostringstream out;
  out << "scoreboard over " << b.traces.size() << " traces; goals per trace: worker-seconds <= "
      << text::num(b.goals.max_worker_seconds_ratio)
      << "x oracle, avoidable s above SLO <= " << text::num(b.goals.avoidable_slo_factor)
      << "x HPA's + " << text::num(b.goals.avoidable_slo_allowance_seconds)
      << " s, scale actions <= " << text::num(b.goals.max_actions_ratio)
      << "x HPA's, reversals <= " << text::num(b.goals.max_reversals_ratio)
      << "x HPA's, max workers <= N* ("
      << (std::isfinite(b.peak_workers) ? text::fixed(b.peak_workers, 1) : "none") << ")\n";
  format_rows(out, rows);
  if (!b.has_oracle) out << "no oracle run on every trace: the worker-seconds goal is not met\n";
  if (!b.has_hpa) out << "no hpa run on every trace: the HPA-relative goals are not met\n";
  for (const PolicyScore& p : b.policies) {
    if (p.is_oracle || p.is_hpa || p.meets_all()) continue;
    out << p.label << " misses:";
    for (const TraceScore& s : p.traces) {
      std::string what;
      if (!s.worker_seconds_ok) what += " ws " + ratio_text(s.worker_seconds_ratio);
      if (!s.slo_ok) {
        what += " slo " + text::fixed(s.avoidable_seconds, 0) + "s (HPA's " +
                text::fixed(s.hpa_avoidable_seconds, 0) + ")";
      }
      if (!s.actions_ok) {
        what += " actions " + std::to_string(s.kpis.scale_actions) + " (HPA's " +
                std::to_string(s.hpa_scale_actions) + ")";
      }
      if (!s.reversals_ok) {
        what += " reversals " + std::to_string(s.kpis.reversals) + " (HPA's " +
                std::to_string(s.hpa_reversals) + ")";
      }
      if (!s.peak_ok) what += " max workers " + std::to_string(s.kpis.max_workers);
      if (!what.empty() && (!s.worker_seconds_ok || !s.actions_ok) &&
          pair_impossible(b, s.trace, false)) {
        what += " (ws and actions together: impossible)";
      }
      if (!what.empty() && (!s.worker_seconds_ok || !s.reversals_ok) &&
          pair_impossible(b, s.trace, true)) {
        what += " (ws and reversals together: impossible)";
      }
      if (!what.empty()) out << " [" << s.trace << ":" << what << "]";
    }
    out << "\n";
  }
  if (!b.action_bounds.empty()) {
    out << "least worker-seconds of any schedule that keeps the lag within the SLO (outside the "
           "oracle's unavoidable ticks) with at most K = floor("
        << text::num(b.goals.max_actions_ratio)
        << " x HPA's) scale actions (sim/action_bound.h: a Lagrangian bound from the oracle's "
           "DP, fluid model; witness: a real schedule with <= K actions found on the way):\n";
    std::vector<std::vector<std::string>> bound_rows = {action_bound_header(b.goals)};
    for (const TraceActionBound& a : b.action_bounds) bound_rows.push_back(action_bound_row(b, a));
    format_rows(out, bound_rows);
    std::vector<std::vector<std::string>> reversal_rows = {reversal_bound_header(b.goals)};
    for (const TraceActionBound& a : b.action_bounds) {
      if (a.has_reversal_bound) reversal_rows.push_back(reversal_bound_row(b, a));
    }
    if (reversal_rows.size() > 1) {
      out << "the same with at most R = floor(" << text::num(b.goals.max_reversals_ratio)
          << " x HPA's) direction reversals (any number of actions; witness: a schedule with "
             "<= R reversals, its actions beside K; the last columns: at most A ticks above "
             "the SLO as well, the SLO goal's allowance, where needed):\n";
      format_rows(out, reversal_rows);
    }
  }
  return out.str();
}

nlohmann::json scoreboard_to_json(const Scoreboard& b) {
  nlohmann::json policies = nlohmann::json::array();
  for (const PolicyScore& p : b.policies) {
    nlohmann::json traces = nlohmann::json::array();
    for (const TraceScore& s : p.traces) {
      traces.push_back({{"trace", s.trace},
                        {"kpis", kpis_to_json(s.kpis)},
                        {"worker_seconds_ratio", s.worker_seconds_ratio},
                        {"avoidable_seconds_above_slo", s.avoidable_seconds},
                        {"hpa_avoidable_seconds_above_slo", s.hpa_avoidable_seconds},
                        {"hpa_scale_actions", s.hpa_scale_actions},
                        {"hpa_reversals", s.hpa_reversals},
                        {"goals",
                         {{"worker_seconds", s.worker_seconds_ok},
                          {"slo", s.slo_ok},
                          {"scale_actions", s.actions_ok},
                          {"reversals", s.reversals_ok},
                          {"peak", s.peak_ok}}}});
    }
    nlohmann::json j = {{"label", p.label},
                        {"policy", p.policy},
                        {"reference", p.is_oracle ? "oracle"
                                      : p.is_hpa  ? "hpa"
                                                  : ""},
                        {"worst_worker_seconds_ratio", p.worst_worker_seconds_ratio},
                        {"geomean_worker_seconds_ratio", p.geomean_worker_seconds_ratio},
                        {"avoidable_seconds_above_slo", p.avoidable_seconds},
                        {"hpa_avoidable_seconds_above_slo", p.hpa_avoidable_seconds},
                        {"scale_actions", p.scale_actions},
                        {"hpa_scale_actions", p.hpa_scale_actions},
                        {"worst_scale_actions_ratio", p.worst_actions_ratio},
                        {"reversals", p.reversals},
                        {"hpa_reversals", p.hpa_reversals},
                        {"worst_reversals_ratio", p.worst_reversals_ratio},
                        {"max_workers", p.max_workers},
                        {"traces_missing",
                         {{"worker_seconds", p.worker_seconds_misses},
                          {"slo", p.slo_misses},
                          {"scale_actions", p.actions_misses},
                          {"reversals", p.reversals_misses},
                          {"peak", p.peak_misses}}},
                        {"meets_all_goals", p.meets_all()},
                        {"traces", std::move(traces)}};
    policies.push_back(std::move(j));
  }
  nlohmann::json out = {{"goals", b.goals.to_json()},
                        {"traces", b.traces},
                        {"peak_workers", b.peak_workers},
                        {"policies", std::move(policies)}};
  if (!b.action_bounds.empty()) {
    nlohmann::json bounds = nlohmann::json::array();
    for (const TraceActionBound& a : b.action_bounds) {
      const ActionBound& x = a.bound;
      nlohmann::json probes = nlohmann::json::array();
      for (const ActionBoundProbe& p : x.probes) {
        probes.push_back({{"price", p.price},
                          {"priced_optimum", p.priced_optimum},
                          {"changes", p.changes},
                          {"bound_worker_ticks", p.value},
                          {"pool_actions", p.pool_actions},
                          {"pool_reversals", p.pool_reversals},
                          {"pool_worker_ticks", p.pool_worker_ticks},
                          {"pool_keeps_slo", p.pool_keeps_slo}});
      }
      bounds.push_back(
          {{"trace", a.trace},
           {"hpa_scale_actions", a.hpa_scale_actions},
           {"hpa_reversals", a.hpa_reversals},
           {"budget", x.budget},
           {"oracle_worker_seconds", x.oracle_worker_seconds()},
           {"oracle_scale_actions", x.oracle_actions},
           {"budget_feasible", x.budget_feasible},
           {"bound_worker_seconds",
            x.budget_feasible ? nlohmann::json(x.bound_worker_seconds()) : nlohmann::json(nullptr)},
           {"bound_ratio",
            x.budget_feasible ? nlohmann::json(x.bound_ratio()) : nlohmann::json(nullptr)},
           {"best_price", x.best_price},
           {"exact", x.exact},
           {"witness_worker_seconds",
            x.has_witness ? nlohmann::json(x.witness_worker_seconds()) : nlohmann::json(nullptr)},
           {"witness_scale_actions",
            x.has_witness ? nlohmann::json(x.witness_actions) : nlohmann::json(nullptr)},
           {"verdict", action_budget_verdict(x, b.goals.max_worker_seconds_ratio)},
           {"probes", std::move(probes)}});
      const ActionBound& y = a.reversal_bound;
      if (a.has_reversal_bound) {
        nlohmann::json reversals = budget_bound_json(y, b.goals.max_worker_seconds_ratio);
        reversals["witness_scale_actions"] =
            y.has_witness ? nlohmann::json(y.witness_actions) : nlohmann::json(nullptr);
        bounds.back()["reversals"] = std::move(reversals);
        const JointBound& z = a.joint;
        bounds.back()["both"] = {
            {"budget_feasible", z.budget_feasible},
            {"bound_worker_seconds", double(z.bound_worker_ticks) * x.tick_seconds},
            {"solves", z.solves},
            {"witness_worker_seconds",
             z.has_witness ? nlohmann::json(double(z.witness_worker_ticks) * x.tick_seconds)
                           : nlohmann::json(nullptr)},
            {"witness_scale_actions",
             z.has_witness ? nlohmann::json(z.witness_actions) : nlohmann::json(nullptr)},
            {"witness_reversals",
             z.has_witness ? nlohmann::json(z.witness_reversals) : nlohmann::json(nullptr)},
            {"verdict",
             joint_budget_verdict(z, x.oracle_worker_ticks, b.goals.max_worker_seconds_ratio)}};
      }
      if (a.has_slo_bound) {
        const ActionBound& w = a.slo_bound;
        nlohmann::json sigma = nlohmann::json::array();
        for (const ActionBoundProbe& p : w.probes) {
          sigma.push_back({{"price", p.price},
                           {"slo_price", p.slo_price},
                           {"reversals", p.changes},
                           {"ticks_above_slo", p.slo_ticks},
                           {"bound_worker_ticks", p.value}});
        }
        nlohmann::json spent = budget_bound_json(w, b.goals.max_worker_seconds_ratio);
        spent["slo_allowance_ticks"] = w.slo_allowance_ticks;
        spent["lag_ceiling"] = w.lag_ceiling;
        spent["best_slo_price"] = w.best_slo_price;
        spent["witness_ticks_above_slo"] =
            w.has_witness ? nlohmann::json(w.witness_slo_ticks) : nlohmann::json(nullptr);
        spent["probes"] = std::move(sigma);
        bounds.back()["reversals_and_slo_allowance"] = std::move(spent);
      }
    }
    out["action_bounds"] = std::move(bounds);
  }
  return rounded_json(out);
}

void write_scoreboard_table(std::ostringstream& out, const Scoreboard& b) {
  const std::vector<std::string> head = header();
  out << "<div class=\"table-wrap\"><table id=\"scoreboard\" class=\"kpi\">\n<thead><tr>";
  for (std::size_t c = 0; c < head.size(); ++c) {
    out << "<th" << (c == 0 ? " class=\"name\"" : "") << ">" << html_escape(head[c]) << "</th>";
  }
  out << "</tr></thead>\n<tbody>\n";
  for (const PolicyScore& p : b.policies) {
    out << "<tr" << (p.is_oracle ? " class=\"oracle\"" : "") << ">";
    write_html_cells(out, row(b, p),
                     [](const std::string& cell) { return cell.rfind("FAIL", 0) == 0; });
    out << "</tr>\n";
  }
  out << "</tbody></table></div>\n<p class=\"note\">Over " << b.traces.size()
      << " traces. Goals, on every trace: worker-seconds at most "
      << html_escape(text::num(b.goals.max_worker_seconds_ratio))
      << "x the oracle's; seconds above the lag SLO beyond the oracle's (avoidable) at most "
      << html_escape(text::num(b.goals.avoidable_slo_factor)) << "x HPA's avoidable plus "
      << html_escape(text::num(b.goals.avoidable_slo_allowance_seconds))
      << " s; scale actions and direction reversals at most "
      << html_escape(text::num(b.goals.max_actions_ratio))
      << "x HPA's; the pool never above the model's throughput peak N*. FAIL n/m: missed on n "
         "of m traces (in bold).</p>\n";
  if (b.action_bounds.empty()) return;
  // One table per budget; "impossible" in bold.
  auto table = [&](const char* id, const std::vector<std::string>& head, bool reversals) {
    out << "<div class=\"table-wrap\"><table id=\"" << id << "\" class=\"kpi\">\n<thead><tr>";
    for (std::size_t c = 0; c < head.size(); ++c) {
      out << "<th" << (c == 0 ? " class=\"name\"" : "") << ">" << html_escape(head[c]) << "</th>";
    }
    out << "</tr></thead>\n<tbody>\n";
    for (const TraceActionBound& a : b.action_bounds) {
      if (reversals && !a.has_reversal_bound) continue;
      const std::vector<std::string> cells =
          reversals ? reversal_bound_row(b, a) : action_bound_row(b, a);
      out << "<tr>";
      write_html_cells(out, cells, [](const std::string& cell) { return cell == "impossible"; });
      out << "</tr>\n";
    }
    out << "</tbody></table></div>\n";
  };
  table("action-bound", action_bound_header(b.goals), false);
  const bool any_reversal_bound =
      std::any_of(b.action_bounds.begin(), b.action_bounds.end(),
                  [](const TraceActionBound& a) { return a.has_reversal_bound; });
  if (any_reversal_bound) table("reversal-bound", reversal_bound_header(b.goals), true);
  out << "<p class=\"note\">The least worker-seconds of any schedule "
         "that keeps the lag within the SLO (outside the oracle's unavoidable ticks) with at "
         "most K scale actions, K = floor("
      << html_escape(text::num(b.goals.max_actions_ratio))
      << " x HPA's): a Lagrangian lower bound from the oracle's DP (fluid model). impossible: "
         "no policy meets the worker-seconds and actions goals together on that trace; "
         "possible: a schedule with at most K actions found on the way does; open: neither "
         "shown. The second table: the same with at most R = floor("
      << html_escape(text::num(b.goals.max_reversals_ratio))
      << " x HPA's) reversals, with both budgets at once, and with at most R reversals and "
         "at most A ticks above the SLO outside the unavoidable ones (the SLO goal's "
         "allowance; computed where the bound within the SLO leaves the answer open or "
         "impossible).</p>\n";
}

}  // namespace lagpilot::sim
