#pragma once
// BurstCalendar: learns bursts that come at a fixed period (a cron job, an hourly batch load, a
// producer that flushes on a timer) from their onsets, and says when the next one is due and how
// large a pool it needed last time, so that the pool can be ready before it arrives instead of a
// warm-up after it.
//
// Algorithm: the onsets of the last `intervals` + 1 bursts are kept. When the last `intervals`
// gaps between them agree (max - min <= tolerance x their mean, the mean >= min_period), the
// next onset is due at last + mean. The pool is wanted from due - lead until due + max(lead,
// tolerance x mean); a burst that has not begun by then breaks the pattern and the history is
// cleared (a stopped job does not keep buying workers). Bursts that come early or late break it
// the same way, through the gaps' spread.
//
// Thread-safety: none; owned by one policy and used from its decide() only.

namespace lagpilot {

struct BurstCalendarParams {
  int intervals = 3;         // gaps that must agree; 0: off
  double tolerance = 0.02;   // their spread, a fraction of the period, >= 0
  double min_period = 60.0;  // seconds; shorter periods are not learned
};

class BurstCalendar {
 public:
  using Params = BurstCalendarParams;
  explicit BurstCalendar(Params params = {}) : params_(params) {}

  // A burst began at time t (seconds, increasing).
  void onset(double t);
  // The burst under way ended; `pool` is the largest pool it had.
  void ended(int pool);
  // The pool to have ready at `now` for the burst due next (0: none due within `lead` seconds);
  // clears the history once a due burst is late beyond its window. Call once per tick.
  int wanted(double now, double lead);
  // The next due onset (valid only while a period is known).
  bool known() const { return period_ > 0.0; }
  double due() const { return onsets_[count_ - 1] + period_; }
  double period() const { return period_; }

 private:
  void learn();

  static constexpr int kMaxOnsets = 9;
  Params params_;
  double onsets_[kMaxOnsets] = {};  // the last onsets, oldest first
  int count_ = 0;
  int pool_ = 0;         // the last ended burst's largest pool
  double period_ = 0.0;  // 0: no period known
};

}  // namespace lagpilot
