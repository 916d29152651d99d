#include "controller/kafka/batch_config.h"

#include <cstdint>
#include <string>

#include "policies/config_reader.h"

namespace lagpilot {
namespace {
constexpr int64_t kMaxBatchMessages = 1'000'000;
}  // namespace

BatchConfig BatchConfig::from_json(const nlohmann::json& j, const std::string& path) {
  BatchConfig c;
  c.enabled = true;
  JsonObjectReader r(j, path);
  int64_t max_messages = c.max_messages;
  r.read("max_messages", max_messages);
  if (max_messages < 1) {
    throw ConfigError(r.path_of("max_messages"),
                      "must be >= 1, got " + std::to_string(max_messages));
  }
  if (max_messages > kMaxBatchMessages) {
    throw ConfigError(r.path_of("max_messages"), "must be <= " + std::to_string(kMaxBatchMessages) +
                                                     ", got " + std::to_string(max_messages));
  }
  c.max_messages = static_cast<int>(max_messages);
  r.read("max_wait_seconds", c.max_wait_seconds, 0.001);
  r.read("drop_last", c.drop_last);
  r.finish();
  return c;
}

nlohmann::json BatchConfig::to_json() const {
  return {{"max_messages", max_messages},
          {"max_wait_seconds", max_wait_seconds},
          {"drop_last", drop_last}};
}

}  // namespace lagpilot
