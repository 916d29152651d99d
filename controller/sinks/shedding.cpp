#include "controller/sinks/shedding.h"

#include <charconv>
#include <cstdio>

#include "policies/config_reader.h"

namespace lagpilot {

const char* shed_reason_name(ShedReason reason) {
  switch (reason) {
#define LAGPILOT_SHED_NAME(name, help) \
  case ShedReason::name:               \
    return #name;
    LAGPILOT_SHED_REASONS(LAGPILOT_SHED_NAME)
#undef LAGPILOT_SHED_NAME
  }
  return "unknown";
}

ShedConfig ShedConfig::from_json(const nlohmann::json& j, const std::string& path) {
  ShedConfig c;
  c.enabled = true;
  JsonObjectReader r(j, path);
  r.read("after_pressure_seconds", c.after_pressure_seconds, 0.0, 86400.0);
  c.release_after_seconds = c.after_pressure_seconds;
  r.read("release_after_seconds", c.release_after_seconds, 0.0, 86400.0);
  r.read("max_age_seconds", c.max_age_seconds, 0.0, 1e9);
  if (r.has("min_priority_under_pressure")) {
    int min = 0;
    r.read("min_priority_under_pressure", min);
    c.min_priority_under_pressure = min;
  }
  if (r.has("priority")) {
    JsonObjectReader p = r.child("priority");
    const bool header = p.has("header");
    const bool prefixes = p.has("key_prefixes");
    if (header == prefixes) {
      throw ConfigError(r.path_of("priority"),
                        "needs exactly one of \"header\" or \"key_prefixes\"");
    }
    if (header) {
      p.read("header", c.priority_header);
      if (c.priority_header.empty()) throw ConfigError(p.path_of("header"), "must not be empty");
    } else {
      const nlohmann::json* table = p.raw("key_prefixes");
      if (!table->is_object() || table->empty()) {
        throw ConfigError(p.path_of("key_prefixes"),
                          "must be a non-empty object of key prefix to integer priority");
      }
      for (const auto& [prefix, value] : table->items()) {
        if (!value.is_number_integer()) {
          throw ConfigError(p.path_of("key_prefixes") + "." + prefix,
                            "must be an integer priority, got " + value.dump());
        }
        c.key_prefixes.emplace_back(prefix, value.get<int>());
      }
    }
    if (p.has("default")) {
      int d = 0;
      p.read("default", d);
      c.default_priority = d;
    }
    p.finish();
    if (!c.has_priority_rule()) {
      throw ConfigError(r.path_of("min_priority_under_pressure"),
                        "required with \"priority\" (records below it are shed)");
    }
  } else if (c.has_priority_rule()) {
    throw ConfigError(r.path_of("priority"),
                      "required with \"min_priority_under_pressure\" (where to read it)");
  }
  r.read("to_topic", c.to_topic);
  r.finish();
  if (c.max_age_seconds <= 0 && !c.has_priority_rule()) {
    throw ConfigError(path,
                      "sheds nothing: set max_age_seconds, or priority with "
                      "min_priority_under_pressure");
  }
  return c;
}

nlohmann::json ShedConfig::to_json() const {
  nlohmann::json j = {{"after_pressure_seconds", after_pressure_seconds},
                      {"release_after_seconds", release_after_seconds},
                      {"max_age_seconds", max_age_seconds},
                      {"to_topic", to_topic}};
  if (has_priority_rule()) {
    nlohmann::json p = nlohmann::json::object();
    if (!priority_header.empty()) {
      p["header"] = priority_header;
    } else {
      p["key_prefixes"] = nlohmann::json::object();
      for (const auto& [prefix, value] : key_prefixes) p["key_prefixes"][prefix] = value;
    }
    if (default_priority) p["default"] = *default_priority;
    j["priority"] = p;
    j["min_priority_under_pressure"] = *min_priority_under_pressure;
  }
  return j;
}

std::optional<int> record_priority(const ShedConfig& c, const SourceMessage& m) {
  if (!c.priority_header.empty()) {
    for (const auto& [name, value] : m.headers) {
      if (name != c.priority_header) continue;
      int p = 0;
      const char* end = value.data() + value.size();
      const auto [ptr, ec] = std::from_chars(value.data(), end, p);
      if (ec == std::errc() && ptr == end) return p;
      break;  // the first header of that name decides; unreadable: the default
    }
    return c.default_priority;
  }
  const std::pair<std::string, int>* best = nullptr;
  if (m.has_key) {
    for (const auto& entry : c.key_prefixes) {
      if (m.key.compare(0, entry.first.size(), entry.first) == 0 &&
          (best == nullptr || entry.first.size() > best->first.size())) {
        best = &entry;
      }
    }
  }
  if (best != nullptr) return best->second;
  return c.default_priority;
}

std::optional<ShedVerdict> shed_verdict(const ShedConfig& c, const SourceMessage& m,
                                        int64_t now_unix_ms) {
  char buf[160];
  if (c.max_age_seconds > 0 && m.timestamp_ms >= 0) {
    const double age = static_cast<double>(now_unix_ms - m.timestamp_ms) / 1000.0;
    if (age > c.max_age_seconds) {
      std::snprintf(buf, sizeof buf, "age %.3f s above max_age_seconds %g", age, c.max_age_seconds);
      return ShedVerdict{ShedReason::age, buf};
    }
  }
  if (c.has_priority_rule()) {
    const std::optional<int> p = record_priority(c, m);
    if (p && *p < *c.min_priority_under_pressure) {
      std::snprintf(buf, sizeof buf, "priority %d below min_priority_under_pressure %d", *p,
                    *c.min_priority_under_pressure);
      return ShedVerdict{ShedReason::priority, buf};
    }
  }
  return std::nullopt;
}

ShedGate::ShedGate(double after_pressure_seconds, double release_after_seconds)
    : after_pressure_seconds_(after_pressure_seconds),
      release_after_seconds_(release_after_seconds < 0 ? after_pressure_seconds
                                                       : release_after_seconds) {}

ShedGate::Transition ShedGate::update(double now, bool pressure) {
  const bool on = active_.load(std::memory_order_relaxed);
  if (pressure) {
    calm_since_ = -1;
    if (pressure_since_ < 0) pressure_since_ = now;
    if (!on && now - pressure_since_ >= after_pressure_seconds_) {
      active_.store(true, std::memory_order_release);
      changed_at_ = now;
      return Transition::kStarted;
    }
    return Transition::kNone;
  }
  pressure_since_ = -1;
  if (!on) return Transition::kNone;
  if (calm_since_ < 0) calm_since_ = now;
  if (now - calm_since_ >= release_after_seconds_) {
    active_.store(false, std::memory_order_release);
    calm_since_ = -1;
    changed_at_ = now;
    return Transition::kStopped;
  }
  return Transition::kNone;
}

nlohmann::json to_json(const ShedStats& s) {
  nlohmann::json j = {{"active", s.active},
                      {"to_topic_failures", s.to_topic_failures},
                      {"last_transition", s.last_transition},
                      {"last_transition_unix_seconds", s.last_transition_unix_seconds}};
  for (int i = 0; i < kShedReasons; ++i) {
    j[shed_reason_name(static_cast<ShedReason>(i))] = s.shed[i];
  }
  return j;
}

Shedder::Shedder(ShedConfig config)
    : config_(std::move(config)),
      gate_(config_.after_pressure_seconds, config_.release_after_seconds) {}

std::optional<ShedVerdict> Shedder::decide(const SourceMessage& m, int64_t now_unix_ms) const {
  if (!gate_.active()) return std::nullopt;
  return shed_verdict(config_, m, now_unix_ms);
}

void Shedder::count(ShedReason reason) {
  shed_[static_cast<int>(reason)].fetch_add(1, std::memory_order_relaxed);
  window_[static_cast<int>(reason)].fetch_add(1, std::memory_order_relaxed);
}

void Shedder::count_to_topic_failure() {
  to_topic_failures_.fetch_add(1, std::memory_order_relaxed);
}

void Shedder::note_transition(std::string text, double unix_seconds) {
  std::lock_guard lock(mu_);
  last_transition_ = std::move(text);
  last_transition_unix_seconds_ = unix_seconds;
}

ShedStats Shedder::stats() const {
  ShedStats s;
  for (int i = 0; i < kShedReasons; ++i) s.shed[i] = shed_[i].load(std::memory_order_relaxed);
  s.to_topic_failures = to_topic_failures_.load(std::memory_order_relaxed);
  s.active = gate_.active();
  std::lock_guard lock(mu_);
  s.last_transition = last_transition_;
  s.last_transition_unix_seconds = last_transition_unix_seconds_;
  return s;
}

std::array<uint64_t, kShedReasons> Shedder::take_window() {
  std::array<uint64_t, kShedReasons> w{};
  for (int i = 0; i < kShedReasons; ++i) w[i] = window_[i].exchange(0);
  return w;
}

std::string format_shed_window(const std::array<uint64_t, kShedReasons>& w) {
  uint64_t total = 0;
  std::string parts;
  for (int i = 0; i < kShedReasons; ++i) {
    total += w[i];
    if (!parts.empty()) parts += ", ";
    parts += std::string(shed_reason_name(static_cast<ShedReason>(i))) + " " + std::to_string(w[i]);
  }
  if (total == 0) return "";
  return "shedding: shed " + std::to_string(total) + " record(s) this tick (" + parts + ")";
}

}  // namespace lagpilot
