// The HTTP control API's mutations (override, bounds, policy, pause and resume): validation,
// the decision log, the bearer token, bad bodies and failing callbacks, against a real
// ControlLoop with a fake sampler/actuator and a manual clock (http_api_fixture.h).
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "controller/api/http_api.h"
#include "tests/controller/http_api_fixture.h"

namespace lagpilot {
namespace {

using api_testing::HttpApiTest;
using api_testing::kToken;
using api_testing::Reply;

TEST_F(HttpApiTest, OverridePinsTheSizeAndExpiresWithTheClock) {
  start();
  tick();
  ASSERT_EQ(actuator.workers, 6);
  Reply r = put("/v1/override", {{"workers", 12}, {"ttl_seconds", 60}, {"reason", "drill"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["override"]["workers"], 12);
  EXPECT_DOUBLE_EQ(r.json["override"]["expires_at"].get<double>(), 160.0);
  EXPECT_EQ(actuator.workers, 6);  // takes effect at the next tick

  clock.advance(1);
  Decision d = tick();
  EXPECT_EQ(actuator.workers, 12);
  EXPECT_EQ(d.source, "override");
  EXPECT_EQ(d.policy_workers, 6);

  clock.advance(58);  // t = 159: still pinned
  tick();
  EXPECT_EQ(actuator.workers, 12);

  clock.advance(2);  // t = 161: past the TTL
  d = tick();
  EXPECT_EQ(actuator.workers, 6);
  EXPECT_EQ(d.source, "policy");
  EXPECT_TRUE(get("/v1/status").json["override"].is_null());

  // The pin was logged with source "api".
  bool logged = false;
  for (const Decision& x : controller->recent_decisions(100)) {
    logged = logged || (x.source == "api" && x.reason.find("drill") != std::string::npos);
  }
  EXPECT_TRUE(logged);
  EXPECT_NE(
      metrics.render().find("lagpilot_scale_events_total{direction=\"up\",source=\"override\"} 1"),
      std::string::npos);
}

TEST_F(HttpApiTest, OverrideTtlDefaultsToTenMinutes) {
  start();
  const Reply r = put("/v1/override", {{"workers", 3}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_DOUBLE_EQ(r.json["override"]["expires_in_seconds"].get<double>(), 600.0);
  clock.advance(599);
  tick();
  EXPECT_EQ(actuator.workers, 3);
  clock.advance(1);
  tick();
  EXPECT_EQ(actuator.workers, 6);
}

TEST_F(HttpApiTest, DeleteOverrideClearsThePin) {
  start();
  ASSERT_EQ(put("/v1/override", {{"workers", 20}}).status, 200);
  tick();
  EXPECT_EQ(actuator.workers, 20);  // pins may exceed the soft bounds, within the hard limits
  Reply r = call("DELETE", "/v1/override");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json["cleared"], true);
  clock.advance(1);
  tick();
  EXPECT_EQ(actuator.workers, 6);
  r = call("DELETE", "/v1/override");  // idempotent
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json["cleared"], false);
}

TEST_F(HttpApiTest, OverrideRejectsBadFieldsNamingThem) {
  start();
  struct Case {
    nlohmann::json body;
    std::string code;
    std::string field;
  };
  const std::vector<Case> cases = {
      {{{"workers", 33}}, "invalid_field", "workers"},  // above hard max 32
      {{{"workers", 0}}, "invalid_field", "workers"},
      {{{"workers", 2.5}}, "invalid_field", "workers"},
      {{{"workers", "eight"}}, "invalid_field", "workers"},
      {{{"workers", 8}, {"ttl_seconds", 0}}, "invalid_field", "ttl_seconds"},
      {{{"workers", 8}, {"ttl_seconds", -5}}, "invalid_field", "ttl_seconds"},
      {{{"workers", 8}, {"ttl_seconds", 7 * 86400 + 1}}, "invalid_field", "ttl_seconds"},
      {{{"workers", 8}, {"ttl_seconds", "600"}}, "invalid_field", "ttl_seconds"},
      {{{"workers", 8}, {"reason", 5}}, "invalid_field", "reason"},
      {{{"workers", 8}, {"reason", std::string(2000, 'x')}}, "invalid_field", "reason"},
      {{{"ttl_seconds", 60}}, "missing_field", "workers"},
      {{{"workers", 8}, {"wrkers", 9}}, "unknown_field", "wrkers"},
      {{{"workers", 99}, {"ttl", 60}}, "unknown_field", "ttl"},  // named before the range error
  };
  for (const Case& c : cases) {
    const Reply r = put("/v1/override", c.body);
    EXPECT_EQ(r.status, 422) << c.body.dump();
    EXPECT_EQ(error_code(r), c.code) << c.body.dump() << " " << r.body;
    EXPECT_EQ(error_field(r), c.field) << c.body.dump() << " " << r.body;
    EXPECT_FALSE(r.json["error"].value("message", "").empty());
  }
  EXPECT_TRUE(put("/v1/override", {{"workers", 7 * 86400}}).status == 422);
  EXPECT_FALSE(controller->active_override(clock.now()).has_value());
  EXPECT_EQ(put("/v1/override", {{"workers", 32}, {"ttl_seconds", 7 * 86400}}).status, 200);
}

TEST_F(HttpApiTest, BoundsChangeTheGuardsWithinTheHardLimits) {
  start();
  Reply r = put("/v1/bounds", {{"min", 8}, {"max", 10}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["bounds"]["min"], 8);
  EXPECT_EQ(controller->guard_config().min_workers, 8);
  EXPECT_EQ(controller->guard_config().max_workers, 10);
  tick();
  EXPECT_EQ(actuator.workers, 8);  // static 6 raised to the new min

  r = put("/v1/bounds", {{"max", 12}});  // min keeps its value
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(controller->guard_config().min_workers, 8);
  EXPECT_EQ(controller->guard_config().max_workers, 12);

  struct Case {
    nlohmann::json body;
    std::string code;
    std::string field;
  };
  const std::vector<Case> cases = {
      {{{"min", 10}, {"max", 4}}, "invalid_field", "min"},
      {{{"min", 13}}, "invalid_field", "min"},  // above the current max 12
      {{{"max", 33}}, "invalid_field", "max"},
      {{{"min", 0}}, "invalid_field", "min"},
      {{{"min", "4"}}, "invalid_field", "min"},
      {nlohmann::json::object(), "missing_field", "min"},
      {{{"min", 4}, {"maximum", 8}}, "unknown_field", "maximum"},
  };
  for (const Case& c : cases) {
    r = put("/v1/bounds", c.body);
    EXPECT_EQ(r.status, 422) << c.body.dump();
    EXPECT_EQ(error_code(r), c.code) << c.body.dump() << " " << r.body;
    EXPECT_EQ(error_field(r), c.field) << c.body.dump() << " " << r.body;
  }
  EXPECT_EQ(controller->guard_config().min_workers, 8);
  EXPECT_EQ(controller->guard_config().max_workers, 12);
}

TEST_F(HttpApiTest, PolicySwapIsValidatedAndTakesEffectOnTheNextTick) {
  start();
  tick();
  ASSERT_EQ(actuator.workers, 6);
  Reply r = put("/v1/policy", {{"name", "static"}, {"params", {{"workers", 10}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["policy"]["params"]["workers"], 10);
  EXPECT_EQ(actuator.workers, 6);  // not before the next tick
  clock.advance(1);
  tick();
  EXPECT_EQ(actuator.workers, 10);

  r = put("/v1/policy", {{"name", "pid"}});  // params default
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(controller->policy_name(), "pid");
  EXPECT_EQ(r.json["policy"]["params"], default_params("pid"));
  EXPECT_EQ(get("/v1/status").json["policy"]["name"], "pid");

  struct Case {
    nlohmann::json body;
    std::string code;
    std::string field;
  };
  const std::vector<Case> cases = {
      {{{"name", "pid"}, {"params", {{"kp", -1}}}}, "invalid_field", "params.kp"},
      {{{"name", "static"}, {"params", {{"bogus", 1}}}}, "unknown_field", "params.bogus"},
      {{{"name", "nope"}}, "invalid_field", "name"},
      {{{"name", 5}}, "invalid_field", "name"},
      {{{"name", "static"}, {"params", 5}}, "invalid_field", "params"},
      {{{"params", nlohmann::json::object()}}, "missing_field", "name"},
      {{{"name", "static"}, {"parameters", nlohmann::json::object()}},
       "unknown_field",
       "parameters"},
  };
  for (const Case& c : cases) {
    r = put("/v1/policy", c.body);
    EXPECT_EQ(r.status, 422) << c.body.dump();
    EXPECT_EQ(error_code(r), c.code) << c.body.dump() << " " << r.body;
    EXPECT_EQ(error_field(r), c.field) << c.body.dump() << " " << r.body;
  }
  EXPECT_EQ(controller->policy_name(), "pid");
}

TEST_F(HttpApiTest, PauseAndResumeCallTheRuntime) {
  start();
  Reply r = call("POST", "/v1/pause");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["paused"], true);
  EXPECT_EQ(get("/v1/status").json["operator_paused"], true);
  r = call("POST", "/v1/resume");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json["paused"], false);
  EXPECT_EQ(get("/v1/status").json["operator_paused"], false);
  std::lock_guard lock(pause_mutex);
  EXPECT_EQ(pause_calls, (std::vector<bool>{true, false}));
}

TEST_F(HttpApiTest, PauseWithoutARuntimeCallbackIsNotSupported) {
  start([](ApiContext& ctx) { ctx.set_paused = {}; });
  const Reply r = call("POST", "/v1/pause");
  EXPECT_EQ(r.status, 501);
  EXPECT_EQ(error_code(r), "not_supported");
}

struct Mutation {
  const char* method;
  const char* path;
  const char* body;
};
const Mutation kMutations[] = {
    {"PUT", "/v1/override", R"({"workers": 8})"},
    {"DELETE", "/v1/override", ""},
    {"PUT", "/v1/bounds", R"({"min": 3})"},
    {"PUT", "/v1/policy", R"({"name": "static", "params": {"workers": 9}})"},
    {"POST", "/v1/pause", ""},
    {"POST", "/v1/resume", ""},
};

// Every mutation appears in the decision log with source "api", at the clock's time.
TEST_F(HttpApiTest, PauseAndResumeAreInTheDecisionLogWithTheirReasons) {
  start();
  tick();
  clock.advance(5);  // t = 105
  Reply r = call("POST", "/v1/pause", R"({"reason": "broker maintenance"})");
  ASSERT_EQ(r.status, 200) << r.body;
  clock.advance(2);                // t = 107
  r = call("POST", "/v1/resume");  // no body: no reason
  ASSERT_EQ(r.status, 200) << r.body;

  r = get("/v1/decisions?limit=3");
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(r.json["decisions"].size(), 3u);
  const nlohmann::json& paused = r.json["decisions"][1];
  EXPECT_EQ(paused["source"], "api");
  EXPECT_EQ(paused["policy"], ControlLoop::kOperatorPolicy);
  EXPECT_EQ(paused["reason"], "paused by api: broker maintenance");
  EXPECT_EQ(paused["time"], 105.0);
  EXPECT_EQ(paused["workers"], 6);  // the size is unchanged
  EXPECT_EQ(paused["previous_workers"], 6);
  const nlohmann::json& resumed = r.json["decisions"][2];
  EXPECT_EQ(resumed["source"], "api");
  EXPECT_EQ(resumed["reason"], "resumed by api");
  EXPECT_EQ(resumed["time"], 107.0);
  // Notes are not decisions: the status still shows the last tick's.
  const Reply status = get("/v1/status");
  EXPECT_EQ(status.json["last_decision"]["source"], "policy");
  EXPECT_EQ(status.json["last_decision"]["time"], 100.0);
  EXPECT_EQ(status.json["workers"]["desired"], 6);
}

TEST_F(HttpApiTest, PauseRejectsABadBodyWithoutPausing) {
  start();
  struct Case {
    std::string body;
    int status;
    std::string code;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"{\"reason\": ", 400, "invalid_json", ""},
      {"[1]", 400, "invalid_body", ""},
      {R"({"reason": 5})", 422, "invalid_field", "reason"},
      {R"({"why": "x"})", 422, "unknown_field", "why"},
      {nlohmann::json{{"reason", std::string(2000, 'x')}}.dump(), 422, "invalid_field", "reason"},
  };
  for (const char* path : {"/v1/pause", "/v1/resume"}) {
    for (const Case& c : cases) {
      const Reply r = call("POST", path, c.body);
      EXPECT_EQ(r.status, c.status) << path << " " << c.body;
      EXPECT_EQ(error_code(r), c.code) << path << " " << c.body << " " << r.body;
      EXPECT_EQ(error_field(r), c.field) << path << " " << c.body;
    }
  }
  std::lock_guard lock(pause_mutex);
  EXPECT_TRUE(pause_calls.empty());
  EXPECT_TRUE(controller->recent_decisions(100).empty());
}

TEST_F(HttpApiTest, RefusedPauseIsNotLogged) {
  start([](ApiContext& ctx) { ctx.set_paused = {}; });
  tick();
  EXPECT_EQ(call("POST", "/v1/pause", R"({"reason": "x"})").status, 501);
  EXPECT_EQ(call("POST", "/v1/pause", "", std::nullopt).status, 401);
  const std::vector<Decision> log = controller->recent_decisions(100);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].source, "policy");
}

TEST_F(HttpApiTest, EveryMutationIsLoggedWithSourceApiAtTheClocksTime) {
  start();
  tick();
  const std::vector<std::pair<Mutation, std::string>> mutations = {
      {{"PUT", "/v1/override", R"({"workers": 8, "reason": "drill"})"}, "override: pin 8"},
      {{"DELETE", "/v1/override", ""}, "override cleared"},
      {{"PUT", "/v1/bounds", R"({"min": 3})"}, "bounds set to [3, 16]"},
      {{"PUT", "/v1/policy", R"({"name": "static", "params": {"workers": 9}})"},
       "policy set to static"},
      {{"POST", "/v1/pause", ""}, "paused by api"},
      {{"POST", "/v1/resume", ""}, "resumed by api"},
  };
  for (const auto& [m, reason] : mutations) {
    clock.advance(10);
    const Reply r = call(m.method, m.path, m.body);
    ASSERT_EQ(r.status, 200) << m.method << " " << m.path << " " << r.body;
    const std::vector<Decision> last = controller->recent_decisions(1);
    ASSERT_EQ(last.size(), 1u);
    EXPECT_EQ(last[0].source, "api") << m.path;
    EXPECT_DOUBLE_EQ(last[0].time, clock.now()) << m.method << " " << m.path;
    EXPECT_EQ(last[0].reason.rfind(reason, 0), 0u) << m.path << ": " << last[0].reason;
  }
}

TEST_F(HttpApiTest, MutationsNeedTheBearerToken) {
  start();
  for (const Mutation& m : kMutations) {
    Reply r = call(m.method, m.path, m.body, std::nullopt);
    EXPECT_EQ(r.status, 401) << m.method << " " << m.path;
    EXPECT_EQ(error_code(r), "unauthorized");
    EXPECT_NE(r.headers.find("WWW-Authenticate"), r.headers.end());
    for (const std::string& header :
         {std::string("Bearer wrong"), std::string("Bearer ") + kToken + "x",
          std::string("Bearer ") + std::string(kToken).substr(1), std::string(kToken),
          std::string("Basic ") + kToken, std::string("Bearer "), std::string("Bearer")}) {
      r = call(m.method, m.path, m.body, header);
      EXPECT_EQ(r.status, 401) << m.method << " " << m.path << " with '" << header << "'";
    }
  }
  // Nothing changed.
  EXPECT_FALSE(controller->active_override(clock.now()).has_value());
  EXPECT_EQ(controller->guard_config().min_workers, 2);
  EXPECT_EQ(controller->policy_params()["workers"], 6);
  {
    std::lock_guard lock(pause_mutex);
    EXPECT_TRUE(pause_calls.empty());
  }
  // The scheme is case-insensitive; the right token works.
  EXPECT_EQ(call("PUT", "/v1/bounds", R"({"min": 3})", std::string("bearer ") + kToken).status,
            200);
}

TEST_F(HttpApiTest, MutationsAreForbiddenWithoutAConfiguredToken) {
  start([](ApiContext& ctx) { ctx.token.clear(); });
  for (const Mutation& m : kMutations) {
    for (const std::optional<std::string>& header :
         {std::optional<std::string>(), std::optional<std::string>("Bearer "),
          std::optional<std::string>(std::string("Bearer ") + kToken)}) {
      const Reply r = call(m.method, m.path, m.body, header);
      EXPECT_EQ(r.status, 403) << m.method << " " << m.path;
      EXPECT_EQ(error_code(r), "forbidden");
    }
  }
  EXPECT_EQ(get("/v1/status").status, 200);  // reads stay open
  EXPECT_FALSE(controller->active_override(clock.now()).has_value());
}

TEST_F(HttpApiTest, MalformedBodiesAreBadRequests) {
  start();
  for (const char* path : {"/v1/override", "/v1/bounds", "/v1/policy"}) {
    for (const std::string body :
         {"{\"workers\": ", "not json", "{\"workers\": 8,}", "[1, 2]", "8", "\"text\"", "null"}) {
      const Reply r = call("PUT", path, body);
      EXPECT_EQ(r.status, 400) << path << " " << body;
      EXPECT_TRUE(error_code(r) == "invalid_json" || error_code(r) == "invalid_body")
          << path << " " << body << " " << r.body;
    }
    const Reply empty = call("PUT", path, "");
    EXPECT_EQ(empty.status, 400) << path;
    EXPECT_EQ(error_code(empty), "invalid_body");
  }
  EXPECT_EQ(get("/healthz").status, 200);
}

TEST_F(HttpApiTest, OversizeBodiesAreRefusedAndTheServerKeepsServing) {
  start();
  nlohmann::json body = {{"workers", 8}, {"reason", std::string(HttpApi::kMaxBodyBytes, 'x')}};
  Reply r = put("/v1/override", body);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(error_code(r), "payload_too_large") << r.body;
  EXPECT_FALSE(controller->active_override(clock.now()).has_value());
  r = call("PUT", "/v1/policy", std::string(HttpApi::kMaxBodyBytes + 1, ' '));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(get("/healthz").status, 200);
  EXPECT_EQ(put("/v1/override", {{"workers", 8}}).status, 200);
}

TEST_F(HttpApiTest, UnknownPathsAndMethodsAnswerJsonErrors) {
  start();
  Reply r = get("/v1/nothing");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(error_code(r), "not_found");
  r = get("/v1/override");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(error_code(r), "method_not_allowed");
  EXPECT_EQ(r.headers.find("Allow")->second, "PUT, DELETE");
  r = call("POST", "/v1/status", "{}");
  EXPECT_EQ(r.status, 405);
}

TEST_F(HttpApiTest, AFailingCallbackIsAnInternalErrorNotACrash) {
  start([](ApiContext& ctx) {
    ctx.status_live_extra = []() -> nlohmann::json { throw std::runtime_error("source gone"); };
  });
  const Reply r = get("/v1/status");
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(error_code(r), "internal");
  EXPECT_EQ(get("/healthz").status, 200);
}

TEST_F(HttpApiTest, StartFailsOnAPortInUseAndStopIsIdempotent) {
  start();
  HttpApi second{ApiContext(*controller, clock)};
  EXPECT_FALSE(second.start("127.0.0.1", api->port()));
  EXPECT_EQ(second.port(), 0);
  EXPECT_FALSE(api->start("127.0.0.1", 0));  // already started
  api->stop();
  api->stop();
  httplib::Client client("127.0.0.1", api->port());
  client.set_connection_timeout(1, 0);
  EXPECT_FALSE(client.Get("/healthz"));
}

// Requests on the server's threads while the control thread ticks (meant for the sanitizer
// builds: the ControlLoop, the metrics and the status snapshot are shared between them).
TEST_F(HttpApiTest, ServesWhileTheControlThreadTicks) {
  start();
  std::atomic<bool> done{false};
  std::thread control([&] {
    for (int i = 0; i < 400 && !done.load(); ++i) {
      clock.advance(1);
      tick();
    }
  });
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(get("/v1/status").status, 200);
    EXPECT_EQ(get("/metrics").status, 200);
    EXPECT_EQ(get("/v1/decisions?limit=50").status, 200);
    EXPECT_EQ(put("/v1/bounds", {{"min", 2 + i % 3}}).status, 200);
    EXPECT_EQ(put("/v1/override", {{"workers", 5 + i % 4}, {"ttl_seconds", 2}}).status, 200);
  }
  done = true;
  control.join();
  EXPECT_GT(controller->ticks(), 0u);
}

}  // namespace
}  // namespace lagpilot
