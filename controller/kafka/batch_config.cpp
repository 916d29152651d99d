#include "controller/kafka/batch_config.h"

#include "policies/config_reader.h"

namespace lagpilot {

BatchConfig BatchConfig::from_json(const nlohmann::json& j, const std::string& path) {
  BatchConfig c;
  c.enabled = true;
  JsonObjectReader r(j, path);
  r.read("max_messages", c.max_messages, 1);
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
