// SyntheticHandlerConfig's reading and writing, apart from the handler (see
// cmake/lagpilot_library.cmake, STANDALONE: the simulator-only commands read configs without
// linking librdkafka).
#include "controller/loadgen/synthetic_handler.h"
#include "policies/config_reader.h"

namespace lagpilot {

SyntheticHandlerConfig SyntheticHandlerConfig::from_json(const nlohmann::json& j,
                                                         const std::string& path) {
  SyntheticHandlerConfig c;
  JsonObjectReader r(j, path);
  std::string type = "synthetic";
  r.read_enum("type", type, {"synthetic"});
  r.read("service_mean_seconds", c.service_mean_seconds, 0.0, 60.0);
  r.read("service_cv", c.service_cv, 0.0, 10.0);
  r.read("downstream_capacity", c.downstream_capacity, 0.0, 1e9);
  int64_t seed = static_cast<int64_t>(c.seed);
  r.read("seed", seed, 0);
  c.seed = static_cast<uint64_t>(seed);
  r.finish();
  return c;
}

nlohmann::json SyntheticHandlerConfig::to_json() const {
  return {{"type", "synthetic"},
          {"service_mean_seconds", service_mean_seconds},
          {"service_cv", service_cv},
          {"downstream_capacity", downstream_capacity},
          {"seed", seed}};
}

}  // namespace lagpilot
