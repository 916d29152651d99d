#pragma once
// The arrivals of simulate() (sim/simulation.cpp), a tick window at a time: the generator that
// draws them from the trace, the prefetched variant for per-message fidelity, and the CountTape
// through which simulate_all()'s runs share their arrival counts. Internal to the simulator
// (simulation.cpp, and consumer_model.cpp for ConsumerModel::run_window).
//
// Thread-safety: plain single-threaded objects, one per run (a PrefetchedStream's producer runs
// on its own thread behind it, see sim/prefetched_stream.h).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "policies/infinity.h"
#include "sim/consumer_model.h"
#include "sim/prefetched_stream.h"
#include "sim/random.h"
#include "sim/trace.h"

namespace lagpilot::sim::arrivals {

// Stream numbers under the user's seed (3, the service times, is simulation.cpp's).
constexpr uint64_t kArrivalCountStream = 1;
constexpr uint64_t kArrivalPositionStream = 2;

// The arrival counts of a stretch of tick windows, drawn once for several runs. The count
// stream's draws do not depend on what a run does (a window's segments and their means come from
// the tick grid and the trace alone), so the runs that simulate_all() advances together on one
// thread read them here instead of each drawing the same Poisson variates: one generator records
// (mean, count) per segment over a block of windows, then every run replays the block, checking
// that it asks for the same means in the same order. A block holds about kBlock counts, so the
// memory does not grow with the trace.
//
// Thread-safety: a plain value, used by the one thread that runs its group.
class CountTape {
 public:
  static constexpr std::size_t kBlock = 4096;
  void clear() { entries_.clear(); }
  void record(double mean, int64_t count) { entries_.push_back(Entry{mean, count}); }
  std::size_t size() const { return entries_.size(); }
  // The count of entry i, drawn for `mean`; throws std::logic_error when the replaying run asks
  // for another mean or for more counts than were recorded (the runs did not stay in step).
  int64_t count(std::size_t i, double mean) const {
    if (i >= entries_.size() || entries_[i].mean != mean) {
      throw std::logic_error("simulate: arrival counts replayed out of step");
    }
    return entries_[i].count;
  }

 private:
  struct Entry {
    double mean;
    int64_t count;
  };
  std::vector<Entry> entries_;
};

// Algorithm: produces the arrivals of one tick window at a time, in time order. The window is cut
// at trace-bin boundaries into segments; each segment gets Poisson(rate * length) messages from
// the count stream. Per-message mode hands them out one by one at the uniform order statistics
// of the segment, generated ascending without sorting (x' = x + (1 - x)(1 - U^(1/m)) with m
// messages left); batch mode hands out the segment's batches, all at the segment's start.
class ArrivalGenerator {
 public:
  ArrivalGenerator(const Trace& trace, uint64_t seed, bool batch, int batch_size)
      : trace_(&trace),
        duration_(trace.duration()),
        counts_(Rng::stream(seed, kArrivalCountStream)),
        positions_(Rng::stream(seed, kArrivalPositionStream)),
        batch_(batch),
        batch_size_(batch_size) {}

  // Prepares [t0, t1). `seconds_per_message` (service time with stretch) and `pool_size` size
  // the batches (batch mode only).
  void begin_window(double t0, double t1, double seconds_per_message, int pool_size) {
    open_window(t0, t1);
    seconds_per_message_ = seconds_per_message;
    pool_size_ = pool_size;
    chunks_.clear();
    next_chunk_ = 0;
    left_in_segment_ = 0;
    if (batch_) {
      while (next_segment()) {
        // Batches of this segment, in `lanes` parallel streams that each cover the segment in
        // `slots` consecutive sub-windows: enough lanes that one worker keeps up with each lane
        // as it trickles in (capped by the pool), enough slots that no batch holds more than
        // batch_size messages. A batch becomes available when its sub-window opens.
        const int64_t n = left_in_segment_;
        const double length = segment_end_ - segment_start_;
        const double work = static_cast<double>(n) * seconds_per_message_;
        if (n <= batch_size_ && work <= length) {  // the common light-load case: one batch
          chunks_.push_back(ArrivalChunk{segment_start_, segment_end_, n});
        } else {
          const int64_t lanes =
              std::max<int64_t>(1, static_cast<int64_t>(std::min({std::ceil(work / length),
                                                                  static_cast<double>(pool_size_),
                                                                  static_cast<double>(n)})));
          const int64_t by_size = quotient(n + batch_size_ - 1, batch_size_);
          const int64_t slots = std::max<int64_t>(1, quotient(by_size + lanes - 1, lanes));
          const int64_t count = std::min(n, lanes * slots);
          const int64_t used_slots = quotient(count + lanes - 1, lanes);
          const double slot_length = length / static_cast<double>(used_slots);
          const int64_t base = quotient(n, count);
          const int64_t extra = n - base * count;
          // Chunk i is in slot i / lanes: counted, not divided (the first chunk opens slot 0).
          int64_t slot = -1;
          int64_t in_slot = lanes;
          double from = 0.0;
          double to = 0.0;
          for (int64_t i = 0; i < count; ++i) {
            if (in_slot == lanes) {
              in_slot = 0;
              ++slot;
              from = segment_start_ + static_cast<double>(slot) * slot_length;
              to = slot + 1 == used_slots ? segment_end_ : from + slot_length;
            }
            ++in_slot;
            chunks_.push_back(ArrivalChunk{from, to, base + (i < extra ? 1 : 0)});
          }
        }
        left_in_segment_ = 0;
      }
      next_time_ = chunks_.empty() ? kInf : chunks_[0].first_arrival;
    } else {
      position_ = 0.0;
      advance_message();
    }
  }

  // Time of the next arrival (chunk) in the window; +infinity when the window is exhausted.
  double next_time() const { return next_time_; }

  ArrivalChunk pop() {
    if (batch_) {
      const ArrivalChunk c = chunks_[next_chunk_++];
      generated_ += c.count;
      next_time_ = next_chunk_ < chunks_.size() ? chunks_[next_chunk_].first_arrival : kInf;
      return c;
    }
    const ArrivalChunk c{next_time_, next_time_, 1};
    ++generated_;
    advance_message();
    return c;
  }

  // Per-message mode, as ConsumerModel::run_window's source: consumes the arrival at next_time()
  // (as pop() would) and returns the next one's time (+infinity: the window is over).
  double next() {
    ++generated_;
    advance_message();
    return next_time_;
  }

  int64_t generated() const { return generated_; }

  // Counts replayed from `tape` (from its first entry on) instead of drawn; nullptr: drawn.
  void replay_counts(const CountTape* tape) {
    replay_ = tape;
    replayed_ = 0;
  }
  // Draws the counts of the windows [t0, t1) of ticks one after the other into `tape`, as
  // begin_window() and the pops of the window would draw them (nothing else is generated).
  void record_counts(double t0, double t1, CountTape& tape) {
    open_window(t0, t1);
    record_ = &tape;
    while (next_segment()) left_in_segment_ = 0;
    record_ = nullptr;
  }

 private:
  // a / b for 0 <= a and 0 < b, in 32 bits when both fit: the same quotient, and a 64-bit
  // division's latency was a good part of a busy window's batching.
  static int64_t quotient(int64_t a, int64_t b) {
    if (static_cast<uint64_t>(a) <= UINT32_MAX && static_cast<uint64_t>(b) <= UINT32_MAX) {
      return static_cast<uint32_t>(a) / static_cast<uint32_t>(b);
    }
    return a / b;
  }

  // Starts the window [t0, t1): the segment walk only.
  void open_window(double t0, double t1) {
    window_end_ = std::min(t1, duration_);
    cursor_ = t0;
    // Windows come one after the other, so bin_ already points at the bin holding t0 (the last
    // one's window did not end at its end) or at the next one; only a jump needs the division.
    if (t0 != previous_window_end_) {
      bin_ = static_cast<std::size_t>(std::max(0.0, std::floor(t0 / trace_->bin_seconds)));
    }
    previous_window_end_ = window_end_;
  }

  int64_t draw_count(double mean) {
    if (replay_) return replay_->count(replayed_++, mean);
    const int64_t n = counts_.poisson(mean);
    if (record_) record_->record(mean, n);
    return n;
  }

  // Moves to the next segment of the window that has at least one arrival; false at the end.
  bool next_segment() {
    while (cursor_ < window_end_) {
      const double bin_end = static_cast<double>(bin_ + 1) * trace_->bin_seconds;
      const double end = std::min(bin_end, window_end_);
      const double start = cursor_;
      const double rate = bin_ < trace_->rates.size() ? trace_->rates[bin_] : 0.0;
      if (bin_end <= window_end_) ++bin_;
      if (end <= start) continue;
      cursor_ = end;
      const int64_t n = draw_count(rate * (end - start));
      if (n > 0) {
        segment_start_ = start;
        segment_end_ = end;
        if (!batch_) last_before_end_ = std::nextafter(end, -kInf);  // only messages use it
        left_in_segment_ = n;
        return true;
      }
    }
    return false;
  }

  void advance_message() {
    if (left_in_segment_ == 0) {
      if (!next_segment()) {
        next_time_ = kInf;
        return;
      }
      position_ = 0.0;
    }
    // Smallest of m uniforms on [position, 1): position + (1 - position)(1 - U^(1/m)).
    const double m = static_cast<double>(left_in_segment_--);
    const double u = positions_.uniform_pos();
    position_ += (1.0 - position_) * -std::expm1(std::log(u) / m);
    next_time_ =
        std::min(segment_start_ + position_ * (segment_end_ - segment_start_), last_before_end_);
  }

  // Not const, so that the generator is assignable: a run that stops following another in
  // simulate_all() takes a copy of the other's generator (Arrivals::restore).
  const Trace* trace_;
  double duration_;
  Rng counts_;
  Rng positions_;
  bool batch_;
  int64_t batch_size_;

  double window_end_ = 0.0;
  double previous_window_end_ = 0.0;
  double cursor_ = 0.0;
  std::size_t bin_ = 0;
  double seconds_per_message_ = 0.0;
  int pool_size_ = 0;

  double segment_start_ = 0.0;
  double segment_end_ = 0.0;
  double last_before_end_ = 0.0;
  int64_t left_in_segment_ = 0;
  double position_ = 0.0;

  std::vector<ArrivalChunk> chunks_;
  std::size_t next_chunk_ = 0;
  double next_time_ = kInf;
  int64_t generated_ = 0;

  const CountTape* replay_ = nullptr;  // replay_counts()
  std::size_t replayed_ = 0;
  CountTape* record_ = nullptr;  // record_counts(), while it runs
};

// Per-message fidelity's arrivals do not depend on anything the run does (the windows are the
// ticks, one after the other, and a message's time comes from the count and position streams
// alone), so a spare core can draw them ahead (PrefetchedStream): a producer runs the same
// ArrivalGenerator over every tick window and writes each window's arrival times, then +infinity
// as the window's end, a block at a time. The times are the ones the generator would have handed
// out in the run, bit for bit.
class ArrivalFill {
 public:
  ArrivalFill(const Trace& trace, uint64_t seed, int batch_size, int64_t ticks, double tick)
      : generator_(trace, seed, /*batch=*/false, batch_size), ticks_(ticks), tick_(tick) {}

  std::size_t operator()(double* out, std::size_t n) {
    std::size_t k = 0;
    while (k < n) {
      if (!in_window_) {
        if (window_ == ticks_) break;  // every window written: the stream ends
        ++window_;
        generator_.begin_window(static_cast<double>(window_ - 1) * tick_,
                                static_cast<double>(window_) * tick_, 0.0, 0);
        in_window_ = true;
      }
      const double t = generator_.next_time();
      out[k++] = t;
      if (t == kInf) {
        in_window_ = false;
      } else {
        generator_.pop();
      }
    }
    return k;
  }

 private:
  ArrivalGenerator generator_;
  int64_t ticks_;
  double tick_;
  int64_t window_ = 0;  // windows begun
  bool in_window_ = false;
};

// The run's arrivals: drawn in place, or read from a PrefetchedStream (per-message fidelity).
class Arrivals {
 public:
  Arrivals(const Trace& trace, uint64_t seed, bool batch, int batch_size, bool prefetch,
           int64_t ticks, double tick)
      : generator_(trace, seed, batch, batch_size), batch_(batch) {
    if (prefetch && !batch) {
      // Fill must be copyable: the generator sits behind a shared pointer.
      auto fill = std::make_shared<ArrivalFill>(trace, seed, batch_size, ticks, tick);
      prefetched_ = std::make_unique<PrefetchedStream>(
          PrefetchedStream::Fill([fill](double* out, std::size_t n) { return (*fill)(out, n); }));
    }
  }
  void begin_window(double t0, double t1, double seconds_per_message, int pool_size) {
    if (prefetched_) {
      next_ = prefetched_->next();  // the window's first time, or its end (+infinity)
    } else {
      generator_.begin_window(t0, t1, seconds_per_message, pool_size);
    }
  }
  double next_time() const { return prefetched_ ? next_ : generator_.next_time(); }
  ArrivalChunk pop() {
    if (!prefetched_) return generator_.pop();
    const ArrivalChunk c{next_, next_, 1};
    ++generated_;
    next_ = prefetched_->next();
    return c;
  }
  int64_t generated() const { return prefetched_ ? generated_ : generator_.generated(); }
  // The generator as it stands, and back: simulate_all()'s followed run keeps a copy at each
  // block's start, and a run that stops following it takes that copy (a generator of the same
  // trace and config at the same point of the run). Not with prefetched arrivals.
  const ArrivalGenerator& generator() const { return generator_; }
  void restore(const ArrivalGenerator& saved) {
    if (prefetched_) throw std::logic_error("simulate: prefetched arrivals are not copied");
    generator_ = saved;
  }
  // See ArrivalGenerator::replay_counts (not with prefetched arrivals, which draw their own).
  void replay_counts(const CountTape* tape) {
    if (prefetched_) throw std::logic_error("simulate: prefetched arrivals replay no counts");
    generator_.replay_counts(tape);
  }

  // Per-message arrivals (prefetched or drawn here) go to the model a window at a time
  // (ConsumerModel::run_window: the same order as the caller's loop over next_time() and pop()).
  bool per_message() const { return !batch_; }
  void run_window(ConsumerModel& model, double t1) {
    if (prefetched_) {
      generated_ += model.run_window(t1, *prefetched_, next_);
    } else {
      double next = generator_.next_time();
      model.run_window(t1, generator_, next);  // the generator counts what it hands out
    }
  }

 private:
  ArrivalGenerator generator_;
  bool batch_;
  std::unique_ptr<PrefetchedStream> prefetched_;
  double next_ = kInf;
  int64_t generated_ = 0;
};

}  // namespace lagpilot::sim::arrivals
