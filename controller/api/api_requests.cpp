#include "controller/api/api_requests.h"

#include <charconv>
#include <initializer_list>
#include <system_error>
#include <utility>

#include "policies/policy_factory.h"

namespace lagpilot {
namespace {

// Rejects keys outside `known` before any value is checked, so that a misspelt key is named
// even when another field is also wrong.
void reject_unknown_keys(const nlohmann::json& body, std::initializer_list<const char*> known) {
  for (auto it = body.begin(); it != body.end(); ++it) {
    bool found = false;
    for (const char* k : known) found = found || it.key() == k;
    if (!found) throw ConfigError(it.key(), "unknown key");
  }
}

void require(const JsonObjectReader& r, const std::string& key) {
  if (!r.has(key)) throw ApiError{422, "missing_field", key + ": required", key};
}

// Runs a validation step, turning its ConfigError into the ApiError the server answers with.
template <class Fn>
auto validated(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const ConfigError& e) {
    throw api_error_from(e);
  }
}

}  // namespace

ApiError api_error_from(const ConfigError& error) {
  const std::string& path = error.path();
  if (path.find('\0') != std::string::npos) {
    // what() is a C string and stops at the NUL, leaving an empty message (found by
    // api_body_fuzzer: {"\u0000x": 1}). Only an unknown key can bring a NUL into a path:
    // known keys have none.
    std::string shown;
    for (char c : path) shown += c == '\0' ? std::string("\\u0000") : std::string(1, c);
    return {422, "unknown_field", shown + ": unknown key", path};
  }
  const std::string what = error.what();
  const std::string unknown = "unknown key";
  const bool is_unknown = what.size() >= unknown.size() &&
                          what.compare(what.size() - unknown.size(), unknown.size(), unknown) == 0;
  return {422, is_unknown ? "unknown_field" : "invalid_field", what, error.path()};
}

nlohmann::json parse_api_object_body(std::string_view body) {
  if (body.size() > kMaxApiBodyBytes) {
    throw ApiError{413, "payload_too_large",
                   "request body above " + std::to_string(kMaxApiBodyBytes) + " bytes", ""};
  }
  if (body.empty()) throw ApiError{400, "invalid_body", "a JSON object body is required", ""};
  nlohmann::json parsed;
  try {
    // Nesting is bounded: copying a 64 KiB body of 32,000 nested arrays recursed deep enough to
    // overflow the stack under AddressSanitizer (found by fuzzing, kept in
    // fuzz/regressions/api_body_fuzzer).
    parsed = nlohmann::json::parse(
        body, [](int depth, nlohmann::json::parse_event_t, const nlohmann::json&) {
          if (depth > kMaxApiBodyDepth) {
            throw ApiError{400, "invalid_json",
                           "malformed JSON: nested deeper than " +
                               std::to_string(kMaxApiBodyDepth) + " levels",
                           ""};
          }
          return true;
        });
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and also out_of_range for a number beyond double ("1e999"): found by
    // api_body_fuzzer; it used to escape as a 500.
    throw ApiError{400, "invalid_json", std::string("malformed JSON: ") + e.what(), ""};
  }
  if (!parsed.is_object()) {
    throw ApiError{400, "invalid_body",
                   std::string("the body must be a JSON object, got ") + parsed.type_name(), ""};
  }
  return parsed;
}

OverrideRequest parse_override_request(std::string_view body, const GuardConfig& guards) {
  const nlohmann::json object = parse_api_object_body(body);
  return validated([&] {
    reject_unknown_keys(object, {"workers", "ttl_seconds", "reason"});
    JsonObjectReader r(object, "");
    require(r, "workers");
    OverrideRequest request;
    r.read("workers", request.workers, guards.hard_min_workers, guards.hard_max_workers);
    r.read("ttl_seconds", request.ttl_seconds, 0.0, kMaxOverrideTtlSeconds);
    if (!(request.ttl_seconds > 0)) throw ConfigError("ttl_seconds", "must be > 0");
    r.read("reason", request.reason);
    if (request.reason.size() > kMaxOverrideReasonBytes) {
      throw ConfigError("reason", "at most " + std::to_string(kMaxOverrideReasonBytes) + " bytes");
    }
    r.finish();
    return request;
  });
}

BoundsRequest parse_bounds_request(std::string_view body, const GuardConfig& guards) {
  const nlohmann::json object = parse_api_object_body(body);
  return validated([&] {
    reject_unknown_keys(object, {"min", "max"});
    JsonObjectReader r(object, "");
    if (!r.has("min") && !r.has("max")) {
      throw ApiError{422, "missing_field", "give min, max or both", "min"};
    }
    BoundsRequest request{guards.min_workers, guards.max_workers};
    r.read("min", request.min_workers, guards.hard_min_workers, guards.hard_max_workers);
    r.read("max", request.max_workers, guards.hard_min_workers, guards.hard_max_workers);
    r.finish();
    if (request.min_workers > request.max_workers) {
      throw ConfigError(r.has("min") ? "min" : "max",
                        "min (" + std::to_string(request.min_workers) + ") must be <= max (" +
                            std::to_string(request.max_workers) + ")");
    }
    return request;
  });
}

PolicyRequest parse_policy_request(std::string_view body) {
  const nlohmann::json object = parse_api_object_body(body);
  return validated([&] {
    reject_unknown_keys(object, {"name", "params"});
    JsonObjectReader r(object, "");
    require(r, "name");
    PolicyRequest request;
    r.read("name", request.name);
    const nlohmann::json* raw_params = r.raw("params");
    r.finish();
    const nlohmann::json params = raw_params ? *raw_params : nlohmann::json::object();
    request.policy = make_policy(request.name, params, "params");
    return request;
  });
}

std::string parse_pause_request(std::string_view body) {
  if (body.empty()) return "";
  const nlohmann::json object = parse_api_object_body(body);
  return validated([&] {
    reject_unknown_keys(object, {"reason"});
    JsonObjectReader r(object, "");
    std::string reason;
    r.read("reason", reason);
    r.finish();
    if (reason.size() > kMaxOverrideReasonBytes) {
      throw ConfigError("reason", "at most " + std::to_string(kMaxOverrideReasonBytes) + " bytes");
    }
    return reason;
  });
}

std::size_t parse_decision_limit(std::string_view text, std::size_t max_limit) {
  std::size_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || ptr != end || value < 1 || value > max_limit) {
    throw ApiError{400, "invalid_query",
                   "limit: must be an integer between 1 and " + std::to_string(max_limit) +
                       ", got \"" + std::string(text) + "\"",
                   "limit"};
  }
  return value;
}

}  // namespace lagpilot
