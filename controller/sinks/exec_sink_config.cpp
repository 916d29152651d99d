// ExecSinkConfig's reading and writing, apart from the sink itself (see
// cmake/lagpilot_library.cmake, STANDALONE: the simulator-only commands read configs without
// linking the live runtime).
#include "controller/sinks/exec_sink.h"
#include "policies/config_reader.h"

namespace lagpilot {

ExecSinkConfig ExecSinkConfig::from_json(const nlohmann::json& j, const std::string& path) {
  ExecSinkConfig c;
  JsonObjectReader r(j, path);
  r.raw("type");  // read by the caller, which chose this sink
  if (const nlohmann::json* cmd = r.raw("command")) {
    if (!cmd->is_array() || cmd->empty()) {
      throw ConfigError(r.path_of("command"), "must be a non-empty array of strings (argv)");
    }
    for (std::size_t i = 0; i < cmd->size(); ++i) {
      if (!(*cmd)[i].is_string() || (*cmd)[i].get<std::string>().empty()) {
        throw ConfigError(r.path_of("command") + "[" + std::to_string(i) + "]",
                          "must be a non-empty string");
      }
      c.command.push_back((*cmd)[i].get<std::string>());
    }
  }
  r.read("timeout_seconds", c.timeout_seconds, 0.001, 3600.0);
  r.read("restart_backoff_seconds", c.restart_backoff_seconds, 0.0, kMaxRestartBackoffSeconds);
  r.finish();
  if (c.command.empty()) throw ConfigError(r.path_of("command"), "required for the exec handler");
  return c;
}

void ExecSinkConfig::write_keys(nlohmann::json& j) const {
  j["command"] = command;
  j["timeout_seconds"] = timeout_seconds;
  j["restart_backoff_seconds"] = restart_backoff_seconds;
}

}  // namespace lagpilot
