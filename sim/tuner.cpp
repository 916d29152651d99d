#include "sim/tuner.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "policies/config_reader.h"
#include "policies/infinity.h"
#include "policies/number_text.h"
#include "policies/policy_factory.h"
#include "sim/parallel_for.h"
#include "sim/random.h"
#include "sim/report.h"

namespace lagpilot::sim {
namespace {

// Search randomness, apart from the simulator's own streams of the same seed.
constexpr uint64_t kSearchStream = 0x74756e65;  // "tune"
// A search stops after this many proposals per budgeted configuration even if the budget is
// not used up (a small integer space answered from the cache again and again).
constexpr int kMaxProposalsPerBudget = 20;
// At most this many runs a thread go to one simulate_all() call (see Evaluator::run): every run
// of a call is alive at once, so memory grows with it (a run's lag quantile table alone is up to
// 512 KB), and the runs of a tick share the caches.
constexpr std::size_t kMaxGroupRuns = 8;

// Sets `e`'s objective (the mean of run_objective over its n runs) and its sums over them, in
// run order. A TuneEvaluation and a SetEvaluation both carry these four fields; kpis_of(i) gives
// run i's KPIs.
template <typename Evaluation, typename KpisOf>
void aggregate(Evaluation& e, std::size_t n, const KpisOf& kpis_of,
               const ObjectiveWeights& weights) {
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const Kpis& k = kpis_of(i);
    sum += run_objective(k, weights);
    e.worker_seconds += k.worker_seconds;
    e.seconds_above_slo += k.seconds_above_slo;
    e.scale_actions += k.scale_actions;
  }
  e.objective = sum / static_cast<double>(n);
}

void aggregate(SetEvaluation& set, const ObjectiveWeights& weights) {
  aggregate(
      set, set.runs.size(), [&](std::size_t i) -> const Kpis& { return set.runs[i].kpis; },
      weights);
}

// Algorithm: memoized, budgeted, parallel evaluation of candidates. A batch of candidates (value
// vectors) is resolved in order: a known configuration is answered from the cache; a new one
// is admitted while the budget lasts. Admitted candidates are built once (make_policy judges
// their params; a rejected one is recorded as invalid) and every (candidate, train trace) run
// goes to the thread pool. Aggregation happens after the batch, in candidate order.
class Evaluator {
 public:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  Evaluator(const TuneSpace& space, const std::vector<Trace>& train, const GuardConfig& guards,
            const SimConfig& config, const TuneOptions& options, int total)
      : space_(space),
        train_(train),
        guards_(guards),
        config_(config),
        options_(options),
        threads_(hardware_threads(options.threads)),
        budget_(static_cast<std::size_t>(options.budget)) {
    progress_.total = total;
  }

  // Index into evaluations() of each candidate, kNone where the budget ran out first.
  std::vector<std::size_t> evaluate(const std::vector<std::vector<double>>& candidates) {
    std::vector<std::size_t> where(candidates.size(), kNone);
    std::vector<std::size_t> fresh;  // indices into evaluations_ admitted in this batch
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      auto it = index_.find(candidates[c]);
      if (it != index_.end()) {
        where[c] = it->second;
        continue;
      }
      if (evaluations_.size() >= budget_) continue;
      TuneEvaluation e;
      e.values = candidates[c];
      e.params = space_.params_for(e.values);
      try {
        e.params = make_policy(space_.policy, e.params, "params")->params();
      } catch (const ConfigError& error) {
        e.error = error.what();
      }
      where[c] = evaluations_.size();
      index_.emplace(e.values, evaluations_.size());
      fresh.push_back(evaluations_.size());
      evaluations_.push_back(std::move(e));
    }
    run(fresh);
    return where;
  }

  std::vector<TuneEvaluation>& evaluations() { return evaluations_; }
  bool budget_left() const { return evaluations_.size() < budget_; }
  // TuneOptions::extra_params' KPIs, per trace (after the first evaluate()).
  std::vector<std::vector<Kpis>>& extra_kpis() { return extra_kpis_; }

 private:
  void run(const std::vector<std::size_t>& fresh) {
    // The runs of this round: every valid fresh candidate (and, in the first round, every extra
    // params set) on every trace. Run r of a trace is runs[r]: candidate f (< fresh.size()) or
    // extra f - fresh.size().
    const std::size_t traces = train_.size();
    std::vector<std::size_t> runs;
    std::vector<std::unique_ptr<std::atomic<std::size_t>>> runs_left(fresh.size());
    for (std::size_t f = 0; f < fresh.size(); ++f) {
      // atomic: counts down as the candidate's runs finish on any thread; the thread that
      // brings it to zero sees every run's Kpis (they were written before the decrement).
      runs_left[f] = std::make_unique<std::atomic<std::size_t>>(traces);
      if (!evaluations_[fresh[f]].error.empty()) {
        finished(nullptr);
        continue;
      }
      runs.push_back(f);
    }
    const std::vector<nlohmann::json> no_extras;
    const std::vector<nlohmann::json>& extras = extras_done_ ? no_extras : options_.extra_params;
    extras_done_ = true;
    for (std::size_t x = 0; x < extras.size(); ++x) runs.push_back(fresh.size() + x);
    if (!extras.empty()) extra_kpis_.assign(extras.size(), std::vector<Kpis>(traces));
    if (runs.empty()) return;
    const auto params_of = [&](std::size_t f) -> const nlohmann::json& {
      return f < fresh.size() ? evaluations_[fresh[f]].params : extras[f - fresh.size()];
    };

    std::vector<Kpis> kpis(fresh.size() * traces);  // candidate f on trace t: f * traces + t
    // Takes the results of the runs `members` on trace t (in that order).
    const auto collect = [&](std::size_t t, const std::vector<std::size_t>& members,
                             const std::vector<RunResult>& results) {
      for (std::size_t m = 0; m < members.size(); ++m) {
        const std::size_t f = members[m];
        if (f >= fresh.size()) {
          extra_kpis_[f - fresh.size()][t] = results[m].kpis;
          continue;
        }
        kpis[f * traces + t] = results[m].kpis;
        if (--*runs_left[f] > 0) continue;
        // The candidate's last run: aggregate it (no other thread touches it now).
        TuneEvaluation& e = evaluations_[fresh[f]];
        e.kpis.assign(kpis.begin() + static_cast<std::ptrdiff_t>(f * traces),
                      kpis.begin() + static_cast<std::ptrdiff_t>((f + 1) * traces));
        aggregate(
            e, traces, [&](std::size_t u) -> const Kpis& { return e.kpis[u]; }, options_.weights);
        finished(&e);
      }
    };
    const auto specs_of = [&](const std::vector<std::size_t>& members) {
      std::vector<PolicySpec> specs;
      for (const std::size_t f : members) {
        specs.push_back(PolicySpec{space_.policy, params_of(f), "candidate"});
      }
      return specs;
    };
    const auto threads = static_cast<std::size_t>(threads_);
    if (runs.size() >= threads) {
      // At least a run a thread: the runs of a trace go to simulate_all() together (at most
      // kMaxGroupRuns a thread per call), which spreads them over the threads itself and lets
      // them share their arrival counts and, while their pools are equal, one model.
      const std::size_t chunk = kMaxGroupRuns * threads;
      for (std::size_t t = 0; t < traces; ++t) {
        for (std::size_t from = 0; from < runs.size(); from += chunk) {
          const std::vector<std::size_t> members(
              runs.begin() + static_cast<std::ptrdiff_t>(from),
              runs.begin() + static_cast<std::ptrdiff_t>(std::min(from + chunk, runs.size())));
          collect(t, members,
                  simulate_all(train_[t], specs_of(members), guards_, config_,
                               static_cast<int>(std::min(threads, members.size()))));
        }
      }
      return;
    }
    // Fewer runs than threads: a run a job, the traces side by side.
    parallel_for(traces * runs.size(), threads_, [&](std::size_t job) {
      const std::size_t t = job / runs.size();
      const std::vector<std::size_t> member = {runs[job % runs.size()]};
      collect(t, member, simulate_all(train_[t], specs_of(member), guards_, config_, 1));
    });
  }

  // One more candidate done (nullptr: rejected by the policy, nothing simulated).
  void finished(const TuneEvaluation* e) {
    std::lock_guard<std::mutex> lock(progress_mutex_);
    ++progress_.done;
    if (e) progress_.best_objective = std::min(progress_.best_objective, e->objective);
    if (options_.progress) options_.progress(progress_);
  }

  const TuneSpace& space_;
  const std::vector<Trace>& train_;
  const GuardConfig& guards_;
  const SimConfig& config_;
  const TuneOptions& options_;
  const int threads_;
  const std::size_t budget_;
  std::vector<TuneEvaluation> evaluations_;
  std::map<std::vector<double>, std::size_t> index_;
  bool extras_done_ = false;  // TuneOptions::extra_params go with the first round
  std::vector<std::vector<Kpis>> extra_kpis_;
  std::mutex progress_mutex_;  // guards progress_ and serializes the progress callback
  TuneProgress progress_;
};

std::vector<std::vector<double>> grid_points(const TuneSpace& space, int budget) {
  const std::size_t d = space.params.size();
  std::vector<int> counts(d, 0);
  double fixed_product = 1.0;
  int shared = 0;
  for (std::size_t i = 0; i < d; ++i) {
    const TuneParam& p = space.params[i];
    if (p.points > 0) {
      counts[i] = p.points;
      fixed_product *= p.points;
    } else {
      ++shared;
    }
  }
  if (shared > 0) {
    const double per =
        std::floor(std::pow(static_cast<double>(budget) / fixed_product, 1.0 / shared) + 1e-9);
    for (std::size_t i = 0; i < d; ++i) {
      if (counts[i] == 0) counts[i] = std::max(2, static_cast<int>(std::min(per, 1e6)));
    }
  }
  for (std::size_t i = 0; i < d; ++i) {
    const TuneParam& p = space.params[i];
    if (p.integer && !p.log_scale) {
      counts[i] = static_cast<int>(std::min<double>(counts[i], p.max - p.min + 1.0));
    }
  }
  double total = 1.0;
  for (int c : counts) total *= c;
  if (total > 1e7) {
    throw std::invalid_argument("grid: " + text::num(total) +
                                " combinations: lower the points or the budget");
  }
  std::vector<std::vector<double>> out;
  std::vector<int> index(d, 0);
  for (;;) {
    std::vector<double> u(d);
    for (std::size_t i = 0; i < d; ++i) {
      u[i] = counts[i] == 1 ? 0.5 : static_cast<double>(index[i]) / (counts[i] - 1);
    }
    out.push_back(space.values_at(u));
    bool wrapped = true;  // odometer: the last parameter moves fastest
    for (std::size_t k = d; k-- > 0;) {
      if (++index[k] < counts[k]) {
        wrapped = false;
        break;
      }
      index[k] = 0;
    }
    if (wrapped) break;
  }
  // Distinct configurations, in order (log-spaced integers may coincide).
  std::vector<std::vector<double>> distinct;
  std::map<std::vector<double>, bool> seen;
  for (auto& v : out) {
    if (seen.emplace(v, true).second) distinct.push_back(std::move(v));
  }
  return distinct;
}

std::vector<double> random_point(Rng& rng, std::size_t d) {
  std::vector<double> u(d);
  for (double& x : u) x = rng.uniform();
  return u;
}

}  // namespace

TuneResult tune(const TuneSpace& space, const std::vector<Trace>& train, const GuardConfig& guards,
                const SimConfig& config, const TuneOptions& options) {
  if (options.strategy != "grid" && options.strategy != "random" &&
      options.strategy != "nelder-mead") {
    throw std::invalid_argument("strategy must be grid, random or nelder-mead, got \"" +
                                options.strategy + "\"");
  }
  if (options.budget < 1) throw std::invalid_argument("budget must be >= 1");
  if (options.starts < 1) throw std::invalid_argument("starts must be >= 1");
  if (train.empty()) throw std::invalid_argument("tune: no train traces");
  if (space.params.empty()) throw std::invalid_argument("tune: the space has no parameters");
  for (const nlohmann::json& p : options.extra_params) make_policy(space.policy, p, "params");

  SimConfig run_config = config;
  run_config.record_series = false;
  run_config.max_decisions = 0;  // no reason text: nobody reads it

  TuneResult result;
  result.policy = space.policy;
  result.strategy = options.strategy;
  const std::size_t d = space.params.size();
  Rng rng = Rng::stream(options.seed, kSearchStream);
  const int max_proposals = kMaxProposalsPerBudget * options.budget;

  if (options.strategy == "grid") {
    const auto points = grid_points(space, options.budget);
    if (points.size() > static_cast<std::size_t>(options.budget)) {
      throw std::invalid_argument(
          "grid has " + std::to_string(points.size()) + " configurations, more than the budget " +
          std::to_string(options.budget) + ": raise --budget or lower the parameters' \"points\"");
    }
    Evaluator evaluator(space, train, guards, run_config, options, static_cast<int>(points.size()));
    evaluator.evaluate(points);
    result.proposals = static_cast<int>(points.size());
    result.rounds = 1;
    result.evaluations = std::move(evaluator.evaluations());
    result.extra_kpis = std::move(evaluator.extra_kpis());
  } else if (options.strategy == "random") {
    Evaluator evaluator(space, train, guards, run_config, options, options.budget);
    while (evaluator.budget_left() && result.proposals < max_proposals) {
      // Draw exactly what the budget still allows, so the sequence of draws (and so the result)
      // does not depend on anything but the seed.
      const std::size_t want =
          static_cast<std::size_t>(options.budget) - evaluator.evaluations().size();
      std::vector<std::vector<double>> batch;
      for (std::size_t i = 0; i < want; ++i) batch.push_back(space.values_at(random_point(rng, d)));
      result.proposals += static_cast<int>(batch.size());
      ++result.rounds;
      evaluator.evaluate(batch);
    }
    result.evaluations = std::move(evaluator.evaluations());
    result.extra_kpis = std::move(evaluator.extra_kpis());
  } else {  // nelder-mead
    Evaluator evaluator(space, train, guards, run_config, options, options.budget);
    const nlohmann::json baseline =
        options.baseline.is_null() ? make_policy(space.policy, space.fixed, "tune.fixed")->params()
                                   : options.baseline;
    std::vector<NelderMead> searches;
    searches.emplace_back(space.position_of(baseline));
    for (int s = 1; s < options.starts; ++s) searches.emplace_back(random_point(rng, d));
    std::vector<bool> active(searches.size(), true);
    while (evaluator.budget_left() && result.proposals < max_proposals) {
      for (std::size_t s = 0; s < searches.size(); ++s) {
        if (active[s] && searches[s].converged()) {
          searches[s] = NelderMead(random_point(rng, d));  // restart elsewhere
        }
      }
      std::vector<std::vector<double>> batch;
      std::vector<std::size_t> owner;
      for (std::size_t s = 0; s < searches.size(); ++s) {
        if (!active[s]) continue;
        for (const auto& u : searches[s].ask()) {
          batch.push_back(space.values_at(u));
          owner.push_back(s);
        }
      }
      if (batch.empty()) break;
      result.proposals += static_cast<int>(batch.size());
      ++result.rounds;
      const std::vector<std::size_t> where = evaluator.evaluate(batch);
      std::vector<std::vector<double>> told(searches.size());
      for (std::size_t b = 0; b < batch.size(); ++b) {
        if (where[b] == Evaluator::kNone) {
          active[owner[b]] = false;  // the budget ran out inside its batch
        } else {
          told[owner[b]].push_back(evaluator.evaluations()[where[b]].objective);
        }
      }
      for (std::size_t s = 0; s < searches.size(); ++s) {
        if (active[s] && !told[s].empty()) searches[s].tell(told[s]);
      }
      if (std::none_of(active.begin(), active.end(), [](bool a) { return a; })) break;
    }
    result.evaluations = std::move(evaluator.evaluations());
    result.extra_kpis = std::move(evaluator.extra_kpis());
  }

  // Best (first on ties) and the Pareto front of the valid configurations.
  bool any_valid = false;
  for (std::size_t i = 0; i < result.evaluations.size(); ++i) {
    const TuneEvaluation& e = result.evaluations[i];
    if (!e.error.empty() || !std::isfinite(e.objective)) continue;
    if (!any_valid || e.objective < result.evaluations[result.best].objective) result.best = i;
    any_valid = true;
  }
  if (!any_valid) {
    std::string first_error;
    for (const auto& e : result.evaluations) {
      if (!e.error.empty()) {
        first_error = e.error;
        break;
      }
    }
    throw std::runtime_error("tune: no valid configuration among " +
                             std::to_string(result.evaluations.size()) + " evaluated" +
                             (first_error.empty() ? "" : "; first error: " + first_error));
  }
  std::vector<std::pair<double, double>> points;
  for (const auto& e : result.evaluations) {
    points.emplace_back(e.error.empty() ? e.worker_seconds : kInf,
                        e.error.empty() ? e.seconds_above_slo : kInf);
  }
  result.pareto_front = pareto_front(points);
  for (std::size_t i : result.pareto_front) result.evaluations[i].on_pareto_front = true;
  return result;
}

SetEvaluation evaluate_on(const std::string& policy, const nlohmann::json& params,
                          const std::vector<Trace>& traces, const GuardConfig& guards,
                          const SimConfig& config, const ObjectiveWeights& weights, int threads) {
  return std::move(evaluate_on(policy, std::vector<nlohmann::json>{params}, traces, guards, config,
                               weights, threads)
                       .front());
}

std::vector<SetEvaluation> evaluate_on(const std::string& policy,
                                       const std::vector<nlohmann::json>& params,
                                       const std::vector<Trace>& traces, const GuardConfig& guards,
                                       const SimConfig& config, const ObjectiveWeights& weights,
                                       int threads) {
  for (const nlohmann::json& p : params) make_policy(policy, p, "params");  // ConfigError now
  std::vector<SetEvaluation> sets(params.size());
  for (SetEvaluation& set : sets) set.runs.resize(traces.size());
  // Job j: parameter set j / traces on trace j % traces.
  parallel_for(params.size() * traces.size(), hardware_threads(threads), [&](std::size_t j) {
    const std::size_t p = j / traces.size();
    const std::size_t i = j % traces.size();
    sets[p].runs[i] = simulate(traces[i], make_policy(policy, params[p], "params"),
                               traces[i].source, guards, config);
  });
  if (traces.empty()) return sets;
  for (SetEvaluation& set : sets) aggregate(set, weights);
  return sets;
}

SetEvaluation set_evaluation(const std::vector<Kpis>& kpis, const std::vector<Trace>& traces,
                             const ObjectiveWeights& weights) {
  if (kpis.size() != traces.size()) {
    throw std::invalid_argument("set_evaluation: one Kpis per trace");
  }
  SetEvaluation set;
  set.runs.resize(traces.size());
  for (std::size_t i = 0; i < traces.size(); ++i) {
    set.runs[i].label = traces[i].source;
    set.runs[i].kpis = kpis[i];
  }
  if (!traces.empty()) aggregate(set, weights);
  return set;
}

nlohmann::json to_json(const TuneResult& result, const TuneSpace& space,
                       const ObjectiveWeights& weights) {
  nlohmann::json evaluations = nlohmann::json::array();
  for (const TuneEvaluation& e : result.evaluations) {
    nlohmann::json j = {{"params", e.params},
                        {"values", e.values},
                        {"objective", e.objective},
                        {"worker_seconds", e.worker_seconds},
                        {"seconds_above_slo", e.seconds_above_slo},
                        {"scale_actions", e.scale_actions},
                        {"on_pareto_front", e.on_pareto_front}};
    if (!e.error.empty()) j["error"] = e.error;
    evaluations.push_back(std::move(j));
  }
  return rounded_json(nlohmann::json{{"policy", result.policy},
                                     {"strategy", result.strategy},
                                     {"space", space.to_json()},
                                     {"weights", weights.to_json()},
                                     {"objective", weights.describe()},
                                     {"proposals", result.proposals},
                                     {"rounds", result.rounds},
                                     {"evaluations", std::move(evaluations)},
                                     {"pareto_front", result.pareto_front},
                                     {"best", result.best}});
}

}  // namespace lagpilot::sim
