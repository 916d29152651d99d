#pragma once
// The contract of the config parsers below the binary (policy params, command-line policy specs,
// the "guards" and "sim" objects), checked on arbitrary text by fuzz/config_fuzzer.cpp and on
// the kept inputs (fuzz/corpus/config_fuzzer, fuzz/regressions/config_fuzzer) by
// tests/sim/config_fuzz_regressions_test.cpp. controller/app_config.h (the whole file) is
// checked by the fuzzer (fuzz/config_fuzzer.cpp), which links the runtime's config sources.
//
// For any input, each parser returns a value or throws ConfigError, never anything else; what
// it accepted survives a to_json() / from_json() round trip unchanged; a policy it accepted
// keeps fuzz/policy_check.h's contract; a consumer model it accepted gives finite, positive
// capacities and finite service-time quantiles.
//
// Thread-safety: pure; any thread.

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz/policy_check.h"
#include "policies/config_reader.h"
#include "policies/guards.h"
#include "policies/policy_factory.h"
#include "sim/simulation.h"

namespace lagpilot::fuzz {

inline std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// `text` as a command-line policy spec ("pid:kp=2,setpoint=10").
inline std::string check_policy_spec(std::string_view text) {
  PolicySpec spec;
  try {
    spec = parse_policy_spec(std::string(text));
  } catch (const ConfigError&) {
    return "";
  }
  std::unique_ptr<Policy> policy;
  try {
    policy = make_policy(spec.name, spec.params, "spec");
  } catch (const ConfigError& e) {
    return "parse_policy_spec accepted a spec make_policy refuses: " + std::string(e.what());
  }
  return check_policy(spec.name, *policy, "spec");
}

// `j` as the params of every policy, as a "guards" object and as a "sim" object.
inline std::string check_config_json(const nlohmann::json& j) {
  for (const std::string& name : policy_names()) {
    std::unique_ptr<Policy> policy;
    try {
      policy = make_policy(name, j, "policy.params");
    } catch (const ConfigError&) {
      continue;
    }
    if (std::string bad = check_policy(name, *policy, "policy.params"); !bad.empty()) return bad;
  }

  try {
    const GuardConfig guards = GuardConfig::from_json(j, "guards");
    if (guards.min_workers > guards.max_workers || guards.min_workers < guards.hard_min_workers ||
        guards.max_workers > guards.hard_max_workers) {
      return "GuardConfig accepted bounds outside its limits: " + dump_json(guards.to_json());
    }
    const nlohmann::json out = guards.to_json();
    if (GuardConfig::from_json(out, "guards").to_json() != out) {
      return "GuardConfig changes on reload: " + dump_json(out);
    }
    GuardChain chain(guards);  // must accept what from_json accepted
    chain.set_bounds(guards.min_workers, guards.max_workers);
  } catch (const ConfigError& e) {
    if (std::string(e.what()).empty()) return "GuardConfig: ConfigError without a message";
  }

  try {
    const sim::SimConfig config = sim::SimConfig::from_json(j, "sim");
    const nlohmann::json out = config.to_json();
    if (sim::SimConfig::from_json(out, "sim").to_json() != out) {
      return "SimConfig changes on reload: " + dump_json(out);
    }
    const sim::ConsumerModelConfig& model = config.model;
    for (int workers : {1, 2, 4, 16, 64, 1024}) {
      const double capacity = model.capacity(workers);
      if (!std::isfinite(capacity) || !(capacity > 0)) {
        return "SimConfig model: capacity(" + std::to_string(workers) +
               ") = " + std::to_string(capacity) + " for " + dump_json(out);
      }
    }
    for (double q : {0.01, 0.5, 0.99}) {
      const double t = model.service_quantile(q);
      if (!std::isfinite(t) || t < 0) {
        return "SimConfig model: service_quantile(" + std::to_string(q) +
               ") = " + std::to_string(t) + " for " + dump_json(out);
      }
    }
  } catch (const ConfigError&) {
  }
  return "";
}

// Everything above for one input: the text as a policy spec, and (if it is JSON) its value.
inline std::string check_config_text(std::string_view text) {
  if (std::string bad = check_policy_spec(text); !bad.empty()) return bad;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {  // parse_error, or out_of_range for 1e999
    return "";
  }
  return check_config_json(j);
}

}  // namespace lagpilot::fuzz
