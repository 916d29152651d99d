#pragma once
// Producer pacing: the rate a producer should keep to so that this consumer keeps up, and the
// token-bucket burst that goes with it (GET /v1/pacing, lagpilot_recommended_producer_rate,
// `lagpilot calibrate`, `lagpilot produce --pacing-url`).
//
// The rule of the practice: measure the consumer's sustainable rate R at max workers, then pace
// the producer at R x (1 - headroom), with a burst headroom h of 20 to 30 % (default 25 %). The
// matching bucket size is the spare capacity over one control tick, B = ceil(h x R x tick): a
// full bucket released at once adds at most what the spare capacity drains within a tick, so
// a burst shows the controller one tick of extra lag, not a trend to scale on.
//
// Where R comes from, best first (PacingRecommendation::source):
//   "measured"             this run: the mean processed rate over the last kMeasuredWindow ticks
//                          at which the pool was at max workers, its workers busy at least
//                          kSaturatedBusyShare of the time, and had a backlog at both ends of
//                          the tick window (so the rate is the consumer's, not the arrivals')
//   "calibration"          `lagpilot calibrate`'s sustained rate, measured at max workers
//   "calibration_fit"      the calibration's USL fit evaluated at max workers (its largest
//                          step was another size)
//   "per_worker_estimate"  this run: processed rate / mean busy workers x max workers (linear
//                          scaling assumed: an upper bound when workers contend)
//   "none"                 nothing measured yet: rate and burst are null
// The figure's age is now minus the Unix time it was measured at (the calibration's "date").
//
// Thread-safety: PacingConfig and PacingRecommendation are plain values; a PacingEstimator has
// one owner (RuntimeMetrics feeds it on the control thread).

#include <deque>
#include <nlohmann/json.hpp>
#include <string>

#include "policies/observation.h"

namespace lagpilot {

// "pacing" in the config file.
struct PacingConfig {
  static constexpr double kMinHeadroom = 0.20;
  static constexpr double kMaxHeadroom = 0.30;
  double headroom = 0.25;  // burst headroom, a fraction in [kMinHeadroom, kMaxHeadroom]

  // Reads {"headroom"}; throws ConfigError naming the JSON path ("pacing.headroom: ...").
  static PacingConfig from_json(const nlohmann::json& j, const std::string& path = "pacing");
  nlohmann::json to_json() const;
  // Throws ConfigError(`where`, ...) unless headroom is in [kMinHeadroom, kMaxHeadroom].
  static void check_headroom(double headroom, const std::string& where);
};

struct PacingRecommendation {
  bool available = false;       // false: source "none", nothing else is meaningful
  double sustainable_rate = 0;  // R, messages/s at max workers
  double headroom = 0.25;
  double rate = 0;   // R x (1 - headroom), messages/s
  double burst = 0;  // token-bucket size, messages: max(1, ceil(headroom x R x tick_seconds))
  int max_workers = 0;
  std::string source = "none";
  double as_of_unix_seconds = -1;  // when R was measured; -1: unknown

  // The recommendation for a sustainable rate R (> 0, finite; else not available).
  static PacingRecommendation from_rate(double sustainable_rate, double headroom,
                                        double tick_seconds, int max_workers, std::string source,
                                        double as_of_unix_seconds);
  // From a `lagpilot calibrate` record ({"sustained_rate", "sustained_workers", "fit", "date"}):
  // "calibration" if its largest step was max_workers, else "calibration_fit" (the USL at
  // max_workers). Not available when the record holds neither (or is not an object).
  static PacingRecommendation from_calibration(const nlohmann::json& record, int max_workers,
                                               double headroom, double tick_seconds);
};

// {"rate", "burst", "sustainable_rate", "headroom", "max_workers", "source", "as_of_unix_seconds",
//  "age_seconds"} (rate, burst, sustainable_rate, as_of and age null when not available or
// unknown); age = now_unix_seconds - as_of_unix_seconds.
nlohmann::json pacing_json(const PacingRecommendation& p, double now_unix_seconds);

// "2024-05-01T12:00:00Z" (what `lagpilot calibrate` writes as "date") -> Unix seconds; -1 when
// it cannot be read.
double parse_utc_iso8601(const std::string& text);

class PacingEstimator {
 public:
  static constexpr int kMeasuredWindow = 5;  // ticks averaged for "measured"
  // Mean busy workers / workers at or above which a tick measures the consumer's capacity.
  static constexpr double kSaturatedBusyShare = 0.9;

  // `fallback` is what applies until this run measures (from_calibration, or not available).
  PacingEstimator(PacingConfig config = {}, double tick_seconds = 1.0,
                  nlohmann::json calibration = nullptr);

  // Folds in one tick's observation; `max_workers` is the bound in force. Returns the
  // recommendation now.
  const PacingRecommendation& update(const Observation& o, int max_workers,
                                     double now_unix_seconds);
  const PacingRecommendation& last() const { return last_; }

 private:
  PacingConfig config_;
  double tick_seconds_;
  nlohmann::json calibration_;
  int max_workers_ = -1;  // the bound of the samples below; a change starts over
  std::deque<double> samples_;
  double measured_at_ = -1;
  bool previous_qualified_ = false;  // the previous tick was at max workers with a backlog
  double per_worker_rate_ = 0;
  double per_worker_at_ = -1;
  PacingRecommendation calibrated_;
  PacingRecommendation last_;
};

}  // namespace lagpilot
