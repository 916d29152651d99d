#pragma once
// Waiting in tests for something another thread or process does: the condition is polled on
// the wall clock until it holds or a deadline passes, so a bug fails the test instead of
// hanging it. (Tests of the control loop itself drive simulated time and never wait.)

#include <chrono>
#include <thread>

namespace lagpilot::testing {

// Checks `done()` every `poll` until it holds or `deadline` passes; checks once more at the
// deadline and returns whether it held.
template <typename Pred>
bool wait_until(Pred&& done, std::chrono::steady_clock::time_point deadline,
                std::chrono::steady_clock::duration poll = std::chrono::milliseconds(1)) {
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(poll);
  }
  return done();
}

// The same with a timeout in seconds from now.
template <typename Pred>
bool wait_until(Pred&& done, double timeout_seconds,
                std::chrono::steady_clock::duration poll = std::chrono::milliseconds(1)) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_seconds));
  return wait_until(done, deadline, poll);
}

}  // namespace lagpilot::testing
