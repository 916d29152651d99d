// What the tuner minimizes: the objective weights and their text form, the objective of one run,
// and the Pareto front of worker-seconds against seconds above the SLO.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "policies/config_reader.h"
#include "policies/infinity.h"
#include "policies/number_text.h"
#include "sim/tuner.h"

namespace lagpilot::sim {
// ---------------------------------------------------------------------------------------------
// ObjectiveWeights

namespace {

ObjectiveWeights read_weights(const nlohmann::json& j, const std::string& path,
                              ObjectiveWeights w) {
  JsonObjectReader r(j, path);
  r.read("slo", w.slo, 0.0);
  r.read("actions", w.actions, 0.0);
  r.finish();
  return w;
}

}  // namespace

ObjectiveWeights ObjectiveWeights::from_json(const nlohmann::json& j, const std::string& path) {
  return read_weights(j, path, ObjectiveWeights{});
}

ObjectiveWeights ObjectiveWeights::parse(const std::string& text, const ObjectiveWeights& base,
                                         const std::string& where) {
  nlohmann::json j = nlohmann::json::object();
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    const auto eq = part.find('=');
    if (eq == std::string::npos) {
      throw ConfigError(where, "expected key=value (slo=100,actions=10), got \"" + part + "\"");
    }
    const std::string key = part.substr(0, eq);
    const std::string value = part.substr(eq + 1);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size()) {
      throw ConfigError(where + "." + key, "must be a number, got \"" + value + "\"");
    }
    j[key] = v;
  }
  return read_weights(j, where, base);
}

nlohmann::json ObjectiveWeights::to_json() const {
  return {{"slo", slo}, {"actions", actions}};
}

std::string ObjectiveWeights::describe() const {
  return "(worker_seconds + " + text::num(slo) + " x seconds_above_slo + " + text::num(actions) +
         " x scale_actions) / duration_seconds, mean over traces";
}

double run_objective(const Kpis& kpis, const ObjectiveWeights& weights) {
  if (!(kpis.duration_seconds > 0.0)) return kInf;
  return (kpis.worker_seconds + weights.slo * kpis.seconds_above_slo +
          weights.actions * static_cast<double>(kpis.scale_actions)) /
         kpis.duration_seconds;
}

// ---------------------------------------------------------------------------------------------
// Pareto front

std::vector<std::size_t> pareto_front(const std::vector<std::pair<double, double>>& points) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (std::isfinite(points[i].first) && std::isfinite(points[i].second)) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return points[a] < points[b]; });
  // Sweep by increasing x (then y): a point is dominated exactly when an earlier point has a
  // smaller y, or the same y with a smaller x; equal points share their fate.
  std::vector<std::size_t> front;
  double best_y = kInf;
  double best_y_x = kInf;  // the x of the point that set best_y
  for (std::size_t i : order) {
    const auto& p = points[i];
    const bool dominated = best_y < p.second || (best_y == p.second && best_y_x < p.first);
    if (!dominated) {
      front.push_back(i);
      if (p.second < best_y) {
        best_y = p.second;
        best_y_x = p.first;
      }
    }
  }
  return front;
}

}  // namespace lagpilot::sim
