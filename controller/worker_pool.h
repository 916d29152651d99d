#pragma once
// A dynamic pool of worker threads fed by one bounded FIFO queue.
//
// resize(n) changes a target under the lock. Growing starts threads at once; if a thread cannot
// be started the pool rolls back to its old size and reports the failure. Shrinking asks the
// surplus workers to retire: a worker checks the target only between tasks, so the task in hand
// always finishes; retired threads are joined outside the lock. A task is run exactly once.
//
// The queue is bounded (queue_capacity). Backpressure uses two watermarks with hysteresis:
// it turns on when depth >= high_watermark * capacity and off again only when depth
// <= low_watermark * capacity.
//
// Thread-safety: every public method may be called from any thread, including from inside a
// task (except shutdown(), which must not be called from a worker).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "policies/clock.h"

namespace lagpilot {

struct WorkerPoolOptions {
  int initial_workers = 4;
  int max_workers = 64;          // hard maximum for resize()
  std::size_t queue_capacity = 10000;
  double high_watermark = 0.8;   // fraction of capacity
  double low_watermark = 0.2;
};

// Statistics of one tick window, returned and reset by WorkerPool::take_window().
struct PoolWindow {
  double seconds = 0.0;          // window length
  uint64_t completed = 0;        // tasks finished in the window
  double latency_p50 = 0.0;      // task run time, seconds
  double latency_p99 = 0.0;
  double busy_mean = 0.0;        // mean busy workers over the window
};

class WorkerPool {
 public:
  using Task = std::function<void()>;
  // Test seam: starts a worker thread. The default uses std::thread; a test can throw.
  using ThreadStarter = std::function<std::thread(std::function<void()>)>;

  WorkerPool(WorkerPoolOptions options, const Clock& clock, ThreadStarter starter = {});
  ~WorkerPool();  // shutdown(infinite) if not done yet

  // Enqueues a task; false (task not taken) when the queue is full or the pool is shut down.
  bool try_submit(Task task);
  // Sets the target size, clamped to [1, max_workers]. Returns the size in effect afterwards
  // (the old size if a thread could not be started; see last_error()).
  int resize(int workers);

  int size() const;            // live worker threads not asked to retire
  int busy() const;            // workers running a task now
  std::size_t queue_depth() const;
  std::size_t queue_capacity() const;
  bool backpressure() const;   // watermark state
  std::string last_error() const;
  PoolWindow take_window();

  // Stops accepting tasks, lets workers finish the queue for at most `timeout_seconds`, then
  // joins them. Returns the number of queued tasks that were not run (each is counted).
  std::size_t shutdown(double timeout_seconds);

 private:
  // (implementation detail; see worker_pool.cpp)
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lagpilot
