#include "controller/sinks/shedding.h"

#include <charconv>
#include <cstdio>

namespace lagpilot {

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
