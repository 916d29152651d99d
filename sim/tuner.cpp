#include "sim/tuner.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "policies/config_reader.h"
#include "policies/policy_factory.h"
#include "sim/parallel_for.h"
#include "sim/random.h"
#include "sim/report.h"

namespace lagpilot::sim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Search randomness, apart from the simulator's own streams of the same seed.
constexpr uint64_t kSearchStream = 0x74756e65;  // "tune"
// A search stops after this many proposals per budgeted configuration even if the budget is
// not used up (a small integer space answered from the cache again and again).
constexpr int kMaxProposalsPerBudget = 20;

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// ---------------------------------------------------------------------------------------------
// Parameter paths: "steps[0].above" -> key "steps", index 0, key "above".

struct PathToken {
  std::string key;  // empty: an array index
  std::size_t index = 0;
};

std::vector<PathToken> parse_path(const std::string& path, const std::string& where) {
  auto bad = [&](const std::string& why) {
    return ConfigError(where, "malformed parameter path \"" + path + "\": " + why +
                                  " (write keys joined by '.', array elements as [i], e.g. "
                                  "\"steps[0].above\")");
  };
  std::vector<PathToken> tokens;
  std::size_t i = 0;
  bool expect_key = true;
  while (i < path.size()) {
    if (expect_key) {
      std::string key;
      while (i < path.size() && (std::isalnum(static_cast<unsigned char>(path[i])) ||
                                 path[i] == '_' || path[i] == '-')) {
        key += path[i++];
      }
      if (key.empty()) throw bad("empty key at character " + std::to_string(i + 1));
      tokens.push_back(PathToken{key, 0});
      expect_key = false;
    } else if (path[i] == '.') {
      ++i;
      expect_key = true;
    } else if (path[i] == '[') {
      ++i;
      std::string digits;
      while (i < path.size() && std::isdigit(static_cast<unsigned char>(path[i]))) {
        digits += path[i++];
      }
      if (digits.empty() || i >= path.size() || path[i] != ']' || digits.size() > 6) {
        throw bad("expected [index]");
      }
      ++i;
      tokens.push_back(PathToken{"", static_cast<std::size_t>(std::stoul(digits))});
    } else {
      throw bad(std::string("unexpected '") + path[i] + "'");
    }
  }
  if (tokens.empty() || expect_key) throw bad(tokens.empty() ? "empty" : "ends with '.'");
  return tokens;
}

const nlohmann::json* find_path(const nlohmann::json& root, const std::vector<PathToken>& tokens) {
  const nlohmann::json* node = &root;
  for (const PathToken& t : tokens) {
    if (!t.key.empty()) {
      if (!node->is_object()) return nullptr;
      auto it = node->find(t.key);
      if (it == node->end()) return nullptr;
      node = &*it;
    } else {
      if (!node->is_array() || t.index >= node->size()) return nullptr;
      node = &(*node)[t.index];
    }
  }
  return node;
}

// Every numeric leaf path of a params object ("kp", "steps[0].above"), for error messages.
void numeric_paths(const nlohmann::json& node, const std::string& prefix,
                   std::vector<std::string>& out) {
  if (node.is_number()) {
    out.push_back(prefix);
  } else if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      numeric_paths(*it, prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    }
  } else if (node.is_array()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      numeric_paths(node[i], prefix + "[" + std::to_string(i) + "]", out);
    }
  }
}

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& item : items) s += (s.empty() ? "" : ", ") + item;
  return s;
}

bool known_policy(const std::string& name) {
  const auto names = policy_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The params make_policy() resolves `fixed` to (every default filled in).
nlohmann::json resolved_params(const std::string& policy, const nlohmann::json& fixed,
                               const std::string& path) {
  return make_policy(policy, fixed, path)->params();
}

}  // namespace

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
  return "(worker_seconds + " + number_text(slo) + " x seconds_above_slo + " +
         number_text(actions) + " x scale_actions) / duration_seconds, mean over traces";
}

double run_objective(const Kpis& kpis, const ObjectiveWeights& weights) {
  if (!(kpis.duration_seconds > 0.0)) return kInf;
  return (kpis.worker_seconds + weights.slo * kpis.seconds_above_slo +
          weights.actions * static_cast<double>(kpis.scale_actions)) /
         kpis.duration_seconds;
}

// ---------------------------------------------------------------------------------------------
// TuneParam

double TuneParam::value_at(double u) const {
  u = std::clamp(u, 0.0, 1.0);
  if (integer) {
    // Equal-width buckets, one per integer (in log space for log_scale).
    double v;
    if (log_scale) {
      const double lo = std::log(min), hi = std::log(max + 1.0);
      v = std::floor(std::exp(lo + u * (hi - lo)) + 1e-9);
    } else {
      v = min + std::floor(u * (max - min + 1.0));
    }
    return std::clamp(v, min, max);
  }
  if (u <= 0.0) return min;
  if (u >= 1.0) return max;
  const double v = log_scale ? std::exp(std::log(min) + u * (std::log(max) - std::log(min)))
                             : min + u * (max - min);
  // 6 significant digits: configs read 5000 rather than 5000.000000000004, and points closer
  // than that count as one configuration.
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::clamp(std::strtod(buf, nullptr), min, max);
}

double TuneParam::position_of(double value) const {
  double u;
  if (integer) {
    const double v = std::round(value);
    if (log_scale) {
      const double lo = std::log(min), hi = std::log(max + 1.0);
      const double mid = 0.5 * (std::log(std::max(v, min)) + std::log(std::max(v, min) + 1.0));
      u = (mid - lo) / (hi - lo);
    } else {
      u = (v - min + 0.5) / (max - min + 1.0);
    }
  } else if (log_scale) {
    u = value > 0.0 ? (std::log(value) - std::log(min)) / (std::log(max) - std::log(min)) : 0.0;
  } else {
    u = (value - min) / (max - min);
  }
  return std::isfinite(u) ? std::clamp(u, 0.0, 1.0) : 0.5;
}

// ---------------------------------------------------------------------------------------------
// TuneSpace

bool param_at(const nlohmann::json& params, const std::string& path, double& out,
              const std::string& where) {
  const nlohmann::json* node = find_path(params, parse_path(path, where));
  if (!node || !node->is_number()) return false;
  out = node->get<double>();
  return true;
}

TuneSpace TuneSpace::from_json(const nlohmann::json& j, const std::string& policy,
                               const std::string& path) {
  // A file may hold {"tune": {...}}.
  if (j.is_object() && j.size() == 1 && j.contains("tune")) {
    return from_json(j.at("tune"), policy, path);
  }
  TuneSpace space;
  JsonObjectReader r(j, path);
  if (!policy.empty() && !known_policy(policy)) {
    throw ConfigError(r.path_of("policy"),
                      "unknown policy \"" + policy + "\"; valid names: " + joined(policy_names()));
  }
  space.policy = policy;
  if (r.has("policy")) {
    std::string named;
    r.read_enum("policy", named, policy_names());
    if (!policy.empty() && named != policy) {
      throw ConfigError(r.path_of("policy"), "the space is for policy \"" + named +
                                                 "\" but policy \"" + policy + "\" is tuned");
    }
    space.policy = named;
  }
  if (space.policy.empty()) throw ConfigError(r.path_of("policy"), "is required");
  if (const nlohmann::json* fixed = r.raw("fixed")) {
    if (!fixed->is_object()) {
      throw ConfigError(r.path_of("fixed"),
                        std::string("must be a JSON object, got ") + fixed->type_name());
    }
    space.fixed = *fixed;
  }
  const nlohmann::json resolved = resolved_params(space.policy, space.fixed, r.path_of("fixed"));
  if (r.has("weights")) {
    space.weights = ObjectiveWeights::from_json(*r.raw("weights"), r.path_of("weights"));
    space.has_weights = true;
  }
  const nlohmann::json* params = r.raw("params");
  const std::string params_path = r.path_of("params");
  if (!params) throw ConfigError(params_path, "is required (the parameters to tune)");
  if (!params->is_object() || params->empty()) {
    throw ConfigError(params_path,
                      "must be a non-empty JSON object {\"name\": {\"min\", \"max\"}}");
  }
  for (auto it = params->begin(); it != params->end(); ++it) {
    const std::string p_path = params_path + "." + it.key();
    TuneParam p;
    p.name = it.key();
    double default_value = 0.0;
    if (!param_at(resolved, p.name, default_value, p_path)) {
      std::vector<std::string> known;
      numeric_paths(resolved, "", known);
      throw ConfigError(p_path, "not a numeric parameter of policy " + space.policy +
                                    " (numeric parameters: " + joined(known) + ")");
    }
    const nlohmann::json* node = find_path(resolved, parse_path(p.name, p_path));
    const bool integer_param = node->is_number_integer();
    JsonObjectReader pr(it.value(), p_path);
    for (const char* required : {"min", "max"}) {
      if (!pr.has(required)) throw ConfigError(pr.path_of(required), "is required");
    }
    pr.read("min", p.min);
    pr.read("max", p.max);
    pr.read("log", p.log_scale);
    p.integer = integer_param;
    pr.read("integer", p.integer);
    pr.read("points", p.points, 1, 1'000'000);
    pr.finish();
    if (integer_param && !p.integer) {
      throw ConfigError(pr.path_of("integer"),
                        "parameter " + p.name + " is an integer; it cannot be tuned as a real");
    }
    if (!(p.min < p.max)) {
      throw ConfigError(pr.path_of("max"),
                        "must be > min (" + number_text(p.min) + "), got " + number_text(p.max));
    }
    if (p.log_scale && !(p.min > 0.0)) {
      throw ConfigError(pr.path_of("min"),
                        "must be > 0 with \"log\": true, got " + number_text(p.min));
    }
    if (p.integer) {
      for (const char* key : {"min", "max"}) {
        const double v = std::string(key) == "min" ? p.min : p.max;
        if (v != std::floor(v) || std::fabs(v) > 1e15) {
          throw ConfigError(pr.path_of(key),
                            "must be an integer for an integer parameter, got " + number_text(v));
        }
      }
    }
    space.params.push_back(p);
  }
  r.finish();
  return space;
}

nlohmann::json TuneSpace::to_json() const {
  nlohmann::json params_json = nlohmann::json::object();
  for (const TuneParam& p : params) {
    nlohmann::json entry = {{"min", p.min}, {"max", p.max}};
    if (p.log_scale) entry["log"] = true;
    if (p.integer) entry["integer"] = true;
    if (p.points > 0) entry["points"] = p.points;
    params_json[p.name] = entry;
  }
  nlohmann::json j = {{"policy", policy}, {"fixed", fixed}, {"params", params_json}};
  if (has_weights) j["weights"] = weights.to_json();
  return j;
}

TuneSpace TuneSpace::default_for(const std::string& policy, const GuardConfig& guards) {
  const int lo = guards.min_workers;
  const int hi = std::max(guards.min_workers, guards.max_workers);
  nlohmann::json spec = {{"policy", policy}};
  nlohmann::json params = nlohmann::json::object();
  auto workers_range = [](int a, int b) {
    return nlohmann::json{{"min", a}, {"max", b}, {"integer", true}};
  };
  if (policy == "static") {
    if (hi > lo) params["workers"] = workers_range(lo, hi);
  } else if (policy == "pid") {
    spec["fixed"] = {{"metric", "lag"}};
    params["setpoint"] = {{"min", 100.0}, {"max", 10000.0}, {"log", true}};
    params["kp"] = {{"min", 1e-4}, {"max", 2e-2}, {"log", true}};
    params["ki"] = {{"min", 1e-6}, {"max", 1e-3}, {"log", true}};
    params["kd"] = {{"min", 1e-4}, {"max", 2e-2}, {"log", true}};
  } else if (policy == "threshold") {
    // One step above a base level; the step's "below" follows from the hysteresis.
    const int mid = lo + (hi - lo) / 2;
    spec["fixed"] = {{"base_workers", lo},
                     {"steps", nlohmann::json::array({{{"above", 5000.0}, {"workers", hi}}})}};
    params["steps[0].above"] = {{"min", 200.0}, {"max", 50000.0}, {"log", true}};
    params["hysteresis"] = {{"min", 0.1}, {"max", 0.95}};
    if (mid > lo) params["base_workers"] = workers_range(lo, mid);
    if (hi > mid + 1) params["steps[0].workers"] = workers_range(mid + 1, hi);
  } else if (policy == "hpa") {
    params["target_lag_per_worker"] = {{"min", 100.0}, {"max", 20000.0}, {"log", true}};
    params["tolerance"] = {{"min", 0.0}, {"max", 0.5}};
    params["scale_down_stabilization_seconds"] = {{"min", 0.0}, {"max", 600.0}};
    params["sync_period_seconds"] = {{"min", 1.0}, {"max", 60.0}, {"log", true}};
  } else if (policy == "keda") {
    params["lag_threshold"] = {{"min", 100}, {"max", 20000}, {"log", true}, {"integer", true}};
    params["polling_interval_seconds"] = {{"min", 1.0}, {"max", 120.0}, {"log", true}};
    params["scale_down_stabilization_seconds"] = {{"min", 0.0}, {"max", 600.0}};
    params["cooldown_period_seconds"] = {{"min", 30.0}, {"max", 900.0}, {"log", true}};
  } else if (policy == "model" && known_policy("model")) {
    // scale_down_utilization stays below target_utilization everywhere in the box.
    params["target_utilization"] = {{"min", 0.5}, {"max", 0.95}};
    params["scale_down_utilization"] = {{"min", 0.2}, {"max", 0.45}};
    params["catch_up_seconds"] = {{"min", 10.0}, {"max", 600.0}, {"log", true}};
    params["peak_fraction"] = {{"min", 0.6}, {"max", 1.0}};
  } else {
    const auto names = policy_names();
    if (!known_policy(policy)) {
      throw ConfigError("--policy",
                        "unknown policy \"" + policy + "\"; valid names: " + joined(names));
    }
    throw ConfigError("--policy", "no built-in search space for policy \"" + policy +
                                      "\": give one with --space (see docs/tune.md)");
  }
  if (params.empty()) {
    throw ConfigError("--policy", "nothing to tune for policy \"" + policy +
                                      "\" with min_workers == max_workers");
  }
  spec["params"] = params;
  return from_json(spec, policy, "default space");
}

std::vector<double> TuneSpace::values_at(const std::vector<double>& u) const {
  if (u.size() != params.size()) throw std::invalid_argument("TuneSpace::values_at: wrong size");
  std::vector<double> values(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) values[i] = params[i].value_at(u[i]);
  return values;
}

nlohmann::json TuneSpace::params_for(const std::vector<double>& values) const {
  if (values.size() != params.size()) {
    throw std::invalid_argument("TuneSpace::params_for: wrong size");
  }
  nlohmann::json out = fixed.is_object() ? fixed : nlohmann::json::object();
  nlohmann::json resolved;  // built on first need
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::vector<PathToken> tokens = parse_path(params[i].name, "tune.params");
    if (!out.contains(tokens[0].key)) {
      if (resolved.is_null()) resolved = resolved_params(policy, fixed, "tune.fixed");
      out[tokens[0].key] = resolved.at(tokens[0].key);
    }
    nlohmann::json* node = &out;
    for (std::size_t t = 0; t < tokens.size(); ++t) {
      if (!tokens[t].key.empty()) {
        node = &(*node)[tokens[t].key];
      } else {
        if (!node->is_array() || tokens[t].index >= node->size()) {
          throw ConfigError("tune.params." + params[i].name, "no such array element");
        }
        node = &(*node)[tokens[t].index];
      }
    }
    if (params[i].integer) {
      *node = static_cast<int64_t>(std::llround(values[i]));
    } else {
      *node = values[i];
    }
  }
  return out;
}

std::vector<double> TuneSpace::position_of(const nlohmann::json& p) const {
  std::vector<double> u(params.size(), 0.5);
  for (std::size_t i = 0; i < params.size(); ++i) {
    double v = 0.0;
    if (param_at(p, params[i].name, v, "tune.params." + params[i].name)) {
      u[i] = params[i].position_of(v);
    }
  }
  return u;
}

std::string TuneSpace::describe(const std::vector<double>& values) const {
  std::string s;
  for (std::size_t i = 0; i < params.size() && i < values.size(); ++i) {
    if (!s.empty()) s += ' ';
    s += params[i].name + "=" +
         (params[i].integer ? std::to_string(std::llround(values[i])) : number_text(values[i]));
  }
  return s;
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

// ---------------------------------------------------------------------------------------------
// NelderMead

NelderMead::NelderMead(std::vector<double> start, double initial_step, double tolerance)
    : dims_(start.size()), tolerance_(tolerance) {
  if (dims_ == 0) throw std::invalid_argument("NelderMead: no dimensions");
  for (double& x : start) x = std::clamp(std::isfinite(x) ? x : 0.5, 0.0, 1.0);
  simplex_.push_back(start);
  for (std::size_t i = 0; i < dims_; ++i) {
    std::vector<double> v = start;
    v[i] = start[i] + initial_step <= 1.0 ? start[i] + initial_step : start[i] - initial_step;
    v[i] = std::clamp(v[i], 0.0, 1.0);
    simplex_.push_back(v);
  }
  values_.assign(simplex_.size(), kInf);
  pending_ = simplex_;
  stage_ = Stage::kInit;
}

const std::vector<double>& NelderMead::best_point() const {
  return simplex_[0];
}

double NelderMead::best_value() const {
  return values_[0];
}

std::vector<double> NelderMead::toward(const std::vector<double>& from,
                                       const std::vector<double>& to, double factor) const {
  std::vector<double> x(dims_);
  for (std::size_t j = 0; j < dims_; ++j) {
    x[j] = std::clamp(from[j] + factor * (to[j] - from[j]), 0.0, 1.0);
  }
  return x;
}

void NelderMead::sort_simplex() {
  std::vector<std::size_t> idx(simplex_.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](std::size_t a, std::size_t b) { return values_[a] < values_[b]; });
  std::vector<std::vector<double>> simplex;
  std::vector<double> values;
  for (std::size_t i : idx) {
    simplex.push_back(std::move(simplex_[i]));
    values.push_back(values_[i]);
  }
  simplex_ = std::move(simplex);
  values_ = std::move(values);
}

void NelderMead::next_iteration() {
  ++iterations_;
  double spread = 0.0;
  for (std::size_t i = 1; i < simplex_.size(); ++i) {
    for (std::size_t j = 0; j < dims_; ++j) {
      spread = std::max(spread, std::fabs(simplex_[i][j] - simplex_[0][j]));
    }
  }
  if (spread <= tolerance_) {
    pending_.clear();
    return;
  }
  centroid_.assign(dims_, 0.0);
  for (std::size_t i = 0; i < dims_; ++i) {  // all but the worst (index dims_)
    for (std::size_t j = 0; j < dims_; ++j) centroid_[j] += simplex_[i][j];
  }
  for (double& c : centroid_) c /= static_cast<double>(dims_);
  pending_ = {toward(centroid_, simplex_[dims_], -1.0)};  // c - (worst - c)
  stage_ = Stage::kReflect;
}

void NelderMead::tell(const std::vector<double>& told) {
  if (told.size() != pending_.size()) {
    throw std::invalid_argument("NelderMead::tell: " + std::to_string(told.size()) +
                                " values for " + std::to_string(pending_.size()) + " points");
  }
  std::vector<double> values = told;
  for (double& v : values) {
    if (std::isnan(v)) v = kInf;
  }
  const std::size_t worst = dims_;
  auto replace_worst = [&](std::vector<double> x, double f) {
    simplex_[worst] = std::move(x);
    values_[worst] = f;
    sort_simplex();
    next_iteration();
  };
  auto shrink = [&] {
    for (std::size_t i = 1; i < simplex_.size(); ++i) {
      simplex_[i] = toward(simplex_[0], simplex_[i], 0.5);
    }
    pending_.assign(simplex_.begin() + 1, simplex_.end());
    stage_ = Stage::kShrink;
  };
  switch (stage_) {
    case Stage::kInit:
      values_ = values;
      sort_simplex();
      next_iteration();
      break;
    case Stage::kReflect: {
      const double fr = values[0];
      reflected_ = pending_[0];
      reflected_value_ = fr;
      if (fr < values_[0]) {
        pending_ = {toward(centroid_, reflected_, 2.0)};
        stage_ = Stage::kExpand;
      } else if (fr < values_[worst - 1]) {
        replace_worst(reflected_, fr);
      } else if (fr < values_[worst]) {
        pending_ = {toward(centroid_, reflected_, 0.5)};
        stage_ = Stage::kContractOutside;
      } else {
        pending_ = {toward(centroid_, simplex_[worst], 0.5)};
        stage_ = Stage::kContractInside;
      }
      break;
    }
    case Stage::kExpand:
      if (values[0] < reflected_value_) {
        replace_worst(pending_[0], values[0]);
      } else {
        replace_worst(reflected_, reflected_value_);
      }
      break;
    case Stage::kContractOutside:
      if (values[0] <= reflected_value_) {
        replace_worst(pending_[0], values[0]);
      } else {
        shrink();
      }
      break;
    case Stage::kContractInside:
      if (values[0] < values_[worst]) {
        replace_worst(pending_[0], values[0]);
      } else {
        shrink();
      }
      break;
    case Stage::kShrink:
      for (std::size_t i = 1; i < simplex_.size(); ++i) values_[i] = values[i - 1];
      sort_simplex();
      next_iteration();
      break;
  }
}

// ---------------------------------------------------------------------------------------------
// tune

namespace {

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

 private:
  void run(const std::vector<std::size_t>& fresh) {
    // Jobs: the runs of fresh candidate f are jobs [first_job[f], first_job[f] + traces).
    const std::size_t traces = train_.size();
    std::vector<std::size_t> job_candidate;
    std::vector<std::size_t> first_job(fresh.size(), 0);
    std::vector<std::unique_ptr<std::atomic<std::size_t>>> runs_left(fresh.size());
    for (std::size_t f = 0; f < fresh.size(); ++f) {
      // atomic: counts down as the candidate's runs finish on any thread; the thread that
      // brings it to zero sees every run's Kpis (they were written before the decrement).
      runs_left[f] = std::make_unique<std::atomic<std::size_t>>(traces);
      first_job[f] = job_candidate.size();
      if (!evaluations_[fresh[f]].error.empty()) {
        finished(nullptr);
        continue;
      }
      job_candidate.insert(job_candidate.end(), traces, f);
    }
    std::vector<Kpis> kpis(job_candidate.size());
    parallel_for(job_candidate.size(), threads_, [&](std::size_t j) {
      const std::size_t f = job_candidate[j];
      TuneEvaluation& e = evaluations_[fresh[f]];
      kpis[j] = simulate(train_[j - first_job[f]], make_policy(space_.policy, e.params, "params"),
                         "candidate", guards_, config_)
                    .kpis;
      if (--*runs_left[f] > 0) return;
      // The candidate's last run: aggregate it (no other thread touches `e` now).
      double sum = 0.0;
      for (std::size_t t = 0; t < traces; ++t) {
        const Kpis& k = kpis[first_job[f] + t];
        e.kpis.push_back(k);
        sum += run_objective(k, options_.weights);
        e.worker_seconds += k.worker_seconds;
        e.seconds_above_slo += k.seconds_above_slo;
        e.scale_actions += k.scale_actions;
      }
      e.objective = sum / static_cast<double>(traces);
      finished(&e);
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
    throw std::invalid_argument("grid: " + number_text(total) +
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
  } else {  // nelder-mead
    Evaluator evaluator(space, train, guards, run_config, options, options.budget);
    const nlohmann::json baseline = options.baseline.is_null()
                                        ? resolved_params(space.policy, space.fixed, "tune.fixed")
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
  make_policy(policy, params, "params");  // ConfigError now, on this thread
  SetEvaluation set;
  set.runs.resize(traces.size());
  parallel_for(traces.size(), hardware_threads(threads), [&](std::size_t i) {
    set.runs[i] = simulate(traces[i], make_policy(policy, params, "params"), traces[i].source,
                           guards, config);
  });
  if (traces.empty()) return set;
  double sum = 0.0;
  for (const RunResult& r : set.runs) {
    sum += run_objective(r.kpis, weights);
    set.worker_seconds += r.kpis.worker_seconds;
    set.seconds_above_slo += r.kpis.seconds_above_slo;
    set.scale_actions += r.kpis.scale_actions;
  }
  set.objective = sum / static_cast<double>(set.runs.size());
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
