#include "controller/sinks/failure_policy.h"

#include "policies/config_reader.h"

namespace lagpilot {

FailureConfig FailureConfig::from_json(const nlohmann::json& j, const std::string& path) {
  FailureConfig c;
  JsonObjectReader r(j, path);
  r.read("max_attempts", c.max_attempts, 0, 1'000'000);
  r.read("initial_backoff_seconds", c.initial_backoff_seconds, 0.0, 3600.0);
  r.read("max_backoff_seconds", c.max_backoff_seconds, 0.0, 86400.0);
  {
    JsonObjectReader dl = r.child("dead_letter");
    dl.read("topic", c.dead_letter_topic);
    dl.finish();
  }
  if (r.has("on_permanent_failure")) {  // absent: the default that depends on the topic
    std::string action = "retry";
    r.read_enum("on_permanent_failure", action, {"dead_letter", "retry", "drop"});
    c.on_permanent_failure = action;
  }
  r.finish();
  if (c.max_backoff_seconds < c.initial_backoff_seconds) {
    throw ConfigError(r.path_of("max_backoff_seconds"),
                      "must not be below initial_backoff_seconds");
  }
  if (c.on_permanent_failure == "dead_letter" && c.dead_letter_topic.empty()) {
    throw ConfigError(r.path_of("on_permanent_failure"),
                      "\"dead_letter\" needs failure.dead_letter.topic");
  }
  if (c.max_attempts > 0 && c.dead_letter_topic.empty()) {
    throw ConfigError(r.path_of("max_attempts"),
                      "needs failure.dead_letter.topic (without one a message is retried until "
                      "it succeeds; 0 says so)");
  }
  return c;
}

nlohmann::json FailureConfig::to_json() const {
  return {{"max_attempts", max_attempts},
          {"initial_backoff_seconds", initial_backoff_seconds},
          {"max_backoff_seconds", max_backoff_seconds},
          {"dead_letter", {{"topic", dead_letter_topic}}},
          {"on_permanent_failure", permanent_action()}};
}

std::string FailureConfig::permanent_action() const {
  if (!on_permanent_failure.empty()) return on_permanent_failure;
  return dead_letter_topic.empty() ? "retry" : "dead_letter";
}

}  // namespace lagpilot
