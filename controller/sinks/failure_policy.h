#pragma once
// The "failure" section of the config: what happens to a message whose delivery fails.
//
//   "failure": {
//     "max_attempts": 0,                 0 = unlimited (retry until it succeeds)
//     "initial_backoff_seconds": 0.1,    exponential backoff with full jitter
//     "max_backoff_seconds": 30,
//     "dead_letter": {"topic": ""},      "" = no dead-letter topic
//     "on_permanent_failure": "..."      "dead_letter" (the default with a topic), "retry" (the
//   }                                    default without one) or "drop" (counted, logged)
//
// After max_attempts transient failures, or at once for a permanent failure with
// "dead_letter", the record goes to the dead-letter topic; its offset is committable only once
// that produce is acknowledged. Without a topic, a message is retried until it succeeds (lag and
// the retry metrics show the stall), so max_attempts needs a topic.
//
// Thread-safety: a plain value.

#include <nlohmann/json.hpp>
#include <string>

namespace lagpilot {

struct FailureConfig {
  int max_attempts = 0;
  double initial_backoff_seconds = 0.1;
  double max_backoff_seconds = 30;
  std::string dead_letter_topic;
  std::string on_permanent_failure;  // "" until read: from_json fills in the default

  // Throws ConfigError naming the JSON path ("failure.max_attempts", ...).
  static FailureConfig from_json(const nlohmann::json& j, const std::string& path = "failure");
  nlohmann::json to_json() const;
  // The effective choice: on_permanent_failure, or its default.
  std::string permanent_action() const;
};

}  // namespace lagpilot
