#include "policies/threshold_policy.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

#include "policies/config_reader.h"
#include "policies/number_text.h"

namespace lagpilot {
namespace {

using text::num;

}  // namespace

ThresholdParams ThresholdParams::from_json(const nlohmann::json& j, const std::string& path) {
  ThresholdParams p;
  JsonObjectReader r(j.is_null() ? nlohmann::json::object() : j, path);
  r.read("base_workers", p.base_workers, 1, 1000000);
  r.read("hysteresis", p.hysteresis, 0.0, 1.0);
  if (p.hysteresis <= 0.0) {
    throw ConfigError(r.path_of("hysteresis"), "must be > 0, got " + num(p.hysteresis));
  }
  if (const nlohmann::json* steps = r.raw("steps")) {
    const std::string steps_path = r.path_of("steps");
    if (!steps->is_array()) {
      throw ConfigError(steps_path, std::string("must be an array, got ") + steps->type_name());
    }
    if (steps->empty()) throw ConfigError(steps_path, "must list at least one step");
    p.steps.clear();
    for (std::size_t i = 0; i < steps->size(); ++i) {
      const std::string step_path = steps_path + "[" + std::to_string(i) + "]";
      JsonObjectReader s((*steps)[i], step_path);
      for (const char* required : {"above", "workers"}) {
        if (!s.has(required)) throw ConfigError(s.path_of(required), "is required");
      }
      ThresholdStep step;
      s.read("above", step.above, 0.0);
      s.read("workers", step.workers, 1, 1000000);
      step.below = step.above * (1.0 - p.hysteresis);
      s.read("below", step.below, 0.0);
      s.finish();
      if (step.below >= step.above) {
        throw ConfigError(s.path_of("below"),
                          "must be < above (" + num(step.above) + "), got " + num(step.below));
      }
      const int prev_workers = p.steps.empty() ? p.base_workers : p.steps.back().workers;
      if (step.workers <= prev_workers) {
        throw ConfigError(s.path_of("workers"),
                          "must be > " + std::to_string(prev_workers) + " (" +
                              (p.steps.empty() ? "base_workers" : "the previous step") + "), got " +
                              std::to_string(step.workers));
      }
      if (!p.steps.empty() && step.above <= p.steps.back().above) {
        throw ConfigError(s.path_of("above"), "must be > the previous step's above (" +
                                                  num(p.steps.back().above) + "), got " +
                                                  num(step.above));
      }
      if (!p.steps.empty() && step.below < p.steps.back().below) {
        throw ConfigError(s.path_of("below"), "must be >= the previous step's below (" +
                                                  num(p.steps.back().below) + "), got " +
                                                  num(step.below));
      }
      p.steps.push_back(step);
    }
  } else if (p.base_workers >= p.steps.front().workers) {
    throw ConfigError(r.path_of("base_workers"), "must be < the default step's workers (" +
                                                     std::to_string(p.steps.front().workers) +
                                                     "), got " + std::to_string(p.base_workers));
  }
  r.finish();
  return p;
}

nlohmann::json ThresholdParams::to_json() const {
  nlohmann::json steps_json = nlohmann::json::array();
  for (const auto& s : steps) {
    steps_json.push_back({{"above", s.above}, {"below", s.below}, {"workers", s.workers}});
  }
  return {{"base_workers", base_workers}, {"hysteresis", hysteresis}, {"steps", steps_json}};
}

ThresholdPolicy::ThresholdPolicy(ThresholdParams params) : params_(std::move(params)) {}

int ThresholdPolicy::workers_of(int level) const {
  return level == 0 ? params_.base_workers : params_.steps[level - 1].workers;
}

int ThresholdPolicy::initial_level(int current_workers) const {
  int level = 0;
  for (int l = 1; l <= static_cast<int>(params_.steps.size()); ++l) {
    if (workers_of(l) <= current_workers) level = l;
  }
  return level;
}

Proposal ThresholdPolicy::decide(const Observation& obs) {
  const double lag = static_cast<double>(obs.total_lag);
  const int top = static_cast<int>(params_.steps.size());
  if (level_ < 0) level_ = initial_level(obs.current_workers);

  const int from = level_;
  while (level_ < top && lag > params_.steps[level_].above) ++level_;
  if (level_ == from) {
    while (level_ > 0 && lag < params_.steps[level_ - 1].below) --level_;
  }
  const int level_workers = workers_of(level_);
  const int hi = std::max(obs.min_workers, obs.max_workers);
  const int workers = std::clamp(level_workers, obs.min_workers, hi);
  if (!obs.explain) return {workers, {}};

  // The text names the last threshold crossed (the one just below or above the new level).
  // Appended piece by piece into one buffer: one allocation (the pieces are short).
  std::string reason;
  reason.reserve(64);
  reason += "lag ";
  reason += std::to_string(obs.total_lag);
  if (level_ > from) {
    reason += " above ";
    reason += num(params_.steps[level_ - 1].above);
    reason += ": step up to ";
  } else if (level_ < from) {
    reason += " below ";
    reason += num(params_.steps[level_].below);
    reason += ": step down to ";
  } else {
    reason += " within [";
    reason += level_ > 0 ? num(params_.steps[level_ - 1].below) : "-";
    reason += ", ";
    reason += level_ < top ? num(params_.steps[level_].above) : "-";
    reason += "]: hold ";
  }
  reason += std::to_string(level_workers);
  if (workers != level_workers) {
    reason += " (clamped to " + std::to_string(workers) + " by bounds [" +
              std::to_string(obs.min_workers) + ", " + std::to_string(hi) + "])";
  }
  return {workers, std::move(reason)};
}

nlohmann::json ThresholdPolicy::state() const {
  return {{"level", level_}, {"level_workers", level_ < 0 ? 0 : workers_of(level_)}};
}

}  // namespace lagpilot
