// The control API's body parsers without a server (controller/api_requests.h). The server's
// answers built on them are covered by http_api_test.cpp.
#include "controller/api/api_requests.h"

#include <gtest/gtest.h>

#include <string>

namespace lagpilot {
namespace {

// The ApiError that `fn` throws (a test failure and a default ApiError if none).
template <class Fn>
ApiError error_of(Fn&& fn) {
  try {
    fn();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no ApiError";
  return {};
}

TEST(ApiRequests, ObjectBodyErrors) {
  EXPECT_EQ(error_of([] { parse_api_object_body(""); }).code, "invalid_body");
  EXPECT_EQ(error_of([] { parse_api_object_body("[1]"); }).code, "invalid_body");
  const ApiError malformed = error_of([] { parse_api_object_body("{\"a\": "); });
  EXPECT_EQ(malformed.status, 400);
  EXPECT_EQ(malformed.code, "invalid_json");
  const ApiError big =
      error_of([] { parse_api_object_body(std::string(kMaxApiBodyBytes + 1, ' ')); });
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(big.code, "payload_too_large");
  EXPECT_TRUE(parse_api_object_body("{\"a\": 1}").is_object());
}

// Found by api_body_fuzzer (inputs kept in fuzz/regressions/api_body_fuzzer).
TEST(ApiRequests, FuzzFindings) {
  // A number beyond double is nlohmann's out_of_range, not a parse_error: it escaped as a 500.
  const ApiError overflow = error_of([] { parse_api_object_body(R"({"workers": 1e999})"); });
  EXPECT_EQ(overflow.status, 400);
  EXPECT_EQ(overflow.code, "invalid_json");
  EXPECT_NE(overflow.message.find("number overflow"), std::string::npos) << overflow.message;

  // 32,000 nested arrays in a 64 KiB body overflowed the stack (under ASan) when copied.
  const auto nested = [](int depth) {
    return R"({"name": "pid", "params": )" + std::string(depth, '[') + std::string(depth, ']') +
           "}";
  };
  const ApiError deep = error_of([&] { parse_api_object_body(nested(32000)); });
  EXPECT_EQ(deep.status, 400);
  EXPECT_EQ(deep.code, "invalid_json");
  EXPECT_NE(deep.message.find("nested deeper than 64 levels"), std::string::npos) << deep.message;
  // The limit counts the arrays and objects inside the top-level object.
  EXPECT_TRUE(parse_api_object_body(nested(kMaxApiBodyDepth)).is_object());
  EXPECT_EQ(error_of([&] { parse_api_object_body(nested(kMaxApiBodyDepth + 1)); }).code,
            "invalid_json");

  // A NUL in an unknown key cut ConfigError::what() short: empty message, wrong code.
  const GuardConfig guards;
  const ApiError top =
      error_of([&] { parse_override_request(R"({"workers": 8, "\u0000conds": 1})", guards); });
  EXPECT_EQ(top.code, "unknown_field");
  EXPECT_EQ(top.message, "\\u0000conds: unknown key");
  EXPECT_EQ(top.field, std::string("\0conds", 6));
  const ApiError param =
      error_of([] { parse_policy_request(R"({"name": "pid", "params": {"kp\u0000": 1}})"); });
  EXPECT_EQ(param.code, "unknown_field");
  EXPECT_EQ(param.message, "params.kp\\u0000: unknown key");
}

TEST(ApiRequests, Override) {
  const GuardConfig guards;  // hard limits [1, 64]
  const OverrideRequest r =
      parse_override_request(R"({"workers": 8, "ttl_seconds": 30, "reason": "x"})", guards);
  EXPECT_EQ(r.workers, 8);
  EXPECT_EQ(r.ttl_seconds, 30);
  EXPECT_EQ(r.reason, "x");
  EXPECT_EQ(parse_override_request(R"({"workers": 8})", guards).ttl_seconds,
            kDefaultOverrideTtlSeconds);

  const ApiError missing = error_of([&] { parse_override_request("{}", guards); });
  EXPECT_EQ(missing.status, 422);
  EXPECT_EQ(missing.code, "missing_field");
  EXPECT_EQ(missing.field, "workers");
  const ApiError high = error_of([&] { parse_override_request(R"({"workers": 65})", guards); });
  EXPECT_EQ(high.code, "invalid_field");
  EXPECT_EQ(high.field, "workers");
  const ApiError ttl =
      error_of([&] { parse_override_request(R"({"workers": 8, "ttl_seconds": 0})", guards); });
  EXPECT_EQ(ttl.field, "ttl_seconds");
  // A misspelt key is named even when another field is also wrong.
  const ApiError unknown =
      error_of([&] { parse_override_request(R"({"workers": -1, "ttl": 5})", guards); });
  EXPECT_EQ(unknown.code, "unknown_field");
  EXPECT_EQ(unknown.field, "ttl");
  const std::string long_reason = std::string(kMaxOverrideReasonBytes + 1, 'r');
  EXPECT_EQ(error_of([&] {
              parse_override_request(R"({"workers": 8, "reason": ")" + long_reason + "\"}", guards);
            }).field,
            "reason");
}

TEST(ApiRequests, Bounds) {
  GuardConfig guards;
  guards.min_workers = 4;
  guards.max_workers = 16;
  const BoundsRequest only_max = parse_bounds_request(R"({"max": 10})", guards);
  EXPECT_EQ(only_max.min_workers, 4);  // kept
  EXPECT_EQ(only_max.max_workers, 10);
  const ApiError none = error_of([&] { parse_bounds_request("{}", guards); });
  EXPECT_EQ(none.code, "missing_field");
  const ApiError inverted = error_of([&] { parse_bounds_request(R"({"min": 20})", guards); });
  EXPECT_EQ(inverted.code, "invalid_field");
  EXPECT_EQ(inverted.field, "min");
  EXPECT_NE(inverted.message.find("min (20) must be <= max (16)"), std::string::npos);
  EXPECT_EQ(error_of([&] { parse_bounds_request(R"({"max": 0})", guards); }).field, "max");
}

TEST(ApiRequests, Policy) {
  PolicyRequest r = parse_policy_request(R"({"name": "static", "params": {"workers": 6}})");
  ASSERT_NE(r.policy, nullptr);
  EXPECT_EQ(r.name, "static");
  EXPECT_EQ(r.policy->params()["workers"], 6);
  EXPECT_NE(parse_policy_request(R"({"name": "pid"})").policy, nullptr);  // params optional
  const ApiError bad_param =
      error_of([] { parse_policy_request(R"({"name": "pid", "params": {"kp": -1}})"); });
  EXPECT_EQ(bad_param.status, 422);
  EXPECT_EQ(bad_param.field, "params.kp");
  EXPECT_EQ(error_of([] { parse_policy_request(R"({"name": "nope"})"); }).field, "name");
  EXPECT_EQ(error_of([] { parse_policy_request(R"({"params": {}})"); }).code, "missing_field");
}

TEST(ApiRequests, PauseAndLimit) {
  EXPECT_EQ(parse_pause_request(""), "");
  EXPECT_EQ(parse_pause_request(R"({"reason": "deploy"})"), "deploy");
  EXPECT_EQ(error_of([] { parse_pause_request(R"({"why": 1})"); }).code, "unknown_field");

  EXPECT_EQ(parse_decision_limit("7", 100), 7u);
  EXPECT_EQ(parse_decision_limit("100", 100), 100u);
  for (const char* bad : {"", "0", "101", "-1", "7x", " 7", "99999999999999999999999"}) {
    const ApiError e = error_of([&] { parse_decision_limit(bad, 100); });
    EXPECT_EQ(e.code, "invalid_query") << bad;
    EXPECT_EQ(e.field, "limit") << bad;
  }
}

}  // namespace
}  // namespace lagpilot
