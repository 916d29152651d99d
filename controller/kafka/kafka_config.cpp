// KafkaSourceConfig's reading and writing; building librdkafka's conf from it is
// kafka_consumer_conf.cpp (see cmake/lagpilot_library.cmake, STANDALONE: the simulator-only
// commands read configs without linking librdkafka).
#include "controller/kafka/kafka_config.h"

#include <cmath>
#include <stdexcept>

#include "policies/config_reader.h"

namespace lagpilot {

KafkaSourceConfig KafkaSourceConfig::from_json(const nlohmann::json& j, const std::string& path) {
  KafkaSourceConfig c;
  JsonObjectReader r(j, path);
  r.read("bootstrap_servers", c.bootstrap_servers);
  if (const nlohmann::json* topics = r.raw("topics")) {
    const std::string tp = r.path_of("topics");
    if (!topics->is_array() || topics->empty()) {
      throw ConfigError(tp, "must be a non-empty array of topic names");
    }
    c.topics.clear();
    for (std::size_t i = 0; i < topics->size(); ++i) {
      const nlohmann::json& t = (*topics)[i];
      if (!t.is_string() || t.get<std::string>().empty()) {
        throw ConfigError(tp + "[" + std::to_string(i) + "]", "must be a non-empty string");
      }
      c.topics.push_back(t.get<std::string>());
    }
  }
  r.read("group_id", c.group_id);
  if (c.group_id.empty()) throw ConfigError(r.path_of("group_id"), "must not be empty");
  if (const nlohmann::json* props = r.raw("properties")) {
    const std::string pp = r.path_of("properties");
    if (!props->is_object()) throw ConfigError(pp, "must be an object of librdkafka properties");
    for (auto it = props->begin(); it != props->end(); ++it) {
      const nlohmann::json& v = it.value();
      std::string text;
      if (v.is_string()) {
        text = v.get<std::string>();
      } else if (v.is_boolean()) {
        text = v.get<bool>() ? "true" : "false";
      } else if (v.is_number_integer()) {
        text = v.dump();
      } else if (v.is_number_float()) {
        const double d = v.get<double>();
        text = d == std::floor(d) && std::fabs(d) < 1e15 ? std::to_string(static_cast<int64_t>(d))
                                                         : v.dump();
      } else {
        throw ConfigError(pp + "." + it.key(), "must be a string, number or boolean");
      }
      c.properties[it.key()] = text;
    }
  }
  r.read_enum("ordering", c.ordering, {"key", "partition", "unordered"});
  r.read("commit_interval_seconds", c.commit_interval_seconds, 0.001, 86400.0);
  r.read("revoke_timeout_seconds", c.revoke_timeout_seconds, 0.0, 3600.0);
  r.read("max_unfinished", c.max_unfinished, int64_t{0});
  r.finish();
  return c;
}

nlohmann::json KafkaSourceConfig::to_json() const {
  nlohmann::json props = nlohmann::json::object();
  for (const auto& [k, v] : properties) props[k] = v;
  return nlohmann::json{{"bootstrap_servers", bootstrap_servers},
                        {"topics", topics},
                        {"group_id", group_id},
                        {"properties", props},
                        {"ordering", ordering},
                        {"commit_interval_seconds", commit_interval_seconds},
                        {"revoke_timeout_seconds", revoke_timeout_seconds},
                        {"max_unfinished", max_unfinished}};
}

}  // namespace lagpilot
