// The HTTP control API's read endpoints (health, readiness, metrics, pacing, status, decisions),
// its auth helper and its config, against a real ControlLoop with a fake sampler/actuator and a
// manual clock, through httplib::Client on 127.0.0.1 (ephemeral port). No Kafka, no sleeps.
// The mutations are in http_api_mutations_test.cpp.
#include "controller/api/http_api.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "controller/api/bearer_token.h"
#include "tests/controller/http_api_fixture.h"

namespace lagpilot {
namespace {

using api_testing::HttpApiTest;
using api_testing::Reply;

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
