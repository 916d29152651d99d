#pragma once
// SIGINT/SIGTERM handling for long-running subcommands: the first signal asks for a graceful
// stop (requested() turns true); a second one exits at once with status 130.
// Install once, from the main thread, before starting worker threads.

#include <atomic>

namespace lagpilot::cli {

class ShutdownSignal {
 public:
  static void install();
  static bool requested();
  // Sleeps up to `seconds` on the wall clock, returning early when a stop is requested.
  static bool wait_for(double seconds);
  // The flag itself, for code that takes a `const std::atomic<bool>&` stop flag.
  static const std::atomic<bool>& flag();
  // Requests a stop from code (as if a signal had arrived), e.g. when a demo's producer ends.
  static void request();
};

}  // namespace lagpilot::cli
