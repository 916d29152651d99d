#pragma once
// The contract of the control API's body parsers (controller/api_requests.h), checked on
// arbitrary bytes by fuzz/api_body_fuzzer.cpp and on the kept inputs (fuzz/corpus/api_body_fuzzer,
// fuzz/regressions/api_body_fuzzer) by tests/controller/api_requests_fuzz_regressions_test.cpp.
//
// For any body, every parser either returns a request within its documented limits or throws
// ApiError with a 4xx status, a code and a message the server can send. Any other exception is
// left to escape: the server would answer it with a 500, so it is a bug (the fuzzer aborts on
// it, the test fails). A policy request that succeeds must also build a policy whose params()
// build the same policy again, and that policy must decide on a few observations without
// undefined behaviour (the sanitizers watch that part).
//
// Thread-safety: pure; any thread.

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "controller/api/api_requests.h"
#include "fuzz/policy_check.h"
#include "policies/guards.h"

namespace lagpilot::fuzz {

// "" when `e` is an error the server can answer with, else what is wrong with it.
inline std::string check_api_error(const ApiError& e, std::string_view parser) {
  const std::string where = std::string(parser) + ": ";
  if (e.status != 400 && e.status != 413 && e.status != 422) {
    return where + "unexpected HTTP status " + std::to_string(e.status);
  }
  if (e.code.empty()) return where + "ApiError without a code";
  if (e.message.empty()) return where + "ApiError without a message";
  // The server sends it like this (invalid UTF-8 replaced); it must not throw.
  nlohmann::json error = {{"code", e.code}, {"message", e.message}};
  if (!e.field.empty()) error["field"] = e.field;
  const std::string text = nlohmann::json{{"error", error}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.empty()) return where + "empty error body";
  return "";
}

// Runs every body parser on `body` with `guards` in force; "" when all kept their contract.
inline std::string check_api_body(std::string_view body, const GuardConfig& guards) {
  try {
    const nlohmann::json object = parse_api_object_body(body);
    if (!object.is_object()) return "parse_api_object_body: returned a non-object";
  } catch (const ApiError& e) {
    if (std::string bad = check_api_error(e, "parse_api_object_body"); !bad.empty()) return bad;
  }

  try {
    const OverrideRequest r = parse_override_request(body, guards);
    if (r.workers < guards.hard_min_workers || r.workers > guards.hard_max_workers) {
      return "parse_override_request: workers " + std::to_string(r.workers) +
             " outside the hard limits";
    }
    if (!(r.ttl_seconds > 0) || r.ttl_seconds > kMaxOverrideTtlSeconds) {
      return "parse_override_request: ttl_seconds " + std::to_string(r.ttl_seconds) +
             " out of range";
    }
    if (r.reason.size() > kMaxOverrideReasonBytes) return "parse_override_request: long reason";
  } catch (const ApiError& e) {
    if (std::string bad = check_api_error(e, "parse_override_request"); !bad.empty()) return bad;
  }

  try {
    const BoundsRequest r = parse_bounds_request(body, guards);
    if (r.min_workers > r.max_workers || r.min_workers < guards.hard_min_workers ||
        r.max_workers > guards.hard_max_workers) {
      return "parse_bounds_request: bounds [" + std::to_string(r.min_workers) + ", " +
             std::to_string(r.max_workers) + "] invalid";
    }
    // What the guards will do with them must not throw either.
    GuardChain chain(guards);
    chain.set_bounds(r.min_workers, r.max_workers);
  } catch (const ApiError& e) {
    if (std::string bad = check_api_error(e, "parse_bounds_request"); !bad.empty()) return bad;
  }

  try {
    PolicyRequest r = parse_policy_request(body);
    if (!r.policy) return "parse_policy_request: null policy";
    if (std::string bad = check_policy(r.name, *r.policy, "params"); !bad.empty()) {
      return "parse_policy_request: " + bad;
    }
  } catch (const ApiError& e) {
    if (std::string bad = check_api_error(e, "parse_policy_request"); !bad.empty()) return bad;
  }

  try {
    const std::string reason = parse_pause_request(body);
    if (reason.size() > kMaxOverrideReasonBytes) return "parse_pause_request: long reason";
  } catch (const ApiError& e) {
    if (std::string bad = check_api_error(e, "parse_pause_request"); !bad.empty()) return bad;
  }

  // The same bytes as a ?limit= query value.
  try {
    const std::size_t limit = parse_decision_limit(body, 1000);
    if (limit < 1 || limit > 1000) return "parse_decision_limit: " + std::to_string(limit);
  } catch (const ApiError& e) {
    if (std::string bad = check_api_error(e, "parse_decision_limit"); !bad.empty()) return bad;
  }
  return "";
}

}  // namespace lagpilot::fuzz
