#include "controller/handler_config.h"

#include "policies/config_reader.h"

namespace lagpilot {

HandlerConfig HandlerConfig::from_json(const nlohmann::json& j, const std::string& path) {
  HandlerConfig c;
  {
    JsonObjectReader r(j, path);  // throws unless an object
    if (r.has("type")) r.read_enum("type", c.type, {"synthetic", "http", "exec"});
  }
  if (c.type == "synthetic") c.synthetic = SyntheticHandlerConfig::from_json(j, path);
  if (c.type == "http") c.http = HttpSinkConfig::from_json(j, path);
  if (c.type == "exec") c.exec = ExecSinkConfig::from_json(j, path);
  return c;
}

nlohmann::json HandlerConfig::to_json() const {
  if (type == "synthetic") return synthetic.to_json();
  nlohmann::json j = {{"type", type}};
  if (type == "http") http.write_keys(j);
  if (type == "exec") exec.write_keys(j);
  return j;
}

}  // namespace lagpilot
