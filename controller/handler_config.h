#pragma once
// The "handler" object of the config: what a pool worker does with a message when the embedder
// gives no C++ handler (the binary never does).
//
//   "handler": {"type": "synthetic", "service_mean_seconds": 0.005, ...}   the demo's stand-in
//   "handler": {"type": "http", "url": "http://127.0.0.1:8080/events", ...}  controller/sinks
//   "handler": {"type": "exec", "command": ["python3", "worker.py"], ...}   controller/sinks
//
// Only the chosen type's keys are allowed beside "type".
//
// Thread-safety: a plain value.

#include <nlohmann/json.hpp>
#include <string>

#include "controller/loadgen/synthetic_handler.h"
#include "controller/sinks/exec_sink.h"
#include "controller/sinks/http_sink.h"

namespace lagpilot {

struct HandlerConfig {
  std::string type = "synthetic";  // synthetic | http | exec
  SyntheticHandlerConfig synthetic;
  HttpSinkConfig http;
  ExecSinkConfig exec;

  // Throws ConfigError naming the JSON path ("handler.url", "handler.type", ...).
  static HandlerConfig from_json(const nlohmann::json& j, const std::string& path = "handler");
  nlohmann::json to_json() const;
};

}  // namespace lagpilot
