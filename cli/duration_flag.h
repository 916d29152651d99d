#pragma once
// Durations given on the command line (ctl override --ttl, calibrate --dwell and --warmup):
// one grammar for every flag that takes one.
//
//   "90s", "500ms", "10m", "2h", "1d", "1h30m", "1.5h", "2min", or plain seconds ("600", "2.5")
//
// Units (d, h, m or min, s, ms) appear at most once each, largest first; a plain number is
// seconds and cannot follow a unit ("1h30" is an error, not 1 h 30 s).
//
// Thread-safety: a pure function.

#include <string>

namespace lagpilot::cli {

enum class DurationFloor {
  kPositive,     // more than 0 seconds (a TTL)
  kNonNegative,  // 0 is allowed (a warm-up that may be skipped)
};

// Seconds. Throws ConfigError naming `flag` ("--ttl: invalid duration \"1h1h\": units must ...").
double parse_duration(const std::string& flag, const std::string& text,
                      DurationFloor floor = DurationFloor::kPositive);

}  // namespace lagpilot::cli
