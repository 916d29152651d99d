#include "policies/shed_gate.h"

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

}  // namespace lagpilot
