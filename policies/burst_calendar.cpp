#include "policies/burst_calendar.h"

#include <algorithm>

namespace lagpilot {

void BurstCalendar::onset(double t) {
  const int keep = std::clamp(params_.intervals + 1, 1, kMaxOnsets);
  if (count_ == keep) {
    std::copy(onsets_ + 1, onsets_ + count_, onsets_);
    --count_;
  }
  onsets_[count_++] = t;
  learn();
}

void BurstCalendar::ended(int pool) {
  pool_ = pool;
}

void BurstCalendar::learn() {
  period_ = 0.0;
  const int n = params_.intervals;
  if (n <= 0 || n + 1 > kMaxOnsets || count_ < n + 1) return;
  double lo = onsets_[1] - onsets_[0];
  double hi = lo;
  for (int i = 2; i < count_; ++i) {
    lo = std::min(lo, onsets_[i] - onsets_[i - 1]);
    hi = std::max(hi, onsets_[i] - onsets_[i - 1]);
  }
  const double mean = (onsets_[count_ - 1] - onsets_[0]) / n;
  if (mean >= params_.min_period && hi - lo <= params_.tolerance * mean) period_ = mean;
}

int BurstCalendar::wanted(double now, double lead) {
  if (!known() || pool_ <= 0) return 0;
  const double due_at = due();
  const double slack = std::max(lead, params_.tolerance * period_);
  if (now > due_at + slack) {
    // Late: the pattern broke. Keep the last onset, so that a resumed period is learned anew.
    onsets_[0] = onsets_[count_ - 1];
    count_ = 1;
    period_ = 0.0;
    return 0;
  }
  return now >= due_at - lead ? pool_ : 0;
}

}  // namespace lagpilot
