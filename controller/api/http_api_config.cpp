// HttpApiConfig's reading and writing, apart from the server (see cmake/lagpilot_library.cmake,
// STANDALONE: the simulator-only commands read configs without linking cpp-httplib).
#include <cstdlib>

#include "controller/api/http_api.h"
#include "policies/config_reader.h"

namespace lagpilot {

HttpApiConfig HttpApiConfig::from_json(const nlohmann::json& j, const std::string& path) {
  HttpApiConfig c;
  JsonObjectReader r(j, path);
  r.read("enabled", c.enabled);
  r.read("host", c.host);
  r.read("port", c.port, 0, 65535);
  r.read("token_env", c.token_env);
  r.finish();
  if (c.host.empty()) throw ConfigError(r.path_of("host"), "must not be empty");
  return c;
}

nlohmann::json HttpApiConfig::to_json() const {
  return {{"enabled", enabled}, {"host", host}, {"port", port}, {"token_env", token_env}};
}

std::string HttpApiConfig::token_from_env() const {
  if (token_env.empty()) return "";
  const char* value = std::getenv(token_env.c_str());
  return value ? value : "";
}

}  // namespace lagpilot
