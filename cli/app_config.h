#pragma once
// The config file shared by every subcommand:
//
//   { "policy": {"name": "pid", "params": {...}},   policy and its parameters
//     "guards": {...},                               bounds, step limits, stabilization, ...
//     "sim": {...},                                  simulator settings (lagpilot sim)
//     "http": {...},                                 control API + /metrics (run)
//     "calibration": {...},                          record of `lagpilot calibrate` (not read)
//     ...RuntimeConfig keys...                       broker, kafka, pool, handler, ... (run) }
//
// Loaded and validated once; every error names the file and the JSON path. Missing keys keep
// their documented defaults (`lagpilot run --print-config` prints them all).

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "controller/consumer_runtime.h"
#include "controller/http_api.h"
#include "policies/guards.h"
#include "policies/policy.h"

namespace lagpilot::cli {

struct AppConfig {
  std::string policy_name = "pid";
  nlohmann::json policy_params = nlohmann::json::object();
  GuardConfig guards;
  nlohmann::json sim = nlohmann::json::object();  // validated by the sim command
  RuntimeConfig runtime;
  HttpApiConfig http;  // "http": the control API and /metrics (lagpilot run)
  // "calibration": what `lagpilot calibrate` measured, for humans (any JSON object, kept as
  // is; nothing reads it). null when absent.
  nlohmann::json calibration = nullptr;

  // Throws ConfigError (JSON path) or std::runtime_error (file errors, JSON syntax with line).
  static AppConfig load(const std::string& path);
  static AppConfig from_json(const nlohmann::json& root);
  nlohmann::json to_json() const;
  std::unique_ptr<Policy> make_policy() const;
};

// Reads a JSON file; a syntax error names "path:line:column".
nlohmann::json read_json_file(const std::string& path);

}  // namespace lagpilot::cli
