// The HTTP control API against a real ControlLoop with a fake sampler/actuator and a manual
// clock, through httplib::Client on 127.0.0.1 (ephemeral port). No Kafka, no sleeps.
#include "controller/api/http_api.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include "controller/api/bearer_token.h"
#include "controller/metrics/metrics.h"
#include "policies/policy_factory.h"

namespace lagpilot {
namespace {

constexpr const char* kToken = "s3cret-token";

// Lag set by the test (two partitions); current workers = the actuator's size.
struct FakeSampler : Sampler {
  int64_t lag = 1000;
  const int* workers = nullptr;
  Observation sample(double now) override {
    Observation o;
    o.time = now;
    o.total_lag = lag;
    o.partition_lag = {{"events", 0, lag / 2}, {"events", 1, lag - lag / 2}};
    o.arrival_rate = 300;
    o.processed_rate = 250;
    o.latency_p50 = 0.005;
    o.latency_p99 = 0.02;
    o.current_workers = *workers;
    o.busy_workers = 3.5;
    o.queue_depth = 40;
    o.queue_capacity = 100;
    o.assigned_partitions = 2;
    return o;
  }
};

struct FakeActuator : Actuator {
  int workers = 4;
  void resize(int n) override { workers = n; }
};

struct Reply {
  int status = 0;
  std::string body;
  nlohmann::json json;  // null when the body is not JSON
  httplib::Headers headers;
};

class HttpApiTest : public ::testing::Test {
 protected:
  HttpApiTest() {
    sampler.workers = &actuator.workers;
    guards.min_workers = 2;
    guards.max_workers = 16;
    guards.hard_min_workers = 1;
    guards.hard_max_workers = 32;
    guards.scale_down_window_seconds = 0;
    controller = std::make_unique<ControlLoop>(sampler, actuator,
                                               make_policy("static", {{"workers", 6}}), guards);
  }

  // Starts the API with the default test context, after `customize` edits it.
  void start(const std::function<void(ApiContext&)>& customize = {}) {
    ApiContext ctx(*controller, clock);
    ctx.token = kToken;
    ctx.status_tick_extra = [] { return nlohmann::json{{"paused_partitions", {1}}}; };
    ctx.set_paused = [this](bool paused) {
      std::lock_guard lock(pause_mutex);
      pause_calls.push_back(paused);
    };
    ctx.metrics_text = [this] { return metrics.render(); };
    if (customize) customize(ctx);
    api = std::make_unique<HttpApi>(ctx);
    ASSERT_TRUE(api->start("127.0.0.1", 0));
    ASSERT_GT(api->port(), 0);
  }

  Decision tick() {
    const Decision d = controller->tick(clock.now());
    TickReport report;
    report.observation = *controller->last_observation();
    report.decision = d;
    metrics.record_tick(report, controller->guard_config(),
                        controller->active_override(clock.now()).has_value(), 0.001, 1.7e9);
    if (api) api->publish_status();  // as the owner does after each tick
    return d;
  }

  Reply call(const std::string& method, const std::string& path, const std::string& body = "",
             std::optional<std::string> authorization = std::string("Bearer ") + kToken) {
    httplib::Client client("127.0.0.1", api->port());
    client.set_connection_timeout(5, 0);
    client.set_read_timeout(10, 0);
    httplib::Request req;
    req.method = method;
    req.path = path;
    req.body = body;
    if (!body.empty()) req.set_header("Content-Type", "application/json");
    if (authorization) req.set_header("Authorization", *authorization);
    httplib::Result result = client.send(req);
    Reply reply;
    if (!result) {
      ADD_FAILURE() << method << " " << path << ": " << httplib::to_string(result.error());
      return reply;
    }
    reply.status = result->status;
    reply.body = result->body;
    reply.headers = result->headers;
    reply.json = nlohmann::json::parse(result->body, nullptr, false);
    if (reply.json.is_discarded()) reply.json = nullptr;
    return reply;
  }

  Reply put(const std::string& path, const nlohmann::json& body) {
    return call("PUT", path, body.dump());
  }
  Reply get(const std::string& path) { return call("GET", path, "", std::nullopt); }

  static std::string error_code(const Reply& r) {
    return r.json.is_object() && r.json.contains("error") ? r.json["error"].value("code", "") : "";
  }
  static std::string error_field(const Reply& r) {
    return r.json.is_object() && r.json.contains("error") ? r.json["error"].value("field", "") : "";
  }

  ManualClock clock{100.0};
  FakeActuator actuator;
  FakeSampler sampler;
  GuardConfig guards;
  std::unique_ptr<ControlLoop> controller;
  RuntimeMetrics metrics{std::make_shared<prometheus::Registry>()};
  std::mutex pause_mutex;
  std::vector<bool> pause_calls;  // guarded by pause_mutex
  std::unique_ptr<HttpApi> api;
};

TEST_F(HttpApiTest, HealthzAnswersOk) {
  start();
  const Reply r = get("/healthz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json, (nlohmann::json{{"status", "ok"}}));
}

TEST_F(HttpApiTest, ReadyzByDefaultWaitsForTheFirstTick) {
  start();
  Reply r = get("/readyz");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.json["ready"], false);
  EXPECT_FALSE(r.json.value("reason", "").empty());
  tick();
  r = get("/readyz");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json["ready"], true);
}

TEST_F(HttpApiTest, ReadyzFollowsTheRuntimesCallback) {
  std::atomic<bool> assigned{false};
  start([&](ApiContext& ctx) {
    ctx.ready = [&] {
      return assigned.load() ? Readiness{true, ""} : Readiness{false, "no partitions assigned"};
    };
  });
  Reply r = get("/readyz");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.json["reason"], "no partitions assigned");
  assigned = true;
  r = get("/readyz");
  EXPECT_EQ(r.status, 200);
  assigned = false;
  EXPECT_EQ(get("/readyz").status, 503);
}

TEST_F(HttpApiTest, MetricsPageHasEveryMetricWithHelpAndParses) {
  start();
  tick();
  const Reply r = get("/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json, nullptr);
  const auto type = r.headers.find("Content-Type");
  ASSERT_NE(type, r.headers.end());
  EXPECT_EQ(type->second.rfind("text/plain; version=0.0.4", 0), 0u) << type->second;
  for (const std::string& name : RuntimeMetrics::metric_names()) {
    EXPECT_NE(r.body.find("# HELP " + name + " "), std::string::npos) << name;
  }
  const std::regex sample_line(
      R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? [-+]?([0-9.eE+-]+|Inf|NaN)$)");
  std::istringstream in(r.body);
  std::string line;
  int samples = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_TRUE(std::regex_match(line, sample_line)) << line;
    ++samples;
  }
  EXPECT_GT(samples, 20);
  EXPECT_NE(r.body.find("lagpilot_policy_info{policy=\"static\"} 1"), std::string::npos);
  EXPECT_NE(r.body.find("lagpilot_consumer_total_lag 1000"), std::string::npos);
}

TEST_F(HttpApiTest, PacingServesTheRecommendationWithItsSourceAndAge) {
  start([this](ApiContext& ctx) {
    ctx.pacing = [this] { return pacing_json(metrics.pacing(), 1.7e9 + 3); };
  });
  Reply r = get("/v1/pacing");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.json["rate"].is_null());  // nothing measured before the first tick
  EXPECT_EQ(r.json["source"], "none");
  tick();  // 250/s processed by 3.5 busy workers, max 16, below max: the per-worker estimate
  r = get("/v1/pacing");
  ASSERT_EQ(r.status, 200) << r.body;
  const double sustainable = 250.0 / 3.5 * 16;
  EXPECT_EQ(r.json["source"], "per_worker_estimate");
  EXPECT_NEAR(r.json["rate"].get<double>(), sustainable * 0.75, 1e-9);
  EXPECT_DOUBLE_EQ(r.json["burst"].get<double>(), std::ceil(sustainable * 0.25));
  EXPECT_DOUBLE_EQ(r.json["age_seconds"].get<double>(), 3);
  EXPECT_EQ(call("PUT", "/v1/pacing", "{}").status, 405);
}

TEST_F(HttpApiTest, PacingWithoutASourceIsNotFound) {
  start();
  const Reply r = get("/v1/pacing");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(error_code(r), "not_found");
}

TEST_F(HttpApiTest, MetricsWithoutASourceIsNotFound) {
  start([](ApiContext& ctx) { ctx.metrics_text = {}; });
  const Reply r = get("/metrics");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(error_code(r), "not_found");
}

TEST_F(HttpApiTest, StatusReportsWorkersPolicyDecisionLagAndRuntime) {
  start();
  Reply r = get("/v1/status");  // before any tick: nulls, but a valid document
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(r.json["last_decision"].is_null());
  EXPECT_TRUE(r.json["workers"]["desired"].is_null());

  tick();
  r = get("/v1/status");
  ASSERT_EQ(r.status, 200);
  const nlohmann::json& s = r.json;
  EXPECT_EQ(s["workers"]["current"], 4);
  EXPECT_EQ(s["workers"]["desired"], 6);
  EXPECT_EQ(s["workers"]["proposed"], 6);
  EXPECT_EQ(s["workers"]["busy"], 3.5);
  EXPECT_EQ(s["workers"]["min"], 2);
  EXPECT_EQ(s["workers"]["max"], 16);
  EXPECT_EQ(s["workers"]["hard_max"], 32);
  EXPECT_EQ(s["policy"]["name"], "static");
  EXPECT_EQ(s["policy"]["params"]["workers"], 6);
  EXPECT_EQ(s["last_decision"]["workers"], 6);
  EXPECT_EQ(s["last_decision"]["source"], "policy");
  EXPECT_FALSE(s["last_decision"]["reason"].get<std::string>().empty());
  EXPECT_EQ(s["lag"]["total"], 1000);
  ASSERT_EQ(s["lag"]["partitions"].size(), 2u);
  EXPECT_EQ(s["lag"]["partitions"][1]["lag"], 500);
  EXPECT_EQ(s["rates"]["arrival_messages_per_second"], 300);
  EXPECT_EQ(s["rates"]["processed_messages_per_second"], 250);
  EXPECT_EQ(s["latency_seconds"]["p99"], 0.02);
  EXPECT_EQ(s["queue"]["depth"], 40);
  EXPECT_EQ(s["queue"]["capacity"], 100);
  EXPECT_EQ(s["operator_paused"], false);
  EXPECT_TRUE(s["override"].is_null());
  EXPECT_EQ(s["runtime"]["paused_partitions"], nlohmann::json::array({1}));
  EXPECT_EQ(s["time"], 100.0);

  ASSERT_EQ(put("/v1/override", {{"workers", 9}, {"ttl_seconds", 120}, {"reason", "drill"}}).status,
            200);
  clock.advance(20);
  r = get("/v1/status");
  EXPECT_EQ(r.json["override"]["workers"], 9);
  EXPECT_EQ(r.json["override"]["reason"], "drill");
  EXPECT_DOUBLE_EQ(r.json["override"]["expires_at"].get<double>(), 220.0);
  EXPECT_DOUBLE_EQ(r.json["override"]["expires_in_seconds"].get<double>(), 100.0);
}

// The served text is the published tick part with the live part spliced in: it must be the
// document built now, member for member, once the tick, an override, a pause and bounds have
// changed it.
TEST_F(HttpApiTest, PublishedStatusIsTheDocumentBuiltNow) {
  start([](ApiContext& ctx) {
    ctx.status_tick_extra = [] {
      return nlohmann::json{{"a_tick", 1}, {"shared", "tick"}, {"z_tick", {1, 2}}};
    };
    ctx.status_live_extra = [] { return nlohmann::json{{"m_live", true}, {"shared", "live"}}; };
  });
  tick();
  clock.advance(3);
  ASSERT_EQ(put("/v1/override", {{"workers", 9}, {"ttl_seconds", 60}}).status, 200);
  ASSERT_EQ(call("POST", "/v1/pause", "{}").status, 200);
  ASSERT_EQ(put("/v1/bounds", {{"min", 3}, {"max", 12}}).status, 200);
  clock.advance(2);
  const Reply r = get("/v1/status");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json, api->status());
  EXPECT_EQ(r.body, api->status().dump());  // the same bytes: members in key order
  EXPECT_EQ(r.json["runtime"]["shared"], "live");
  EXPECT_EQ(r.json["workers"]["max"], 12);  // the mutation re-published the tick part
  EXPECT_EQ(r.json["time"], 105.0);         // live: not the tick's time
}

// Between ticks the tick part is the last tick's: reading the status neither ticks nor resets.
TEST_F(HttpApiTest, StatusServesTheLastPublishedTick) {
  start();
  tick();
  EXPECT_EQ(get("/v1/status").json["ticks"], 1);
  controller->tick(clock.now());  // a tick the owner has not published yet
  EXPECT_EQ(get("/v1/status").json["ticks"], 1);
  api->publish_status();
  EXPECT_EQ(get("/v1/status").json["ticks"], 2);
  EXPECT_EQ(get("/v1/status").json["ticks"], 2);
}

// A tick part that cannot be published is withdrawn, not left stale: requests build the whole
// document and answer its error until a publish succeeds again.
TEST_F(HttpApiTest, AFailedPublishIsNotServedAsCurrent) {
  std::atomic<bool> broken{false};
  start([&broken](ApiContext& ctx) {
    ctx.status_tick_extra = [&broken] {
      if (broken.load()) throw std::runtime_error("partitions unreadable");
      return nlohmann::json{{"ok", true}};
    };
  });
  tick();
  EXPECT_EQ(get("/v1/status").status, 200);
  broken.store(true);
  tick();
  Reply r = get("/v1/status");
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("partitions unreadable"), std::string::npos);
  broken.store(false);
  tick();
  r = get("/v1/status");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json["ticks"], 3);
}

TEST_F(HttpApiTest, DecisionsReturnsTheMostRecentWithAllFields) {
  start();
  for (int i = 0; i < 3; ++i) {
    tick();
    clock.advance(1);
  }
  ASSERT_EQ(put("/v1/bounds", {{"min", 3}, {"max", 12}}).status, 200);
  Reply r = get("/v1/decisions");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.json["count"], 4);
  ASSERT_EQ(r.json["decisions"].size(), 4u);
  const nlohmann::json& first = r.json["decisions"][0];
  EXPECT_EQ(first["time"], 100.0);
  EXPECT_EQ(first["policy"], "static");
  EXPECT_EQ(first["policy_workers"], 6);
  EXPECT_EQ(first["workers"], 6);
  EXPECT_EQ(first["previous_workers"], 4);
  EXPECT_EQ(first["source"], "policy");
  EXPECT_TRUE(first["guards"].is_array());
  EXPECT_TRUE(first["reason"].is_string());
  const nlohmann::json& last = r.json["decisions"][3];  // newest last
  EXPECT_EQ(last["source"], "api");
  EXPECT_NE(last["reason"].get<std::string>().find("bounds"), std::string::npos);

  r = get("/v1/decisions?limit=2");
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(r.json["decisions"].size(), 2u);
  EXPECT_EQ(r.json["decisions"][1]["source"], "api");
  EXPECT_EQ(r.json["decisions"][0]["time"], 102.0);

  EXPECT_EQ(get("/v1/decisions?limit=1000").status, 200);
  for (const char* bad : {"0", "-1", "abc", "1001", "", "5x", "99999999999999999999999"}) {
    r = get(std::string("/v1/decisions?limit=") + bad);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(error_code(r), "invalid_query") << bad;
    EXPECT_EQ(error_field(r), "limit") << bad;
  }
}

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

// Issue #4: every mutation appears in the decision log with source "api", at the clock's time.
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

TEST(HttpApiAuth, ConstantTimeEqualCompares) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abd", "abc"));
  EXPECT_FALSE(constant_time_equal("ab", "abc"));
  EXPECT_FALSE(constant_time_equal("abcabc", "abc"));
  EXPECT_FALSE(constant_time_equal("", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", ""));
  EXPECT_TRUE(constant_time_equal("", ""));
}

TEST(HttpApiConfigTest, ReadsDefaultsAndRejectsBadValues) {
  const HttpApiConfig defaults = HttpApiConfig::from_json(nlohmann::json::object());
  EXPECT_TRUE(defaults.enabled);
  EXPECT_EQ(defaults.host, "127.0.0.1");
  const HttpApiConfig c = HttpApiConfig::from_json({{"port", 0}, {"host", "0.0.0.0"}});
  EXPECT_EQ(c.port, 0);
  EXPECT_EQ(c.host, "0.0.0.0");
  EXPECT_EQ(HttpApiConfig::from_json(c.to_json()).to_json(), c.to_json());
  try {
    HttpApiConfig::from_json({{"port", 70000}});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "http.port");
  }
  try {
    HttpApiConfig::from_json({{"tokn_env", "X"}});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "http.tokn_env");
  }
  HttpApiConfig env;
  env.token_env = "LAGPILOT_HTTP_API_TEST_TOKEN";
  ::setenv(env.token_env.c_str(), "abc", 1);
  EXPECT_EQ(env.token_from_env(), "abc");
  ::unsetenv(env.token_env.c_str());
  EXPECT_EQ(env.token_from_env(), "");
}

}  // namespace
}  // namespace lagpilot
