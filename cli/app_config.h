#pragma once
// The config file shared by every subcommand:
//
//   { "policy": {"name": "pid", "params": {...}},   policy and its parameters
//     "guards": {...},                               bounds, step limits, stabilization, ...
//     "sim": {...},                                  simulator settings (lagpilot sim)
//     "http": {...},                                 control API + /metrics (run)
//     "calibration": {...},                          record of `lagpilot calibrate` (not read)
//     "lag_slo": 10000,                              the lag SLO of run, sim, tune, calibrate
//     ...RuntimeConfig keys...                       broker, kafka, pool, handler, ... (run) }
//
// Loaded and validated once ("sim" included); every error names the file and the JSON path.
// Missing keys keep their documented defaults (`lagpilot run --print-config` prints them all).
//
// Thread-safety: a plain value; load and read it on one thread, or share it const.

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "controller/consumer_runtime.h"
#include "controller/api/http_api.h"
#include "policies/guards.h"
#include "policies/policy.h"
#include "sim/simulation.h"

namespace lagpilot::cli {

struct AppConfig {
  std::string policy_name = "pid";
  nlohmann::json policy_params = nlohmann::json::object();
  GuardConfig guards;
  // "sim" as written (without lag_slo); from_json() checks it, sim_config() reads it.
  nlohmann::json sim = nlohmann::json::object();
  RuntimeConfig runtime;  // includes the top-level "lag_slo" (runtime.lag_slo)
  HttpApiConfig http;     // "http": the control API and /metrics (lagpilot run)
  // "calibration": what `lagpilot calibrate` measured, for humans (any JSON object, kept as
  // is; nothing reads it). null when absent.
  nlohmann::json calibration = nullptr;

  // Throws ConfigError (JSON path) or std::runtime_error (file errors, JSON syntax with line).
  static AppConfig load(const std::string& path);
  static AppConfig from_json(const nlohmann::json& root);
  nlohmann::json to_json() const;
  std::unique_ptr<Policy> make_policy() const;

  // The simulator's settings, for every command that simulates (sim, tune, calibrate): "sim"
  // through sim::SimConfig::from_json, with lag_slo from the top-level "lag_slo"
  // (runtime.lag_slo) rounded down to whole messages. Lag is a whole number of messages, so
  // "lag > floor(lag_slo)" counts exactly the ticks that `lagpilot run`'s "lag > lag_slo"
  // counts. Throws ConfigError naming the JSON path ("sim.batch_size: ...", "sim.lag_slo:
  // moved to the top level ..."); never for a config that from_json() or load() returned.
  sim::SimConfig sim_config() const;
};

// Reads a JSON file; a syntax error names "path:line:column".
nlohmann::json read_json_file(const std::string& path);

}  // namespace lagpilot::cli
