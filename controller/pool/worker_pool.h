#pragma once
// A dynamic pool of worker threads fed by one bounded FIFO queue.
//
// Algorithm. One mutex guards the queue and the roster of workers. resize(n) changes the
// target under that lock. Growing first takes back workers that were asked to
// retire but have not exited yet, then starts the missing threads through the ThreadStarter
// seam; if a thread cannot be started the pool rolls back to its old size, last_error() says
// why, and resize() returns the old size. Shrinking sets a stop flag on the surplus workers,
// idle ones first, and wakes every waiting worker (notify_all), so idle workers exit at once.
// A worker reads its stop flag only between tasks, so the task in hand always finishes. Exited
// threads are joined later, outside the lock, by the next resize() or by shutdown(). A task is
// taken out of the queue exactly once, under the lock, so it runs exactly once.
//
// The queue is bounded (queue_capacity). Backpressure uses two watermarks with hysteresis:
// it turns on when depth >= ceil(high_watermark * capacity) and off again only when depth
// <= floor(low_watermark * capacity).
//
// Measurements use the injected Clock only: each task's run time goes into a histogram of
// fixed log-spaced buckets (8 per octave from 1 us; atomic counters, O(1) per task), and the
// busy-worker count is integrated over time for the window's mean. take_window() returns and
// resets both. A task that runs a batch of items (many messages) reports each item's run time
// with record_items() instead; the pool then records the items, not the task, so latency
// percentiles and completed counts stay per item while busy accounting stays per worker.
//
// Thread-safety: every public method may be called from any thread, including from inside a
// task, except shutdown() and wait_idle(), which must not be called from a worker (they wait
// for the workers). The destructor calls shutdown().

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "policies/clock.h"

namespace lagpilot {

struct WorkerPoolOptions {
  int initial_workers = 4;             // clamped to [1, max_workers]
  int max_workers = 64;                // hard maximum for resize(); >= 1
  std::size_t queue_capacity = 10000;  // >= 1
  double high_watermark = 0.8;         // fraction of capacity; 0 <= low < high <= 1
  double low_watermark = 0.2;
};

// Statistics of one tick window, returned and reset by WorkerPool::take_window().
struct PoolWindow {
  double seconds = 0.0;      // window length
  uint64_t completed = 0;    // tasks (or record_items() items) finished in the window
  double latency_p50 = 0.0;  // task run time, seconds (midpoint of the histogram bucket: within
                             // 0.8 % of the measured nearest-rank quantile)
  double latency_p99 = 0.0;
  double busy_mean = 0.0;  // mean busy workers over the window
  uint64_t failed = 0;     // tasks in the window that threw (also counted in completed)
  // The window's run-time histogram: latency_histogram[i] tasks (or items) ran for at most
  // WorkerPool::latency_histogram_upper_bound(i) seconds and more than bound(i - 1). Sums to
  // `completed`. For exporters (the Prometheus histogram).
  std::vector<uint64_t> latency_histogram;
  double latency_sum = 0.0;  // seconds: total run time of the window's tasks (or items)
};

// Where try_submit() puts a task in the queue.
enum class QueuePlace { kBack, kFront };

class WorkerPool {
 public:
  using Task = std::function<void()>;
  // Test seam: starts a worker thread running the given function. The default uses
  // std::thread. It may throw (the pool rolls back); a starter that throws must not have
  // started the thread, and one that returns must return a joinable thread running it.
  using ThreadStarter = std::function<std::thread(std::function<void()>)>;

  // Throws std::invalid_argument naming the bad option, or std::runtime_error if not even one
  // worker thread could be started (if only some could, the pool keeps them; see last_error()).
  WorkerPool(WorkerPoolOptions options, const Clock& clock, ThreadStarter starter = {});
  ~WorkerPool();  // shutdown(infinite) if not done yet

  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Enqueues a task at the back of the queue, or at its front with QueuePlace::kFront: for
  // the rest of work that a worker took earlier and cut short (a run that used up its time
  // budget), which then goes ahead of everything queued after it, so the queue stays first in,
  // first out by when the work arrived. False (task not taken, and destroyed: pass a copy to
  // retry) when the queue is full or the pool is shut down. Throws std::invalid_argument for
  // an empty task.
  bool try_submit(Task task, QueuePlace place = QueuePlace::kBack);
  // Sets the target size, clamped to [1, max_workers]. Returns the size in effect afterwards
  // (the old size if a thread could not be started; see last_error()). Never waits for a task.
  // After shutdown() it does nothing and returns 0.
  int resize(int workers);

  int size() const;  // live worker threads not asked to retire (0 after shutdown)
  int busy() const;  // workers running a task now
  std::size_t queue_depth() const;
  std::size_t queue_capacity() const;
  bool backpressure() const;       // watermark state
  std::string last_error() const;  // why the last thread start failed; "" if none yet
  // Statistics since the previous call (or construction), then starts a new window. A task
  // counts in the window in which it finished. For an empty window busy_mean is busy().
  PoolWindow take_window();

  // Stops accepting tasks, lets workers finish the queue for at most `timeout_seconds` (real
  // time: a wait, not a measurement; <= 0 runs no queued task, +inf drains all), then joins
  // them; tasks in hand are never interrupted. Returns the number of queued tasks that were not
  // run (they are destroyed). Only the first call does this; later calls return 0.
  std::size_t shutdown(double timeout_seconds);

  // --- Additions beyond the first agreed interface ---

  // Tasks finished since construction (including those that threw); a task that reported items
  // through record_items() counts as its items instead.
  uint64_t completed() const;
  // Tasks that threw since construction (the worker lives on), plus failed_items reported.
  uint64_t failed() const;
  // Tasks that let an exception escape (any thread), and what the first one said ("" while
  // none did). Counted in failed() too. Such a task is a bug of whoever submitted it.
  uint64_t task_failures() const;
  std::string task_failure() const;
  // Worker threads running now, including retired ones that have not exited yet.
  int live_threads() const;
  // Called with the new state each time backpressure() flips, from the thread that flipped it
  // (a submitter, a worker, or shutdown), never under the pool's queue lock, in order; flips
  // that happen while a call is in progress may be coalesced, but the last call always carries
  // the final state. Called once at installation with the current state. It may call any pool
  // method except shutdown(), wait_idle() and set_backpressure_listener() (it must not wait
  // for the workers: a worker that flips the state waits for the listener). Pass {} to remove.
  void set_backpressure_listener(std::function<void(bool)> listener);
  // Blocks until the queue is empty, no task runs, and every retired worker has exited.
  // For tests and benchmarks; must not be called from a task.
  void wait_idle();
  // For a task that runs a batch of items: records one run time per item (seconds) in the
  // latency histogram, counts the items in completed() and the window's completed, and
  // `failed_items` of them in failed(). Called from inside a task of this pool (on the worker
  // running it; any number of times), the task itself is then not recorded (unless it throws).
  // Called from any other thread, it only records the items. O(items), no lock.
  void record_items(std::span<const double> item_seconds, std::size_t failed_items = 0);
  // The value take_window() reports as p50/p99 for a task that ran `seconds`: the midpoint of
  // its histogram bucket (64 log-linear buckets per octave from 0.95 us to 68 minutes; shorter
  // times report the first bucket's midpoint, longer ones the last's).
  static double latency_bucket_midpoint(double seconds);
  // Upper bound, seconds, of PoolWindow::latency_histogram's bucket i (the last one is open:
  // +infinity).
  static double latency_histogram_upper_bound(std::size_t bucket);

 private:
  struct Impl;  // see worker_pool.cpp
  std::unique_ptr<Impl> impl_;
};

}  // namespace lagpilot
