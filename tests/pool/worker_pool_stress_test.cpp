// Stress: 10,000 random resizes from two threads (plus 100 from inside tasks) while 1,000,000
// tasks run. Every task must run exactly once, and the final counts must be exact.
//
// Pacing, so that the resizes really happen while tasks are queued and running: the first
// 990,000 submissions are cut into 10,000 steps; resize g (thread g % 2) waits until step g has
// been submitted, and the submitter does not run more than kSlack steps ahead of the resizes.
// The last 10,000 tasks are submitted only after every resize has returned.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "controller/pool/worker_pool.h"
#include "controller/steady_clock.h"
#include "policies/clock.h"

namespace lagpilot {
namespace {

constexpr int kTasks = 1'000'000;
constexpr int kResizers = 2;
constexpr int kResizes = 10'000;                    // in all, from kResizers threads
constexpr int kTail = 10'000;                       // tasks submitted after the last resize
constexpr int kStep = (kTasks - kTail) / kResizes;  // 99 submissions per step
constexpr int kSlack = 64;                          // steps the submitter may run ahead
constexpr int kMaxWorkers = 8;
constexpr int kResizeFromTaskEvery = 10'000;  // 100 more resizes from inside tasks

// How often each task ran (every one must run exactly once) and the sum of the indices that ran.
struct TaskTally {
  std::unique_ptr<std::atomic<uint8_t>[]> runs { new std::atomic<uint8_t>[ kTasks ]() };
  std::atomic<uint64_t> index_sum{0};
  WorkerPool* pool = nullptr;
};

// A little CPU work (register-only, so it costs the same under ThreadSanitizer), so that the
// workers, not the submitter, are the bottleneck and tasks are queued and running during the
// resizes.
constexpr int kWorkRounds = 200;
void simulate_work(int rounds) {
  uint64_t x = 88172645463325252ull;
  for (int k = 0; k < rounds; ++k) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    asm volatile("" : "+r"(x));  // keep the loop
  }
}

// Blocks until `value` >= `at_least` (C++20 atomic wait: no spinning, no sleeping).
void wait_for_at_least(const std::atomic<int>& value, int at_least) {
  for (int seen = value.load(); seen < at_least; seen = value.load()) value.wait(seen);
}

TEST(WorkerPoolStress, RandomResizesWhileAMillionTasksRun) {
  SteadyClock clock;
  WorkerPoolOptions options;
  options.initial_workers = 4;
  options.max_workers = kMaxWorkers;
  options.queue_capacity = 4096;
  std::atomic<int> thread_starts{0};  // shows that the resizes really started threads
  auto counting_starter = [&thread_starts](std::function<void()> body) {
    thread_starts.fetch_add(1, std::memory_order_relaxed);
    return std::thread(std::move(body));
  };
  WorkerPool pool(options, clock, counting_starter);
  TaskTally ledger;
  ledger.pool = &pool;

  std::atomic<int> steps_submitted{0};
  std::atomic<int> resizes_done{0};
  std::atomic<int> resize_mismatches{0};
  std::atomic<int> resizes_with_tasks_in_flight{0};
  uint64_t completed_at_last_resize[kResizers] = {};
  std::vector<std::thread> resizers;
  for (int r = 0; r < kResizers; ++r) {
    resizers.emplace_back([&, r] {
      std::mt19937 rng(20240601 + r);
      std::uniform_int_distribution<int> size_dist(1, kMaxWorkers);
      for (int g = r; g < kResizes; g += kResizers) {
        wait_for_at_least(steps_submitted, g);
        if (pool.queue_depth() > 0 || pool.busy() > 0) resizes_with_tasks_in_flight++;
        const int n = size_dist(rng);
        if (pool.resize(n) != n) resize_mismatches++;
        // Read before the resize is published: the last tasks are submitted only once every
        // resize is counted, so a read after it could see all of them done.
        completed_at_last_resize[r] = pool.completed();
        resizes_done.fetch_add(1);
        resizes_done.notify_all();
      }
    });
  }

  TaskTally* l = &ledger;  // the task captures two words, so std::function stores it inline
  for (int i = 0; i < kTasks; ++i) {
    if (i % kStep == 0) {
      const int step = i / kStep;
      if (step <= kResizes) {
        steps_submitted.store(step);
        steps_submitted.notify_all();
        wait_for_at_least(resizes_done, step < kResizes ? step - kSlack : kResizes);
      }
    }
    auto task = [l, i] {
      simulate_work(kWorkRounds);
      l->runs[i].fetch_add(1, std::memory_order_relaxed);
      l->index_sum.fetch_add(static_cast<uint64_t>(i), std::memory_order_relaxed);
      if (i % kResizeFromTaskEvery == 0) l->pool->resize(1 + (i / kResizeFromTaskEvery) % 8);
    };
    while (!pool.try_submit(task)) std::this_thread::yield();
  }
  for (auto& t : resizers) t.join();
  pool.wait_idle();
  std::printf(
      "thread starts: %d; resizes with tasks queued or running: %d of %d; tasks completed at "
      "the last resize of each thread: %llu, %llu\n",
      thread_starts.load(), resizes_with_tasks_in_flight.load(), kResizes,
      static_cast<unsigned long long>(completed_at_last_resize[0]),
      static_cast<unsigned long long>(completed_at_last_resize[1]));

  EXPECT_EQ(resizes_done.load(), kResizes);
  EXPECT_EQ(resize_mismatches.load(), 0);
  EXPECT_TRUE(pool.last_error().empty()) << pool.last_error();
  EXPECT_GT(thread_starts.load(), 100) << "the resizes should have started and retired threads";
  for (uint64_t completed : completed_at_last_resize) EXPECT_LT(completed, uint64_t{kTasks});

  int not_once = 0;
  for (int i = 0; i < kTasks; ++i) {
    const int runs = ledger.runs[i].load();
    if (runs != 1 && ++not_once <= 10) ADD_FAILURE() << "task " << i << " ran " << runs << " times";
  }
  EXPECT_EQ(not_once, 0);
  EXPECT_EQ(ledger.index_sum.load(), static_cast<uint64_t>(kTasks) * (kTasks - 1) / 2);
  EXPECT_EQ(pool.completed(), static_cast<uint64_t>(kTasks));
  EXPECT_EQ(pool.failed(), 0u);
  EXPECT_EQ(pool.queue_depth(), 0u);
  EXPECT_EQ(pool.busy(), 0);
  EXPECT_EQ(pool.take_window().completed, static_cast<uint64_t>(kTasks));

  // The pool still resizes exactly, and every surplus thread leaves.
  EXPECT_EQ(pool.resize(3), 3);
  pool.wait_idle();
  EXPECT_EQ(pool.size(), 3);
  EXPECT_EQ(pool.live_threads(), 3);
  EXPECT_EQ(pool.shutdown(60.0), 0u);
  EXPECT_EQ(pool.live_threads(), 0);
}

}  // namespace
}  // namespace lagpilot
