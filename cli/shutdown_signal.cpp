#include "cli/shutdown_signal.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace lagpilot::cli {
namespace {

// Atomic and lock-free: written from a signal handler, read by the main thread.
std::atomic<bool> g_stop{false};
std::atomic<int> g_signals{0};

void on_signal(int) {
  if (g_signals.fetch_add(1) >= 1) {
    _exit(130);  // second signal: leave at once
  }
  g_stop.store(true);
}

}  // namespace

void ShutdownSignal::install() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool ShutdownSignal::requested() {
  return g_stop.load();
}

const std::atomic<bool>& ShutdownSignal::flag() {
  return g_stop;
}

void ShutdownSignal::request() {
  g_stop.store(true);
}

bool ShutdownSignal::wait_for(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!requested() && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return requested();
}

}  // namespace lagpilot::cli
