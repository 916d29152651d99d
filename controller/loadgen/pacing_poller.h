#pragma once
// Following a pacing recommendation (GET /v1/pacing of a running `lagpilot run`) from a producer.
//
// A PacingPoller fetches the recommendation once per tick (tick_seconds on the injected clock
// of the thread that calls tick()) and keeps the last one it got. The producer's loop reads it
// through latest(), which never blocks: the fetch (HTTP, which may take a while) happens on the
// poller's thread, not on the producer's. A recommendation that changed at time t is fetched by
// the first tick after t and applied by the producer's next loop iteration (milliseconds), so
// the producer follows within one tick of the change, two when a fetch fails or is slow. A
// failed fetch, or a document without a rate (source "none"), keeps the last target.
//
// Thread-safety: tick() from one thread (the poller's); latest() and fetches() from any thread.

#include <atomic>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace lagpilot {

struct PaceTarget {
  double rate = 0;   // messages/s, >= 0
  double burst = 1;  // token-bucket size, messages, >= 1
  std::string source;
  bool operator==(const PaceTarget& o) const { return rate == o.rate && burst == o.burst; }
};

// {"rate": r, "burst": b, "source": s, ...} -> the target; nullopt when rate or burst is null or
// missing (nothing measured yet), negative or not a number.
std::optional<PaceTarget> pace_target_from_json(const nlohmann::json& doc);

class TokenBucket;

// What the producer does with latest() at each loop iteration: when `latest` differs from
// `current`, re-rates `bucket` at `now` (TokenBucket::set_rate / set_burst: tokens earned at the
// old rate are kept) and sets `current`. Returns true when it changed the bucket.
bool follow_pace(TokenBucket& bucket, std::optional<PaceTarget>& current,
                 const std::optional<PaceTarget>& latest, double now);

class PacingPoller {
 public:
  // Fetches the recommendation; may block; nullopt when there is none (or the fetch failed).
  using Fetch = std::function<std::optional<PaceTarget>()>;

  PacingPoller(Fetch fetch, double tick_seconds);

  // Fetches when a tick is due at `now` (the first call always fetches). Returns true if it
  // fetched. Ticks missed by more than a period are not caught up.
  bool tick(double now);
  // When the next tick is due (clock seconds).
  double next_due() const { return next_due_; }
  double tick_seconds() const { return tick_seconds_; }
  // The last target fetched; nullopt before the first one.
  std::optional<PaceTarget> latest() const;
  uint64_t fetches() const { return fetches_.load(std::memory_order_relaxed); }

 private:
  Fetch fetch_;
  double tick_seconds_;
  double next_due_ = -1;      // tick() thread only
  mutable std::mutex mutex_;  // guards latest_
  std::optional<PaceTarget> latest_;
  // atomic: counted by the tick() thread, read by fetches() from any thread.
  std::atomic<uint64_t> fetches_{0};
};

}  // namespace lagpilot
