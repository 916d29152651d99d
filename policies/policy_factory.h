#pragma once
// Building policies by name from JSON params or from a command-line spec.
//
// Thread-safety: the free functions below are pure (no shared state) and may be called from any
// thread; the Policy they return is not thread-safe (see policy.h).

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policies/config_reader.h"
#include "policies/policy.h"

namespace lagpilot {

// The policy names make_policy() accepts: "static", "threshold", "pid", "hpa", "keda", "model",
// "hybrid".
std::vector<std::string> policy_names();

// policy_names() joined with ", ", for help texts and errors, so that every list a user reads
// names every policy there is.
std::string policy_name_list();

// Builds the named policy from its params object (null or {} means all defaults). `path` is
// where the params sit in the document; errors name the field below it
// ("policy.params.kp: must be >= 0, got -1"), an unknown key included. An unknown name is a
// ConfigError on the sibling "name" path ("policy.name: unknown policy \"foo\"; valid names:
// static, threshold, pid, hpa, keda, model, hybrid").
std::unique_ptr<Policy> make_policy(const std::string& name, const nlohmann::json& params,
                                    const std::string& path = "policy.params");

// The full params object of a policy with every default filled in (what make_policy(name, {})
// reports through Policy::params()). Throws ConfigError for an unknown name.
nlohmann::json default_params(const std::string& name);

// A policy chosen on the command line.
struct PolicySpec {
  std::string name;
  nlohmann::json params = nlohmann::json::object();
  std::string label;  // the spec text as given, e.g. "static:16": names runs in reports
};

// Parses a command-line spec:
//   NAME                      defaults: "pid", "threshold", "hpa", "keda", "static", "model"
//   static:N                  shorthand for static with workers N ("static:16")
//   NAME:key=value[,key=value...]
//                             params; each value is JSON (number, true/false, [..], {..}) or
//                             else a bare string: "pid:metric=drain_time,setpoint=10",
//                             "hpa:target_lag_per_worker=500"
// The result is validated by building the policy once; any error (unknown name, bad key or
// value, malformed text) is a ConfigError whose path names the spec ("policy spec
// \"pid:kp=-1\"").
PolicySpec parse_policy_spec(const std::string& text);

}  // namespace lagpilot
