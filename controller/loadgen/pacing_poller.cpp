#include "controller/loadgen/pacing_poller.h"

#include <cmath>
#include <stdexcept>
#include <utility>

#include "controller/loadgen/token_bucket.h"

namespace lagpilot {

std::optional<PaceTarget> pace_target_from_json(const nlohmann::json& doc) {
  if (!doc.is_object()) return std::nullopt;
  const auto rate = doc.find("rate");
  const auto burst = doc.find("burst");
  if (rate == doc.end() || burst == doc.end() || !rate->is_number() || !burst->is_number()) {
    return std::nullopt;
  }
  PaceTarget t;
  t.rate = rate->get<double>();
  t.burst = burst->get<double>();
  if (!std::isfinite(t.rate) || t.rate < 0 || !std::isfinite(t.burst) || t.burst < 1) {
    return std::nullopt;
  }
  if (const auto s = doc.find("source"); s != doc.end() && s->is_string()) {
    t.source = s->get<std::string>();
  }
  return t;
}

bool follow_pace(TokenBucket& bucket, std::optional<PaceTarget>& current,
                 const std::optional<PaceTarget>& latest, double now) {
  if (!latest || (current && *current == *latest)) return false;
  bucket.set_rate(latest->rate, now);
  bucket.set_burst(latest->burst, now);
  current = latest;
  return true;
}

PacingPoller::PacingPoller(Fetch fetch, double tick_seconds)
    : fetch_(std::move(fetch)), tick_seconds_(tick_seconds) {
  if (!fetch_) throw std::invalid_argument("PacingPoller: fetch must be set");
  if (!std::isfinite(tick_seconds) || tick_seconds <= 0) {
    throw std::invalid_argument("PacingPoller: tick_seconds must be > 0");
  }
}

bool PacingPoller::tick(double now) {
  if (next_due_ >= 0 && now < next_due_) return false;
  // The next beat after `now` (missed beats are skipped, not caught up).
  next_due_ = next_due_ < 0
                  ? now + tick_seconds_
                  : next_due_ + tick_seconds_ * (std::floor((now - next_due_) / tick_seconds_) + 1);
  std::optional<PaceTarget> got = fetch_();
  fetches_.fetch_add(1, std::memory_order_relaxed);
  if (got) {
    std::lock_guard lock(mutex_);
    latest_ = std::move(got);
  }
  return true;
}

std::optional<PaceTarget> PacingPoller::latest() const {
  std::lock_guard lock(mutex_);
  return latest_;
}

}  // namespace lagpilot
