// Unit tests of the dynamic worker pool: resizing (grow, shrink with tasks in hand, take-back,
// clamping, thread start failure), watermarks, the latency/busy window on a ManualClock, task
// exceptions and shutdown. Waits are on conditions (latches, wait_idle), never on sleeps; the
// only real-time wait is shutdown()'s own drain timeout, which is real time by design.

#include "controller/pool/worker_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <latch>
#include <mutex>
#include <random>
#include <semaphore>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include "controller/steady_clock.h"
#include "policies/clock.h"
#include "tests/common/wait.h"

namespace lagpilot {
namespace {

using ::testing::HasSubstr;

WorkerPoolOptions options(int initial, int max, std::size_t capacity = 1000) {
  WorkerPoolOptions o;
  o.initial_workers = initial;
  o.max_workers = max;
  o.queue_capacity = capacity;
  return o;
}

TEST(WorkerPool, RunsEveryTaskOnce) {
  SteadyClock clock;
  WorkerPool pool(options(4, 8), clock);
  EXPECT_EQ(pool.size(), 4);
  std::vector<std::atomic<int>> runs(500);
  for (int i = 0; i < 500; ++i) ASSERT_TRUE(pool.try_submit([&runs, i] { runs[i]++; }));
  pool.wait_idle();
  for (int i = 0; i < 500; ++i) EXPECT_EQ(runs[i].load(), 1) << "task " << i;
  EXPECT_EQ(pool.completed(), 500u);
  EXPECT_EQ(pool.failed(), 0u);
  EXPECT_EQ(pool.queue_depth(), 0u);
  EXPECT_EQ(pool.busy(), 0);
  EXPECT_EQ(pool.live_threads(), 4);
}

TEST(WorkerPool, AFrontTaskRunsBeforeEverythingQueued) {
  SteadyClock clock;
  WorkerPool pool(options(1, 1), clock);
  std::mutex mu;  // guards order, and holds the one worker in its first task
  std::vector<int> order;
  std::unique_lock<std::mutex> hold(mu);
  ASSERT_TRUE(pool.try_submit([&] { std::lock_guard<std::mutex> lock(mu); }));
  ASSERT_TRUE(testing::wait_until([&] { return pool.busy() == 1; }, 10));
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(pool.try_submit([&, i] { order.push_back(i); }));
  }
  ASSERT_TRUE(pool.try_submit([&] { order.push_back(0); }, QueuePlace::kFront));
  hold.unlock();
  pool.wait_idle();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(WorkerPool, ResizeClampsToOneAndMax) {
  SteadyClock clock;
  WorkerPool pool(options(2, 5), clock);
  EXPECT_EQ(pool.resize(0), 1);
  EXPECT_EQ(pool.size(), 1);
  EXPECT_EQ(pool.resize(-7), 1);
  EXPECT_EQ(pool.resize(100), 5);
  EXPECT_EQ(pool.size(), 5);
  pool.wait_idle();
  EXPECT_EQ(pool.live_threads(), 5);
  EXPECT_EQ(pool.resize(3), 3);
  pool.wait_idle();  // also waits for the two retired idle workers to exit
  EXPECT_EQ(pool.live_threads(), 3);
  EXPECT_TRUE(pool.last_error().empty());
}

TEST(WorkerPool, InitialWorkersClampedAndBadOptionsNamed) {
  SteadyClock clock;
  {
    WorkerPool pool(options(99, 3), clock);
    EXPECT_EQ(pool.size(), 3);
  }
  {
    WorkerPool pool(options(0, 3), clock);
    EXPECT_EQ(pool.size(), 1);
  }
  auto message_of = [&clock](WorkerPoolOptions o) -> std::string {
    try {
      WorkerPool pool(o, clock);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no exception";
  };
  EXPECT_THAT(message_of(options(1, 0)), HasSubstr("max_workers"));
  EXPECT_THAT(message_of(options(1, 4, 0)), HasSubstr("queue_capacity"));
  WorkerPoolOptions o = options(1, 4);
  o.high_watermark = 1.5;
  EXPECT_THAT(message_of(o), HasSubstr("high_watermark"));
  o.high_watermark = 0.5;
  o.low_watermark = 0.5;
  EXPECT_THAT(message_of(o), HasSubstr("low_watermark"));
}

TEST(WorkerPool, EmptyTaskIsRejected) {
  SteadyClock clock;
  WorkerPool pool(options(1, 1), clock);
  EXPECT_THROW(pool.try_submit(WorkerPool::Task{}), std::invalid_argument);
}

// Shrinking while every worker holds a task: the tasks in hand finish, the retiring workers
// take nothing new, size() is the target at once and the thread count reaches it.
TEST(WorkerPool, ShrinkFinishesTasksInHand) {
  SteadyClock clock;
  WorkerPool pool(options(4, 8), clock);
  std::latch started(4);
  std::latch release(1);
  std::atomic<int> finished{0};
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(pool.try_submit([&] {
      started.count_down();
      release.wait();
      finished++;
    }));
  }
  started.wait();
  // The queued tasks wait at a second gate, so a retiring worker that wrongly took one would
  // still be alive (and busy) below.
  std::latch second_gate(1);
  std::mutex ids_mu;
  std::set<std::thread::id> later_ids;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(pool.try_submit([&] {
      {
        std::lock_guard lock(ids_mu);
        later_ids.insert(std::this_thread::get_id());
      }
      second_gate.wait();
    }));
  }

  EXPECT_EQ(pool.resize(1), 1);
  EXPECT_EQ(pool.size(), 1);
  EXPECT_EQ(pool.busy(), 4);          // nothing was interrupted
  EXPECT_EQ(pool.live_threads(), 4);  // retiring, but still in their tasks
  EXPECT_EQ(finished.load(), 0);
  EXPECT_EQ(pool.queue_depth(), 20u);

  release.count_down();
  // The three retired workers finish their task and leave; the one left takes a queued task.
  EXPECT_TRUE(testing::wait_until([&] { return pool.live_threads() == 1; }, 10.0));
  EXPECT_TRUE(testing::wait_until([&] { return pool.queue_depth() == 19; }, 10.0));
  EXPECT_EQ(pool.busy(), 1);
  EXPECT_EQ(finished.load(), 4);

  second_gate.count_down();
  pool.wait_idle();
  EXPECT_EQ(pool.completed(), 24u);
  EXPECT_EQ(pool.size(), 1);
  EXPECT_EQ(pool.live_threads(), 1);
  EXPECT_EQ(later_ids.size(), 1u) << "retired workers must not take queued tasks";
}

// Growing right after a shrink takes back the workers still finishing their task instead of
// starting new threads.
TEST(WorkerPool, GrowTakesBackRetiringWorkers) {
  SteadyClock clock;
  std::atomic<int> starts{0};
  auto starter = [&starts](std::function<void()> body) {
    starts++;
    return std::thread(std::move(body));
  };
  WorkerPool pool(options(4, 8), clock, starter);
  ASSERT_EQ(starts.load(), 4);
  std::latch started(4);
  std::latch release(1);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(pool.try_submit([&] {
      started.count_down();
      release.wait();
    }));
  }
  started.wait();
  EXPECT_EQ(pool.resize(1), 1);
  EXPECT_EQ(pool.resize(6), 6);
  EXPECT_EQ(starts.load(), 6) << "3 taken back, 2 started";
  release.count_down();
  pool.wait_idle();
  EXPECT_EQ(pool.size(), 6);
  EXPECT_EQ(pool.live_threads(), 6);
}

// A shrink on an idle pool: retired idle workers wake and leave at once.
TEST(WorkerPool, ShrinkIdlePoolRetiresAtOnce) {
  SteadyClock clock;
  WorkerPool pool(options(8, 8), clock);
  pool.wait_idle();
  ASSERT_EQ(pool.live_threads(), 8);
  EXPECT_EQ(pool.resize(2), 2);
  ASSERT_TRUE(testing::wait_until([&] { return pool.live_threads() == 2; }, 30.0));
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(pool.try_submit([&] { ran++; }));
  pool.wait_idle();
  EXPECT_EQ(ran.load(), 100);
}

TEST(WorkerPool, ResizeFromInsideATask) {
  SteadyClock clock;
  WorkerPool pool(options(2, 6), clock);
  std::atomic<int> ran{0};
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(pool.try_submit([&pool, &ran, i] {
      pool.resize(1 + i % 6);
      if (i % 10 == 0) pool.try_submit([&ran] { ran++; });
      ran++;
    }));
  }
  pool.wait_idle();
  EXPECT_EQ(ran.load(), 220);
  EXPECT_EQ(pool.completed(), 220u);
}

// Capacity 10: high watermark 0.8 -> on at depth 8; low 0.2 -> off at depth 2.
TEST(WorkerPool, WatermarksHaveHysteresis) {
  SteadyClock clock;
  WorkerPool pool(options(1, 1, 10), clock);
  std::mutex flips_mu;
  std::vector<bool> flips;
  pool.set_backpressure_listener([&](bool on) {
    std::lock_guard lock(flips_mu);
    flips.push_back(on);
  });
  auto flips_now = [&] {
    std::lock_guard lock(flips_mu);
    return flips;
  };
  EXPECT_EQ(flips_now(), std::vector<bool>({false}));  // told the state on installation
  EXPECT_EQ(pool.queue_capacity(), 10u);

  // Every task waits for one permit, so the queue drains one task per release.
  std::counting_semaphore<> permits(0);
  auto gated = [&permits] { permits.acquire(); };
  ASSERT_TRUE(pool.try_submit(gated));
  ASSERT_TRUE(testing::wait_until([&] { return pool.busy() == 1; }, 30.0));  // in hand, queue empty

  for (int depth = 1; depth <= 7; ++depth) {
    ASSERT_TRUE(pool.try_submit(gated));
    EXPECT_EQ(pool.queue_depth(), static_cast<std::size_t>(depth));
    EXPECT_FALSE(pool.backpressure()) << "depth " << depth;
  }
  ASSERT_TRUE(pool.try_submit(gated));  // depth 8: crosses high
  EXPECT_TRUE(pool.backpressure());
  ASSERT_TRUE(pool.try_submit(gated));
  ASSERT_TRUE(pool.try_submit(gated));  // depth 10: full
  EXPECT_EQ(pool.queue_depth(), 10u);
  EXPECT_FALSE(pool.try_submit(gated));
  EXPECT_FALSE(pool.try_submit(gated));
  EXPECT_EQ(pool.queue_depth(), 10u);
  EXPECT_EQ(flips_now(), std::vector<bool>({false, true}));

  // Drain one at a time: stays on down to depth 3, clears at 2.
  for (int depth = 9; depth >= 2; --depth) {
    permits.release();
    ASSERT_TRUE(testing::wait_until(
        [&] { return pool.queue_depth() == static_cast<std::size_t>(depth); }, 30.0));
    EXPECT_EQ(pool.backpressure(), depth > 2) << "depth " << depth;
  }
  // The worker that crossed the low watermark tells the listener right after.
  ASSERT_TRUE(testing::wait_until([&] { return flips_now().size() == 3; }, 30.0));
  EXPECT_EQ(flips_now(), std::vector<bool>({false, true, false}));

  // Refill: stays off below 8, on again at 8.
  for (int depth = 3; depth <= 7; ++depth) {
    ASSERT_TRUE(pool.try_submit(gated));
    EXPECT_FALSE(pool.backpressure()) << "depth " << depth;
  }
  ASSERT_TRUE(pool.try_submit(gated));
  EXPECT_TRUE(pool.backpressure());
  EXPECT_EQ(flips_now(), std::vector<bool>({false, true, false, true}));

  permits.release(100);
  pool.wait_idle();
  EXPECT_FALSE(pool.backpressure());
  EXPECT_EQ(pool.completed(), 1u + 10u + 6u);
  EXPECT_EQ(flips_now(), std::vector<bool>({false, true, false, true, false}));
}

// Default options: capacity 10000, on at 8000, off at 2000.
TEST(WorkerPool, DefaultWatermarksAre80And20Percent) {
  SteadyClock clock;
  WorkerPoolOptions o;
  o.initial_workers = 1;
  WorkerPool pool(o, clock);
  ASSERT_EQ(pool.queue_capacity(), 10000u);
  std::counting_semaphore<> permits(0);
  auto gated = [&permits] { permits.acquire(); };
  ASSERT_TRUE(pool.try_submit(gated));
  ASSERT_TRUE(testing::wait_until([&] { return pool.busy() == 1; }, 30.0));
  for (int i = 0; i < 7999; ++i) ASSERT_TRUE(pool.try_submit(gated));
  EXPECT_FALSE(pool.backpressure());
  ASSERT_TRUE(pool.try_submit(gated));
  EXPECT_TRUE(pool.backpressure());
  permits.release(5999);  // the in-hand task and 5998 more finish; depth 2001
  ASSERT_TRUE(testing::wait_until([&] { return pool.queue_depth() == 2001; }, 30.0));
  EXPECT_TRUE(pool.backpressure());
  permits.release();
  ASSERT_TRUE(testing::wait_until([&] { return pool.queue_depth() == 2000; }, 30.0));
  EXPECT_FALSE(pool.backpressure());
  permits.release(2001);
  pool.wait_idle();
  EXPECT_EQ(pool.completed(), 8001u);
}

// The injected starter throws at its 3rd call: the pool keeps its old size, says why, and
// keeps working; a later resize succeeds.
TEST(WorkerPool, ThreadStartFailureRollsBack) {
  SteadyClock clock;
  std::atomic<int> calls{0};
  auto starter = [&calls](std::function<void()> body) {
    if (++calls == 3) {
      throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                              "injected failure");
    }
    return std::thread(std::move(body));
  };
  WorkerPool pool(options(1, 8), clock, starter);
  ASSERT_EQ(pool.size(), 1);
  EXPECT_TRUE(pool.last_error().empty());

  EXPECT_EQ(pool.resize(4), 1);  // call 2 starts a thread, call 3 throws: roll back
  EXPECT_EQ(pool.size(), 1);
  EXPECT_THAT(pool.last_error(), HasSubstr("injected failure"));
  EXPECT_THAT(pool.last_error(), HasSubstr("1 -> 4"));
  pool.wait_idle();  // the thread started by call 2 retires
  EXPECT_EQ(pool.live_threads(), 1);

  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(pool.try_submit([&] { ran++; }));
  pool.wait_idle();
  EXPECT_EQ(ran.load(), 100);

  EXPECT_EQ(pool.resize(3), 3);  // calls 4 and 5 succeed
  pool.wait_idle();
  EXPECT_EQ(pool.live_threads(), 3);
  EXPECT_EQ(calls.load(), 5);
}

TEST(WorkerPool, ConstructorKeepsThreadsThatStarted) {
  SteadyClock clock;
  int calls = 0;  // the constructor starts threads on this thread
  auto fail_third = [&calls](std::function<void()> body) {
    if (++calls == 3) throw std::runtime_error("no more threads");
    return std::thread(std::move(body));
  };
  WorkerPool pool(options(4, 8), clock, fail_third);
  EXPECT_EQ(pool.size(), 2);
  EXPECT_THAT(pool.last_error(), HasSubstr("no more threads"));

  auto always_fail = [](std::function<void()>) -> std::thread {
    throw std::runtime_error("never");
  };
  EXPECT_THROW({ WorkerPool pool2(options(2, 4), clock, always_fail); }, std::runtime_error);
}

// Tasks advance a ManualClock by known durations: p50 and p99 land in the expected buckets,
// busy time integrates on the same clock, and take_window() resets the window.
TEST(WorkerPool, LatencyWindowOnManualClock) {
  ManualClock clock(100.0);
  WorkerPool pool(options(1, 2), clock);
  for (int i = 0; i < 98; ++i) ASSERT_TRUE(pool.try_submit([&clock] { clock.advance(0.001); }));
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(pool.try_submit([&clock] { clock.advance(0.1); }));
  pool.wait_idle();
  clock.advance(0.298);  // idle as long as it was busy

  PoolWindow w = pool.take_window();
  EXPECT_EQ(w.completed, 100u);
  EXPECT_EQ(w.failed, 0u);
  EXPECT_NEAR(w.seconds, 0.596, 1e-9);
  EXPECT_NEAR(w.busy_mean, 0.5, 1e-9);
  // Bucket midpoints, within 0.8 % of the run times (1 ms for rank 50, 100 ms for rank 99).
  EXPECT_EQ(w.latency_p50, WorkerPool::latency_bucket_midpoint(0.001));
  EXPECT_NEAR(w.latency_p50, 0.001, 0.001 * 0.008);
  EXPECT_EQ(w.latency_p99, WorkerPool::latency_bucket_midpoint(0.1));  // rank 99 of 100
  EXPECT_NEAR(w.latency_p99, 0.1, 0.1 * 0.008);
  // The exported histogram: every task in the bucket of its run time, and the exact sum.
  ASSERT_FALSE(w.latency_histogram.empty());
  uint64_t histogram_total = 0;
  for (std::size_t i = 0; i < w.latency_histogram.size(); ++i) {
    histogram_total += w.latency_histogram[i];
    if (w.latency_histogram[i] == 0) continue;
    const double upper = WorkerPool::latency_histogram_upper_bound(i);
    EXPECT_TRUE((upper > 0.001 && upper <= 0.001 * 1.02) || (upper > 0.1 && upper <= 0.1 * 1.02))
        << upper;
  }
  EXPECT_EQ(histogram_total, w.completed);
  EXPECT_NEAR(w.latency_sum, 98 * 0.001 + 2 * 0.1, 1e-6);

  // The window was reset.
  w = pool.take_window();
  EXPECT_EQ(w.completed, 0u);
  EXPECT_EQ(w.seconds, 0.0);
  EXPECT_EQ(w.latency_p50, 0.0);
  EXPECT_EQ(w.latency_p99, 0.0);
  EXPECT_EQ(w.latency_sum, 0.0);
  clock.advance(1.0);
  w = pool.take_window();
  EXPECT_NEAR(w.seconds, 1.0, 1e-9);
  EXPECT_EQ(w.busy_mean, 0.0);
  EXPECT_EQ(w.completed, 0u);

  // Two workers held busy for the whole window: mean 2.
  ASSERT_EQ(pool.resize(2), 2);
  std::latch started(2);
  std::latch release(1);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(pool.try_submit([&] {
      started.count_down();
      release.wait();
    }));
  }
  started.wait();
  ASSERT_TRUE(testing::wait_until([&] { return pool.busy() == 2; }, 30.0));
  pool.take_window();
  clock.advance(2.0);
  w = pool.take_window();
  EXPECT_NEAR(w.seconds, 2.0, 1e-9);
  EXPECT_NEAR(w.busy_mean, 2.0, 1e-9);
  release.count_down();
  pool.wait_idle();
  w = pool.take_window();
  EXPECT_EQ(w.completed, 2u);
  EXPECT_EQ(w.latency_p50, WorkerPool::latency_bucket_midpoint(2.0));
}

TEST(WorkerPool, LatencyBucketsAreLogLinear) {
  // 64 buckets per octave: a midpoint is within 1/128 of any value in its bucket.
  for (double s : {3e-6, 1e-4, 0.0123, 0.5, 7.0, 300.0}) {
    const double mid = WorkerPool::latency_bucket_midpoint(s);
    EXPECT_NEAR(mid, s, s / 128 * (1 + 1e-12)) << s;
  }
  EXPECT_EQ(WorkerPool::latency_bucket_midpoint(0.0), WorkerPool::latency_bucket_midpoint(-1.0));
  EXPECT_LT(WorkerPool::latency_bucket_midpoint(0.0), 1e-6);
  EXPECT_LT(WorkerPool::latency_bucket_midpoint(0.0010),
            WorkerPool::latency_bucket_midpoint(0.00102));
  // The histogram's bounds rise, each at most 1/64 above the one before; the last is open.
  double previous = 0.0;
  std::size_t buckets = 0;
  for (std::size_t i = 0; i < 100000; ++i) {
    const double upper = WorkerPool::latency_histogram_upper_bound(i);
    if (std::isinf(upper)) {
      EXPECT_EQ(WorkerPool::latency_histogram_upper_bound(i + 1), upper);
      buckets = i + 1;
      break;
    }
    EXPECT_GT(upper, previous) << i;
    if (previous > 0) {
      EXPECT_LE(upper, previous * (1 + 1.0 / 64) * (1 + 1e-12)) << i;
    }
    previous = upper;
  }
  EXPECT_GT(previous, 3600.0);  // an hour-long task still has a bucket of its own
  EXPECT_GT(buckets, 0u);
}

// p50 and p99 of a known sample of run times (lognormal, median 5 ms, sigma 0.5, and a slow
// tail of 2 % at 40 ms +- 20 %), recorded as items, against the sample's exact nearest-rank
// quantiles: within 2 %.
TEST(WorkerPool, PercentilesAreWithinTwoPercentOfTheExactQuantiles) {
  ManualClock clock(0.0);
  WorkerPool pool(options(1, 1), clock);
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> body(std::log(0.005), 0.5);
  std::uniform_real_distribution<double> tail(0.032, 0.048);
  std::bernoulli_distribution slow(0.02);
  std::vector<double> sample(100000);
  for (double& s : sample) s = slow(rng) ? tail(rng) : body(rng);
  pool.record_items(sample);
  const PoolWindow w = pool.take_window();
  ASSERT_EQ(w.completed, sample.size());
  std::sort(sample.begin(), sample.end());
  auto exact = [&](double q) {
    return sample[static_cast<std::size_t>(std::ceil(q * sample.size())) - 1];
  };
  EXPECT_NEAR(w.latency_p50 / exact(0.50), 1.0, 0.02) << w.latency_p50 << " vs " << exact(0.50);
  EXPECT_NEAR(w.latency_p99 / exact(0.99), 1.0, 0.02) << w.latency_p99 << " vs " << exact(0.99);
}

TEST(WorkerPool, TaskExceptionsAreCountedAndWorkerSurvives) {
  SteadyClock clock;
  WorkerPool pool(options(1, 1), clock);
  std::thread::id before;
  std::thread::id after;
  ASSERT_TRUE(pool.try_submit([&] { before = std::this_thread::get_id(); }));
  ASSERT_TRUE(pool.try_submit([] { throw std::runtime_error("handler failed"); }));
  ASSERT_TRUE(pool.try_submit([] { throw 42; }));
  ASSERT_TRUE(pool.try_submit([&] { after = std::this_thread::get_id(); }));
  pool.wait_idle();
  EXPECT_EQ(pool.failed(), 2u);
  EXPECT_EQ(pool.completed(), 4u);
  EXPECT_EQ(before, after) << "the same worker ran the task after the exceptions";
  EXPECT_EQ(pool.size(), 1);
  EXPECT_EQ(pool.live_threads(), 1);
  const PoolWindow w = pool.take_window();
  EXPECT_EQ(w.completed, 4u);
  EXPECT_EQ(w.failed, 2u);
  EXPECT_EQ(pool.take_window().failed, 0u);
}

// shutdown(infinite) drains the queue; the gate opens only after shutdown has begun, so the
// queue is still full when it starts.
TEST(WorkerPool, ShutdownDrainsQueue) {
  SteadyClock clock;
  WorkerPool pool(options(1, 2), clock);
  std::latch release(1);
  std::atomic<int> ran{0};
  ASSERT_TRUE(pool.try_submit([&] { release.wait(); }));
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(pool.try_submit([&] { ran++; }));
  std::thread opener([&] {
    EXPECT_TRUE(
        testing::wait_until([&] { return !pool.try_submit([] {}); }, 30.0));  // stopped accepting
    release.count_down();
  });
  EXPECT_EQ(pool.shutdown(std::numeric_limits<double>::infinity()), 0u);
  opener.join();
  EXPECT_EQ(ran.load(), 50);
  EXPECT_EQ(pool.size(), 0);
  EXPECT_EQ(pool.live_threads(), 0);
  EXPECT_FALSE(pool.try_submit([] {}));
  EXPECT_EQ(pool.resize(3), 0);
  EXPECT_EQ(pool.shutdown(1.0), 0u);  // only the first call does anything
}

// With the only worker stuck in a task, shutdown(timeout) gives up on the queue after the
// timeout, returns how many tasks did not run, and still waits for the task in hand.
void check_shutdown_returns_unrun(double timeout_seconds) {
  SteadyClock clock;
  WorkerPool pool(options(1, 2, 10), clock);
  std::latch release(1);
  std::atomic<bool> in_hand_done{false};
  std::atomic<int> ran{0};
  ASSERT_TRUE(pool.try_submit([&] {
    release.wait();
    in_hand_done = true;
  }));
  ASSERT_TRUE(testing::wait_until([&] { return pool.busy() == 1; }, 30.0));
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(pool.try_submit([&] { ran++; }));
  ASSERT_TRUE(pool.backpressure());
  std::thread opener([&] {
    EXPECT_TRUE(
        testing::wait_until([&] { return pool.queue_depth() == 0; }, 30.0));  // queue dropped
    release.count_down();
  });
  EXPECT_EQ(pool.shutdown(timeout_seconds), 9u);
  opener.join();
  EXPECT_TRUE(in_hand_done.load());
  EXPECT_EQ(ran.load(), 0);
  EXPECT_FALSE(pool.backpressure());
  EXPECT_EQ(pool.completed(), 1u);
}

TEST(WorkerPool, ShutdownZeroTimeoutReturnsUnrunCount) {
  check_shutdown_returns_unrun(0.0);
}
TEST(WorkerPool, ShutdownTimeoutReturnsUnrunCount) {
  check_shutdown_returns_unrun(0.02);
}

TEST(WorkerPool, DestructorDrains) {
  SteadyClock clock;
  std::atomic<int> ran{0};
  {
    WorkerPool pool(options(2, 4), clock);
    for (int i = 0; i < 300; ++i) ASSERT_TRUE(pool.try_submit([&] { ran++; }));
  }
  EXPECT_EQ(ran.load(), 300);
}

}  // namespace
}  // namespace lagpilot
