#include "sim/block_pipeline.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace lagpilot::sim {
namespace {

// The pipeline's shared state; every member is guarded by `mutex`.
class Schedule {
 public:
  Schedule(std::size_t units, std::size_t window, const BlockPipeline::Steps& steps)
      : window_(static_cast<int64_t>(window)), steps_(steps), units_(units) {}

  // One thread's loop: takes work until there is none left.
  void work() {
    std::unique_lock lock(mutex_);
    for (;;) {
      const Piece piece = pick();
      if (piece.kind == Piece::kDone) {
        changed_.notify_all();
        return;
      }
      if (piece.kind == Piece::kWait) {
        if (busy_ == 0) {  // nothing runs that could make anything ready: a cycle of waits
          error_ = std::make_exception_ptr(
              std::logic_error("BlockPipeline: every unit waits for another"));
          stopped_ = true;
          continue;
        }
        changed_.wait(lock);
        continue;
      }
      ++busy_;
      const std::size_t slot = static_cast<std::size_t>(piece.block % window_);
      if (piece.kind == Piece::kProduce) {
        producing_ = true;
        lock.unlock();
        bool more = false;
        std::exception_ptr error;
        try {
          more = steps_.produce(piece.block, slot);
        } catch (...) {
          error = std::current_exception();
        }
        lock.lock();
        producing_ = false;
        if (error) {
          error_ = error;
          stopped_ = true;
        } else if (more) {
          ++produced_;
        } else {
          ended_ = true;
        }
      } else {
        Unit& unit = units_[piece.unit];
        unit.busy = true;
        lock.unlock();
        const bool more = steps_.step(piece.unit, piece.block, slot);
        lock.lock();
        unit.busy = false;
        ++unit.next;
        if (!more) unit.failed = true;
      }
      --busy_;
      changed_.notify_all();
    }
  }

  std::exception_ptr error() const {
    std::lock_guard lock(mutex_);
    return error_;
  }

 private:
  struct Unit {
    int64_t next = 0;  // blocks run
    bool busy = false;
    bool failed = false;
    std::size_t lead = BlockPipeline::kNone;  // waits_for(), as last asked
    bool leads = false;                       // an unfinished unit waits for this one
  };
  struct Piece {
    enum Kind { kProduce, kStep, kWait, kDone } kind;
    int64_t block = 0;
    std::size_t unit = 0;
  };

  bool finished(const Unit& u) const { return u.failed || (ended_ && u.next == produced_); }

  // The next piece of work (see the header's algorithm). Called with the mutex held.
  Piece pick() {
    if (stopped_) return Piece{busy_ == 0 ? Piece::kDone : Piece::kWait};
    int64_t slowest = produced_;
    bool all_finished = true;
    for (const Unit& u : units_) {
      if (finished(u)) continue;
      all_finished = false;
      slowest = std::min(slowest, u.next);
    }
    if (all_finished && !producing_) return Piece{busy_ == 0 ? Piece::kDone : Piece::kWait};
    if (!ended_ && !producing_ && produced_ - slowest < window_) {
      return Piece{Piece::kProduce, produced_};
    }
    // Who leads whom, as last asked (a busy unit is not asked: its step may change the answer).
    for (std::size_t i = 0; i < units_.size(); ++i) {
      Unit& u = units_[i];
      u.leads = false;
      if (!u.busy && !finished(u)) {
        const std::size_t lead = steps_.waits_for(i);
        u.lead = lead < units_.size() ? lead : BlockPipeline::kNone;
      }
    }
    for (const Unit& u : units_) {
      if (!finished(u) && u.lead != BlockPipeline::kNone) units_[u.lead].leads = true;
    }
    Piece best{Piece::kWait};
    bool best_leads = false;
    for (std::size_t i = 0; i < units_.size(); ++i) {
      const Unit& u = units_[i];
      if (u.busy || finished(u) || u.next >= produced_) continue;
      if (best.kind == Piece::kStep &&
          (best_leads > u.leads || (best_leads == u.leads && u.next >= best.block))) {
        continue;
      }
      if (u.lead != BlockPipeline::kNone) {
        const Unit& l = units_[u.lead];
        if (!finished(l) && l.next <= u.next) continue;
      }
      best = Piece{Piece::kStep, u.next, i};
      best_leads = u.leads;
    }
    return best;
  }

  const int64_t window_;
  const BlockPipeline::Steps& steps_;
  mutable std::mutex mutex_;         // guards everything below
  std::condition_variable changed_;  // a piece of work ended, or the pipeline stopped
  std::vector<Unit> units_;
  int64_t produced_ = 0;  // blocks produced
  bool producing_ = false;
  bool ended_ = false;  // produce said there is no block `produced_`
  int busy_ = 0;        // pieces running outside the mutex
  bool stopped_ = false;
  std::exception_ptr error_;
};

}  // namespace

void BlockPipeline::run(std::size_t units, std::size_t window, int threads, const Steps& steps) {
  if (window == 0) throw std::invalid_argument("BlockPipeline: window must be >= 1");
  Schedule schedule(units, window, steps);
  const int workers = std::max(1, threads);
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(workers - 1));
  for (int w = 1; w < workers; ++w) pool.emplace_back([&] { schedule.work(); });
  schedule.work();
  for (std::thread& t : pool) t.join();
  if (const std::exception_ptr e = schedule.error()) std::rethrow_exception(e);
}

}  // namespace lagpilot::sim
