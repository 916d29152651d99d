#pragma once
// The HTTP control API's test fixture: a real ControlLoop with a fake sampler and actuator and a
// manual clock, the API started on 127.0.0.1 (ephemeral port), and httplib::Client calls.
// Shared by http_api_test.cpp (the read endpoints) and http_api_mutations_test.cpp.

#include <gtest/gtest.h>
#include <httplib.h>

#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "controller/api/http_api.h"
#include "controller/metrics/metrics.h"
#include "policies/policy_factory.h"

namespace lagpilot::api_testing {

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

}  // namespace lagpilot::api_testing
