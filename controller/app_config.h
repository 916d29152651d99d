#pragma once
// The config file shared by every subcommand and by lagpilot::Service:
//
//   { "policy": {"name": "hybrid", "params": {...}}, policy and its parameters
//     "guards": {...},                               bounds, step limits, stabilization, ...
//     "sim": {...},                                  simulator settings (lagpilot sim, tune)
//     "http": {...},                                 control API + /metrics (run, Service)
//     "calibration": {...},                          record of `lagpilot calibrate` (not read)
//     "lag_slo": 10000,                              the lag SLO of run, sim, tune, calibrate
//     "traffic": {...},                              what the cluster and topics carry (advise)
//     "pacing": {"headroom": 0.25},                  producer pacing (GET /v1/pacing)
//     ...RuntimeConfig keys...                       broker, kafka, pool, handler, ... }
//
// Loaded and validated once; every error names the file and the JSON path. Missing keys keep
// their documented defaults (`lagpilot run --print-config` prints them all). The live runtime
// does not simulate, so "sim" is kept as written (it must be an object) and checked by whoever
// reads it: the binary passes a SectionCheck that validates it, so that `lagpilot run` and
// `lagpilot sim` refuse the same files.
//
// Thread-safety: a plain value; load and read it on one thread, or share it const.

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "controller/api/http_api.h"
#include "controller/consumer_runtime.h"
#include "policies/guards.h"
#include "policies/policy.h"

namespace lagpilot {

// A config file that cannot be used. what() is "file: json.path: message" for a bad value, or
// "file:line:column: invalid JSON: ..." for a syntax error (the text `lagpilot` prints before
// exiting with status 2).
class ConfigFileError : public std::runtime_error {
 public:
  ConfigFileError(std::string file, std::string json_path, int line, int column,
                  const std::string& what);
  const std::string& file() const { return file_; }
  // The offending field ("guards.max_workers"), "" for the document root or a syntax error.
  const std::string& json_path() const { return json_path_; }
  // Of a syntax error, 1-based; 0 otherwise.
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  std::string file_;
  std::string json_path_;
  int line_ = 0;
  int column_ = 0;
};

// "traffic": what this consumer's Kafka cluster and topics carry besides its own traffic. Only
// the config advice reads it (`lagpilot advise`, the start-up warnings of `lagpilot run`):
// training and online traffic on one cluster or topic is a finding.
struct TrafficConfig {
  // "none" (default): nothing said, or one kind of traffic only; "cluster": the Kafka cluster
  // carries training and online traffic together; "topic": the topics this consumer reads do.
  std::string training_and_online_share = "none";

  // Reads {"training_and_online_share"}; throws ConfigError naming the JSON path.
  static TrafficConfig from_json(const nlohmann::json& j, const std::string& path = "traffic");
  nlohmann::json to_json() const;
};

struct AppConfig {
  std::string policy_name = "hybrid";
  nlohmann::json policy_params = nlohmann::json::object();
  GuardConfig guards;
  // "sim" as written (without lag_slo); a JSON object. The simulator reads and checks it.
  nlohmann::json sim = nlohmann::json::object();
  RuntimeConfig runtime;  // includes the top-level "lag_slo" (runtime.lag_slo)
  HttpApiConfig http;     // "http": the control API and /metrics
  TrafficConfig traffic;  // "traffic": for the config advice only
  // "calibration": what `lagpilot calibrate` measured, for humans (any JSON object, kept as
  // is; nothing reads it). null when absent.
  nlohmann::json calibration = nullptr;

  // Runs after the built-in validation, on the loaded config; throws ConfigError naming the
  // JSON path of what it refuses. The binary checks "sim" with one.
  using SectionCheck = std::function<void(const AppConfig&)>;

  // Throws ConfigFileError (file and JSON path, or file:line:column for JSON syntax).
  static AppConfig load(const std::string& path, const SectionCheck& check = {});
  // Throws ConfigError naming the JSON path.
  static AppConfig from_json(const nlohmann::json& root, const SectionCheck& check = {});
  // Every key with its value, defaults included; "sim" as written.
  nlohmann::json to_json() const;
  std::unique_ptr<Policy> make_policy() const;
};

// Reads a JSON file; a syntax error throws ConfigFileError naming "path:line:column", a file
// that cannot be opened ConfigFileError naming the path.
nlohmann::json read_json_file(const std::string& path);

}  // namespace lagpilot
