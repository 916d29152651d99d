#pragma once
// A pool size per control tick, kept as runs of equal sizes.
//
// Why runs: the oracle's schedule over months of one-second ticks changes size a few thousand
// times, so a vector with one entry per tick (18.6 M entries for the NYC taxi trace) was most of
// a simulation's memory; runs keep it in proportion to the changes, not to the trace's length.
//
// Thread-safety: a value type; concurrent reads are safe, writes need the caller's exclusion.

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <vector>

namespace lagpilot::sim {

class WorkerSchedule {
 public:
  struct Run {
    int64_t first = 0;  // the run's first tick
    int workers = 0;
  };

  WorkerSchedule() = default;
  WorkerSchedule(std::initializer_list<int> workers) {
    for (const int n : workers) append(n);
  }
  static WorkerSchedule from_vector(const std::vector<int>& workers) {
    WorkerSchedule s;
    for (const int n : workers) s.append(n);
    return s;
  }

  // Appends `count` ticks of `workers` workers (count >= 0).
  void append(int workers, int64_t count = 1) {
    if (count <= 0) return;
    if (runs_.empty() || runs_.back().workers != workers) runs_.push_back({ticks_, workers});
    ticks_ += count;
  }

  int64_t size() const { return ticks_; }
  bool empty() const { return ticks_ == 0; }
  const std::vector<Run>& runs() const { return runs_; }

  // The pool during tick k, 0 <= k < size() (logarithmic in the number of runs).
  int operator[](int64_t k) const {
    std::size_t run = 0;
    return at(k, run);
  }
  // The same, starting from the run `hint` (updated to tick k's run): constant time when the
  // ticks are read in order or nearly so, as a replay does.
  int at(int64_t k, std::size_t& hint) const {
    if (k < 0 || k >= ticks_) throw std::out_of_range("WorkerSchedule: tick out of range");
    if (hint >= runs_.size() || runs_[hint].first > k) hint = 0;
    if (hint + 1 < runs_.size() && runs_[hint + 1].first <= k) {
      if (hint + 2 >= runs_.size() || runs_[hint + 2].first > k) {
        ++hint;  // the next run: the common step of an in-order read
      } else {
        const auto after =
            std::upper_bound(runs_.begin() + static_cast<std::ptrdiff_t>(hint), runs_.end(), k,
                             [](int64_t t, const Run& r) { return t < r.first; });
        hint = static_cast<std::size_t>(std::prev(after) - runs_.begin());
      }
    }
    return runs_[hint].workers;
  }

  std::vector<int> to_vector() const {
    std::vector<int> out;
    out.reserve(static_cast<std::size_t>(ticks_));
    for (std::size_t r = 0; r < runs_.size(); ++r)
      out.resize(out.size() + length(r), runs_[r].workers);
    return out;
  }

  // Ticks of run r.
  std::size_t length(std::size_t r) const {
    const int64_t end = r + 1 < runs_.size() ? runs_[r + 1].first : ticks_;
    return static_cast<std::size_t>(end - runs_[r].first);
  }

  // Reads the ticks in order, one call per tick (constant time each).
  class Reader {
   public:
    explicit Reader(const WorkerSchedule& s) : s_(s) {}
    int next() {
      while (left_ == 0) {
        if (run_ >= s_.runs_.size()) throw std::out_of_range("WorkerSchedule: read past the end");
        left_ = static_cast<int64_t>(s_.length(run_));
        current_ = s_.runs_[run_++].workers;
      }
      --left_;
      return current_;
    }

   private:
    const WorkerSchedule& s_;
    std::size_t run_ = 0;
    int64_t left_ = 0;
    int current_ = 0;
  };

  bool operator==(const WorkerSchedule& o) const {
    if (ticks_ != o.ticks_ || runs_.size() != o.runs_.size()) return false;
    for (std::size_t r = 0; r < runs_.size(); ++r) {
      if (runs_[r].first != o.runs_[r].first || runs_[r].workers != o.runs_[r].workers) {
        return false;
      }
    }
    return true;
  }

 private:
  std::vector<Run> runs_;
  int64_t ticks_ = 0;
};

}  // namespace lagpilot::sim
