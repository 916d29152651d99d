#include "controller/pool/worker_pool.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <iterator>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "policies/log_histogram.h"

namespace lagpilot {
namespace {

// Latency histogram layout: 64 buckets per octave from 2^-20 s (0.95 us) to 2^12 s (68 minutes),
// so that p50 and p99 (bucket midpoints) are within 0.8 % of the measured run times, finer than
// the two decimals of a millisecond that status lines and `calibrate` print; the first bucket
// also holds shorter times, the last longer ones. 2048 counters: 16 KB per pool, swept once per
// tick by take_window().
using LatencyBuckets = LogLinearBuckets<6, -20, 12>;
constexpr int kBuckets = LatencyBuckets::size();

// Run time in whole nanoseconds for the latency sum (negative or NaN: 0, as bucket 0 takes them).
uint64_t to_nanoseconds(double seconds) {
  return seconds > 0.0 ? static_cast<uint64_t>(std::min(seconds, 1e9) * 1e9) : 0;
}

// So that 0.8 * capacity counts as 8000 for 10000 even if the product rounds up a hair.
constexpr double kRoundingSlack = 1e-9;

std::thread start_std_thread(std::function<void()> body) {
  return std::thread(std::move(body));
}

// The task a worker thread is running now, so that record_items() called from inside it can
// tell the pool not to record the task itself. Thread-local: set and read by that worker only.
struct TaskInProgress {
  const void* pool = nullptr;   // the Impl running the task
  bool items_recorded = false;  // record_items() was called from inside it
};
thread_local TaskInProgress* task_in_progress = nullptr;

}  // namespace

struct WorkerPool::Impl {
  // One worker thread. Created by resize() (or the constructor through it), listed in
  // workers_, joined by the reaper after it has exited.
  struct Worker {
    std::thread thread;    // set by the starting resize() before the worker is listed in
                           // workers_; the worker never touches it; joined by reap/shutdown
    bool retire = false;   // guarded by mu_: the stop signal, read by the worker between tasks
    bool busy = false;     // guarded by mu_: running a task (shrink retires idle workers first)
    bool entered = false;  // guarded by mu_: has entered its loop
    bool exited = false;   // guarded by mu_: left its loop, ready to be joined
  };

  Impl(WorkerPoolOptions options, const Clock& clock, ThreadStarter starter)
      : options_(validated(options)),
        clock_(clock),
        starter_(starter ? std::move(starter) : ThreadStarter(start_std_thread)),
        high_depth_(std::max<std::size_t>(
            1, static_cast<std::size_t>(std::ceil(options_.high_watermark *
                                                      static_cast<double>(options_.queue_capacity) -
                                                  kRoundingSlack)))),
        low_depth_(static_cast<std::size_t>(
            std::floor(options_.low_watermark * static_cast<double>(options_.queue_capacity) +
                       kRoundingSlack))) {
    const double now = clock_.now();
    window_start_ = now;
    busy_since_ = now;
  }

  static WorkerPoolOptions validated(WorkerPoolOptions o) {
    auto bad = [](const std::string& what) {
      throw std::invalid_argument("WorkerPoolOptions." + what);
    };
    if (o.max_workers < 1) bad("max_workers must be >= 1, got " + std::to_string(o.max_workers));
    if (o.queue_capacity < 1) bad("queue_capacity must be >= 1, got 0");
    if (!(o.high_watermark > 0.0 && o.high_watermark <= 1.0))
      bad("high_watermark must be in (0, 1], got " + std::to_string(o.high_watermark));
    if (!(o.low_watermark >= 0.0 && o.low_watermark < o.high_watermark))
      bad("low_watermark must be in [0, high_watermark), got " + std::to_string(o.low_watermark));
    o.initial_workers = std::clamp(o.initial_workers, 1, o.max_workers);
    return o;
  }

  // ---- submission -------------------------------------------------------------------------

  bool try_submit(Task& task, QueuePlace place) {
    if (!task) throw std::invalid_argument("WorkerPool::try_submit: empty task");
    bool flipped = false;
    {
      std::lock_guard lock(mu_);
      if (!accepting_ || queue_.size() >= options_.queue_capacity) return false;
      if (place == QueuePlace::kFront) {
        queue_.push_front(std::move(task));
      } else {
        queue_.push_back(std::move(task));
      }
      if (!backpressure_.load(std::memory_order_relaxed) && queue_.size() >= high_depth_) {
        set_backpressure_locked(true);
        flipped = true;
      }
      depth_.store(queue_.size(), std::memory_order_release);  // see run_one()
      if (waiting_ > 0) work_cv_.notify_one();
    }
    if (flipped) deliver_backpressure();
    return true;
  }

  // ---- resizing ---------------------------------------------------------------------------

  int resize(int requested) {
    const int n = std::clamp(requested, 1, options_.max_workers);
    std::lock_guard resize_lock(resize_mu_);
    {
      std::lock_guard lock(mu_);
      if (shutdown_started_) return 0;
    }
    // Join the threads that left since the last resize (long gone by now, so this is quick)
    // before the change, not after it: the threads this call retires are still exiting then.
    reap_exited();
    return change_size(n);
  }

  // The body of resize(n). Requires resize_mu_.
  int change_size(int n) {
    std::vector<Worker*> taken_back;  // retiring workers asked to stay, for a rollback
    int old = 0;
    int missing = 0;
    {
      std::lock_guard lock(mu_);
      old = active_.load(std::memory_order_relaxed);
      if (n == old) return n;
      if (n < old) {
        retire_locked(old - n);
        set_active_locked(n);
      } else {
        // Grow: first take back workers that were asked to retire but are still running.
        int active = old;
        for (auto& w : workers_) {
          if (active == n) break;
          if (w->retire && !w->exited) {
            w->retire = false;
            ++active;
            taken_back.push_back(w.get());
          }
        }
        set_active_locked(active);
        missing = n - active;
      }
    }
    if (n < old) {
      // Retiring idle workers must wake now, not at their next task. Safe without the lock:
      // a worker not yet waiting reads its stop flag (set above, under mu_) before it waits.
      work_cv_.notify_all();
      return n;
    }
    if (missing == 0) return n;

    // Start the missing threads without the queue lock, so the running workers carry on.
    std::vector<std::unique_ptr<Worker>> started;
    std::string error;
    for (int i = 0; i < missing; ++i) {
      auto w = std::make_unique<Worker>();
      Worker* raw = w.get();
      try {
        std::thread t = starter_([this, raw] { run_worker(raw); });
        if (!t.joinable()) throw std::runtime_error("the thread starter returned no thread");
        w->thread = std::move(t);
      } catch (const std::exception& e) {
        error = e.what();
      } catch (...) {
        error = "unknown exception";
      }
      if (!error.empty()) {
        error = "resize " + std::to_string(old) + " -> " + std::to_string(n) +
                ": could not start worker thread " + std::to_string(i + 1) + " of " +
                std::to_string(missing) + ": " + error + "; keeping " + std::to_string(old) +
                " workers";
        break;
      }
      started.push_back(std::move(w));
    }

    std::lock_guard lock(mu_);
    const bool ok = error.empty();
    for (auto& w : started) {
      w->retire = !ok;  // on a rollback the new threads retire at once (joined later)
      workers_.push_back(std::move(w));
    }
    if (ok) {
      set_active_locked(n);
      return n;
    }
    for (Worker* w : taken_back) w->retire = true;
    set_active_locked(old);
    last_error_ = std::move(error);
    work_cv_.notify_all();
    return old;
  }

  // Publishes a new size(). Requires mu_. Wakes wait_idle(): a take-back may make it true.
  void set_active_locked(int n) {
    active_.store(n, std::memory_order_relaxed);
    if (state_waiters_ > 0) state_cv_.notify_all();
  }

  // Sets the stop flag on `count` workers that are not retiring, idle ones first.
  // Requires mu_.
  void retire_locked(int count) {
    for (const bool pick_busy : {false, true}) {
      for (auto& w : workers_) {
        if (count == 0) return;
        if (!w->retire && !w->exited && w->busy == pick_busy) {
          w->retire = true;
          --count;
        }
      }
    }
  }

  // Joins the threads that have left their loop, outside mu_. Requires resize_mu_ (so no
  // one else reaps or starts threads at the same time).
  void reap_exited() {
    std::vector<std::unique_ptr<Worker>> exited;
    {
      std::lock_guard lock(mu_);
      auto alive = std::stable_partition(workers_.begin(), workers_.end(),
                                         [](const auto& w) { return !w->exited; });
      std::move(alive, workers_.end(), std::back_inserter(exited));
      workers_.erase(alive, workers_.end());
    }
    for (auto& w : exited) w->thread.join();  // it has exited its loop: returns at once
  }

  // ---- the worker -------------------------------------------------------------------------

  void run_worker(Worker* self) {
    std::unique_lock lock(mu_);
    self->entered = true;
    live_threads_.fetch_add(1, std::memory_order_relaxed);
    if (state_waiters_ > 0) state_cv_.notify_all();
    for (;;) {
      if (self->retire) break;  // checked only here, between tasks
      if (!queue_.empty()) {
        run_one(self, lock);
        continue;
      }
      if (stopping_) break;  // shutting down and nothing left to drain
      ++waiting_;
      work_cv_.wait(lock);
      --waiting_;
    }
    self->exited = true;
    live_threads_.fetch_sub(1, std::memory_order_relaxed);
    // A submit may have woken this worker just as it retired: pass the wake-up on.
    if (!queue_.empty() && waiting_ > 0) work_cv_.notify_one();
    if (state_waiters_ > 0) state_cv_.notify_all();
  }

  // Takes the front task, runs it without the lock, records it. Called and returns with mu_.
  void run_one(Worker* self, std::unique_lock<std::mutex>& lock) {
    Task task = std::move(queue_.front());
    queue_.pop_front();
    bool flipped = false;
    if (backpressure_.load(std::memory_order_relaxed) && queue_.size() <= low_depth_) {
      set_backpressure_locked(false);
      flipped = true;
    }
    // Release after the watermark state: a reader that sees this depth sees that state too.
    depth_.store(queue_.size(), std::memory_order_release);
    const double start = clock_.now();
    integrate_busy_locked(start);
    busy_.fetch_add(1, std::memory_order_relaxed);
    self->busy = true;
    if (!queue_.empty() && waiting_ > 0) work_cv_.notify_one();        // more work: wake a peer
    if (queue_.empty() && state_waiters_ > 0) state_cv_.notify_all();  // shutdown() drains
    lock.unlock();

    if (flipped) deliver_backpressure();
    bool threw = false;
    TaskInProgress in_progress{this, false};
    TaskInProgress* const outer = task_in_progress;
    task_in_progress = &in_progress;
    try {
      task();
    } catch (const std::exception& e) {
      threw = true;  // counted and recorded; the worker lives on
      record_task_failure(e.what());
    } catch (...) {
      threw = true;
      record_task_failure("non-standard exception");
    }
    task_in_progress = outer;
    const double end = clock_.now();
    task = nullptr;  // its captures die here, outside the lock (they may call the pool)
    if (!in_progress.items_recorded || threw) {
      latency_[LatencyBuckets::index(end - start)].fetch_add(1, std::memory_order_relaxed);
      latency_sum_ns_.fetch_add(to_nanoseconds(end - start), std::memory_order_relaxed);
      completed_.fetch_add(1, std::memory_order_relaxed);
    }
    if (threw) {
      failed_.fetch_add(1, std::memory_order_relaxed);
      window_failed_.fetch_add(1, std::memory_order_relaxed);
    }

    lock.lock();
    integrate_busy_locked(end);
    busy_.fetch_sub(1, std::memory_order_relaxed);
    self->busy = false;
    if (state_waiters_ > 0 && queue_.empty() && busy_.load(std::memory_order_relaxed) == 0)
      state_cv_.notify_all();
  }

  // A task that throws is a bug of its owner (the Kafka source's lane tasks catch what their
  // handler throws): counted, and the first one kept for task_failure(); the owner reports it
  // (the pool has no logger).
  void record_task_failure(const char* what) {
    std::lock_guard lock(mu_);
    if (first_task_failure_.empty()) first_task_failure_ = what;
    // After the reason: a reader that sees the count finds the reason under mu_.
    task_failures_.fetch_add(1, std::memory_order_release);
  }

  // Batched items: counts them per bucket first, so that the shared atomic counters see one
  // add per distinct bucket (items of one batch mostly share a few buckets).
  void record_items(std::span<const double> item_seconds, std::size_t failed_items) {
    if (task_in_progress != nullptr && task_in_progress->pool == this) {
      task_in_progress->items_recorded = true;
    }
    constexpr std::size_t kRun = 16;  // distinct buckets gathered before flushing
    std::array<int, kRun> buckets{};
    std::array<uint64_t, kRun> counts{};
    std::size_t used = 0;
    auto flush = [&] {
      for (std::size_t i = 0; i < used; ++i) {
        latency_[buckets[i]].fetch_add(counts[i], std::memory_order_relaxed);
      }
      used = 0;
    };
    uint64_t sum_ns = 0;
    for (const double seconds : item_seconds) {
      sum_ns += to_nanoseconds(seconds);
      const int bucket = LatencyBuckets::index(seconds);
      std::size_t i = 0;
      while (i < used && buckets[i] != bucket) ++i;
      if (i == used) {
        if (used == kRun) {
          flush();
          i = 0;
        }
        buckets[i] = bucket;
        counts[i] = 0;
        used = i + 1;
      }
      ++counts[i];
    }
    flush();
    latency_sum_ns_.fetch_add(sum_ns, std::memory_order_relaxed);
    completed_.fetch_add(item_seconds.size(), std::memory_order_relaxed);
    if (failed_items > 0) {
      failed_.fetch_add(failed_items, std::memory_order_relaxed);
      window_failed_.fetch_add(failed_items, std::memory_order_relaxed);
    }
  }

  // Adds busy-worker-seconds up to `t`. Requires mu_. Ignores time going backwards.
  void integrate_busy_locked(double t) {
    if (t > busy_since_) {
      busy_seconds_ += busy_.load(std::memory_order_relaxed) * (t - busy_since_);
      busy_since_ = t;
    }
  }

  // ---- backpressure -----------------------------------------------------------------------

  void set_backpressure_locked(bool on) {
    backpressure_.store(on, std::memory_order_relaxed);
    ++backpressure_version_;
  }

  // Calls the listener with the current state if it changed since the last call. Must be
  // called without mu_. The listener runs under listener_mu_ (recursive: it may submit).
  void deliver_backpressure() {
    std::lock_guard listener_lock(listener_mu_);
    if (!listener_) return;
    uint64_t version = 0;
    bool state = false;
    {
      std::lock_guard lock(mu_);
      version = backpressure_version_;
      state = backpressure_.load(std::memory_order_relaxed);
    }
    if (version == delivered_version_) return;
    delivered_version_ = version;
    if (static_cast<int>(state) == delivered_state_) return;
    delivered_state_ = state;
    try {
      listener_(state);
    } catch (const std::exception& e) {
      std::lock_guard lock(mu_);
      last_error_ = std::string("backpressure listener threw: ") + e.what();
    } catch (...) {
      std::lock_guard lock(mu_);
      last_error_ = "backpressure listener threw an unknown exception";
    }
  }

  void set_backpressure_listener(std::function<void(bool)> listener) {
    {
      std::lock_guard listener_lock(listener_mu_);
      listener_ = std::move(listener);
      delivered_version_ = std::numeric_limits<uint64_t>::max();  // force one delivery
      delivered_state_ = -1;
    }
    deliver_backpressure();
  }

  // ---- windows, waits, shutdown -----------------------------------------------------------

  PoolWindow take_window() {
    PoolWindow window;
    {
      std::lock_guard lock(mu_);
      const double now = clock_.now();
      integrate_busy_locked(now);
      window.seconds = std::max(0.0, now - window_start_);
      window.busy_mean = window.seconds > 0.0 ? busy_seconds_ / window.seconds
                                              : busy_.load(std::memory_order_relaxed);
      busy_seconds_ = 0.0;
      window_start_ = now;
    }
    std::array<uint64_t, kBuckets> counts{};
    window.latency_histogram.resize(kBuckets);
    for (int i = 0; i < kBuckets; ++i) {
      counts[i] = latency_[i].exchange(0, std::memory_order_relaxed);
      window.latency_histogram[i] = counts[i];
      window.completed += counts[i];
    }
    window.latency_sum =
        1e-9 * static_cast<double>(latency_sum_ns_.exchange(0, std::memory_order_relaxed));
    window.failed = window_failed_.exchange(0, std::memory_order_relaxed);
    window.latency_p50 = LatencyBuckets::quantile(counts, window.completed, 0.50);
    window.latency_p99 = LatencyBuckets::quantile(counts, window.completed, 0.99);
    return window;
  }

  // No task queued or running, every retired thread gone (a thread still starting counts as
  // not gone) and every other thread in its loop. Requires mu_.
  bool idle_locked() const {
    if (!queue_.empty() || busy_.load(std::memory_order_relaxed) != 0) return false;
    return std::all_of(workers_.begin(), workers_.end(),
                       [](const auto& w) { return w->exited || (w->entered && !w->retire); });
  }

  void wait_idle() {
    std::unique_lock lock(mu_);
    ++state_waiters_;
    state_cv_.wait(lock, [this] { return idle_locked(); });
    --state_waiters_;
  }

  std::size_t shutdown(double timeout_seconds) {
    {
      std::lock_guard resize_lock(resize_mu_);  // waits for a resize in progress
      std::lock_guard lock(mu_);
      if (shutdown_started_) return 0;
      shutdown_started_ = true;
      accepting_ = false;
      stopping_ = true;  // workers leave once the queue is empty
      work_cv_.notify_all();
    }
    // From here on resize() returns at once, so this thread alone owns workers_' threads.

    std::deque<Task> unrun;
    bool flipped = false;
    std::vector<std::unique_ptr<Worker>> workers;
    {
      std::unique_lock lock(mu_);
      ++state_waiters_;
      auto drained = [this] { return queue_.empty(); };
      // The drain bound is real time on purpose: it limits how long shutdown blocks a
      // process, and a ManualClock would never let it expire.
      if (std::isnan(timeout_seconds) || timeout_seconds <= 0.0) {
        // run nothing more
      } else if (timeout_seconds > 1e9) {
        state_cv_.wait(lock, drained);
      } else {
        state_cv_.wait_for(lock, std::chrono::duration<double>(timeout_seconds), drained);
      }
      --state_waiters_;
      unrun.swap(queue_);
      if (backpressure_.load(std::memory_order_relaxed)) {
        set_backpressure_locked(false);
        flipped = true;
      }
      depth_.store(0, std::memory_order_release);  // see run_one()
      workers.swap(workers_);
      set_active_locked(0);
      work_cv_.notify_all();
    }
    const std::size_t unrun_count = unrun.size();
    unrun.clear();  // outside the lock: a task's captures may call the pool
    if (flipped) deliver_backpressure();
    for (auto& w : workers) w->thread.join();  // in-hand tasks finish first
    return unrun_count;
  }

  // ---- state ------------------------------------------------------------------------------

  const WorkerPoolOptions options_;
  const Clock& clock_;
  const ThreadStarter starter_;
  const std::size_t high_depth_;  // backpressure on at depth >= this
  const std::size_t low_depth_;   // backpressure off at depth <= this

  // resize_mu_ serializes whoever changes the set of threads: resize() (starting threads,
  // joining exited ones) and the start of shutdown(). It is never held while waiting for a
  // task, so a task may call resize(). Taken before mu_, never the other way round.
  std::mutex resize_mu_;

  // mu_ guards the queue, the roster and the window integrals below, plus each Worker's flags.
  mutable std::mutex mu_;
  std::deque<Task> queue_;                        // FIFO of tasks not yet taken
  std::vector<std::unique_ptr<Worker>> workers_;  // every started thread not yet joined
  bool accepting_ = true;                         // false once shutdown() started
  bool stopping_ = false;                         // workers exit when the queue is empty
  bool shutdown_started_ = false;                 // resize() does nothing any more
  uint64_t backpressure_version_ = 0;             // bumped at each flip, for the listener
  int waiting_ = 0;                               // workers blocked in work_cv_
  int state_waiters_ = 0;                         // threads blocked in state_cv_
  std::string last_error_;
  std::string first_task_failure_;    // what the first task that threw said ("" if none yet)
  double window_start_ = 0.0;         // clock time the window began
  double busy_since_ = 0.0;           // busy_seconds_ integrated up to here
  double busy_seconds_ = 0.0;         // integral of busy_ over the window
  std::condition_variable work_cv_;   // workers wait here for a task or their stop flag
  std::condition_variable state_cv_;  // wait_idle() and shutdown() wait here

  // Atomics written only under mu_ (so they agree with the queue and roster) but atomic so
  // that size(), busy(), queue_depth(), backpressure() and live_threads() read them without
  // the lock from any thread (control loop, metrics scrape, a poll loop).
  std::atomic<int> active_{0};  // workers not asked to retire: size()
  // Tasks that threw. Atomic: bumped by workers outside mu_, read by task_failure() callers.
  std::atomic<uint64_t> task_failures_{0};
  std::atomic<int> busy_{0};           // workers running a task
  std::atomic<int> live_threads_{0};   // threads inside their loop, retiring or not
  std::atomic<std::size_t> depth_{0};  // queue_.size(); stored with release after
                                       // backpressure_, so the two read consistently
  std::atomic<bool> backpressure_{false};

  // Counters written by workers outside any lock (one relaxed add per task keeps recording
  // O(1) and off the queue lock) and read or swapped by any thread.
  std::atomic<uint64_t> completed_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> window_failed_{0};
  std::array<std::atomic<uint64_t>, kBuckets> latency_{};  // task run-time histogram
  std::atomic<uint64_t> latency_sum_ns_{0};                // and the sum of those run times

  // listener_mu_ guards the listener and what it was last told; recursive so that a listener
  // may submit tasks (which can flip backpressure and deliver again on the same thread).
  std::recursive_mutex listener_mu_;
  std::function<void(bool)> listener_;
  uint64_t delivered_version_ = 0;  // backpressure_version_ last looked at
  int delivered_state_ = -1;        // last state passed to the listener; -1: none yet
};

WorkerPool::WorkerPool(WorkerPoolOptions options, const Clock& clock, ThreadStarter starter)
    : impl_(std::make_unique<Impl>(options, clock, std::move(starter))) {
  // One thread at a time, so a failure keeps the ones that started (reported in last_error()).
  const int wanted = impl_->options_.initial_workers;
  for (int n = 1; n <= wanted; ++n) {
    if (impl_->resize(n) != n) break;
  }
  if (size() == 0) {
    const std::string error = last_error();
    throw std::runtime_error("WorkerPool: could not start any worker thread: " + error);
  }
}

WorkerPool::~WorkerPool() {
  shutdown(std::numeric_limits<double>::infinity());
}

bool WorkerPool::try_submit(Task task, QueuePlace place) {
  return impl_->try_submit(task, place);
}
int WorkerPool::resize(int workers) {
  return impl_->resize(workers);
}
int WorkerPool::size() const {
  return impl_->active_.load(std::memory_order_relaxed);
}
int WorkerPool::busy() const {
  return impl_->busy_.load(std::memory_order_relaxed);
}
std::size_t WorkerPool::queue_depth() const {
  return impl_->depth_.load(std::memory_order_acquire);
}
std::size_t WorkerPool::queue_capacity() const {
  return impl_->options_.queue_capacity;
}
bool WorkerPool::backpressure() const {
  return impl_->backpressure_.load(std::memory_order_relaxed);
}
std::string WorkerPool::task_failure() const {
  if (impl_->task_failures_.load(std::memory_order_acquire) == 0) return "";
  std::lock_guard lock(impl_->mu_);
  return impl_->first_task_failure_;
}
uint64_t WorkerPool::task_failures() const {
  return impl_->task_failures_.load(std::memory_order_relaxed);
}
std::string WorkerPool::last_error() const {
  std::lock_guard lock(impl_->mu_);
  return impl_->last_error_;
}
PoolWindow WorkerPool::take_window() {
  return impl_->take_window();
}
std::size_t WorkerPool::shutdown(double timeout_seconds) {
  return impl_->shutdown(timeout_seconds);
}
uint64_t WorkerPool::completed() const {
  return impl_->completed_.load(std::memory_order_relaxed);
}
uint64_t WorkerPool::failed() const {
  return impl_->failed_.load(std::memory_order_relaxed);
}
int WorkerPool::live_threads() const {
  return impl_->live_threads_.load(std::memory_order_relaxed);
}
void WorkerPool::set_backpressure_listener(std::function<void(bool)> listener) {
  impl_->set_backpressure_listener(std::move(listener));
}
void WorkerPool::wait_idle() {
  impl_->wait_idle();
}
void WorkerPool::record_items(std::span<const double> item_seconds, std::size_t failed_items) {
  impl_->record_items(item_seconds, failed_items);
}
double WorkerPool::latency_bucket_midpoint(double seconds) {
  return LatencyBuckets::midpoint(LatencyBuckets::index(seconds));
}

double WorkerPool::latency_histogram_upper_bound(std::size_t bucket) {
  if (bucket >= static_cast<std::size_t>(kBuckets - 1)) return HUGE_VAL;
  return LatencyBuckets::upper_bound(static_cast<int>(bucket));
}

}  // namespace lagpilot
