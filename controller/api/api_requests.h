#pragma once
// The control API's request parsers, apart from the HTTP server so that tests and fuzzers can
// call them without a socket (controller/http_api.cpp serves them; see http_api.h for the
// endpoints and the error codes).
//
// Each parser takes the raw request body (or query value) and returns a validated request, or
// throws ApiError, and only ApiError: a ConfigError from validation becomes a 422 naming the
// field, as the server answers it. Nothing here touches the ControlLoop: the caller passes the
// guard configuration in force and applies the result.
//
// Thread-safety: every function is pure (no shared state); call it from any thread.

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "policies/config_reader.h"
#include "policies/guards.h"
#include "policies/policy.h"

namespace lagpilot {

// An error answer of the control API: the HTTP status and the {"error": {...}} body fields.
struct ApiError {
  int status = 400;
  std::string code;     // invalid_json, invalid_body, invalid_query, invalid_field, ...
  std::string message;  // human-readable, names the field ("workers: must be <= 64, got 99")
  std::string field;    // JSON path into the request body; "" when no single field is at fault
};

// A ConfigError from validating a request body: 422, "unknown_field" when the key itself is
// unknown, else "invalid_field", with the error's path as the field.
ApiError api_error_from(const ConfigError& error);

// Body limits.
inline constexpr std::size_t kMaxApiBodyBytes = 64 * 1024;
inline constexpr int kMaxApiBodyDepth = 64;  // arrays/objects nested in the top-level object
inline constexpr std::size_t kMaxOverrideReasonBytes = 1024;
inline constexpr double kDefaultOverrideTtlSeconds = 600;
inline constexpr double kMaxOverrideTtlSeconds = 7 * 24 * 3600;

// Parses a body that must be a JSON object: 413 payload_too_large above kMaxApiBodyBytes,
// 400 invalid_body when empty or not an object, 400 invalid_json when malformed, nested deeper
// than kMaxApiBodyDepth, or holding a number beyond double (1e999).
nlohmann::json parse_api_object_body(std::string_view body);

// PUT /v1/override: {"workers": N (required, within the hard limits), "ttl_seconds": T
// (0 < T <= kMaxOverrideTtlSeconds, default kDefaultOverrideTtlSeconds), "reason": "..." (at
// most kMaxOverrideReasonBytes)}.
struct OverrideRequest {
  int workers = 0;
  double ttl_seconds = kDefaultOverrideTtlSeconds;
  std::string reason;
};
OverrideRequest parse_override_request(std::string_view body, const GuardConfig& guards);

// PUT /v1/bounds: {"min": N, "max": M}, at least one of them, each within the hard limits; an
// omitted one keeps its value in `guards`. The result has min <= max.
struct BoundsRequest {
  int min_workers = 0;
  int max_workers = 0;
};
BoundsRequest parse_bounds_request(std::string_view body, const GuardConfig& guards);

// PUT /v1/policy: {"name": "...", "params": {...}} (params optional), validated by building the
// policy with make_policy (errors name "params.<field>").
struct PolicyRequest {
  std::string name;
  std::unique_ptr<Policy> policy;  // never null
};
PolicyRequest parse_policy_request(std::string_view body);

// POST /v1/pause, /v1/resume: the body is optional; if given, {"reason": "..."} (at most
// kMaxOverrideReasonBytes). Returns the reason ("" without a body).
std::string parse_pause_request(std::string_view body);

// GET /v1/decisions?limit=N: N must be an integer in [1, max_limit]; 400 invalid_query else.
std::size_t parse_decision_limit(std::string_view text, std::size_t max_limit);

}  // namespace lagpilot
