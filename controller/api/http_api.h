#pragma once
// The operator's HTTP surface: a JSON control API and the Prometheus /metrics page on one port
// (cpp-httplib; loopback by default). httplib.h stays out of this header (its <resolv.h> defines
// a macro `_res` that breaks Eigen): only http_api.cpp includes it.
//
// Endpoints (JSON in and out unless noted):
//   GET    /healthz            200 {"status":"ok"} while the server runs
//   GET    /readyz             200 {"ready":true} or 503 {"ready":false,"reason":"..."}
//   GET    /metrics            text/plain; version=0.0.4 (ApiContext::metrics_text)
//   GET    /v1/status          workers, policy, last decision, lag, rates, latency, queue,
//                              override, operator pause, and "runtime"
//                              (ApiContext::status_tick_extra and status_live_extra); see
//                              status_document.h
//   GET    /v1/pacing          the producer pacing recommendation (ApiContext::pacing):
//                              {"rate", "burst", "source", "age_seconds", ...}
//                              (controller/metrics/pacing.h)
//   GET    /v1/decisions?limit=N   the N most recent decision-log entries, oldest first
//                              (default 100, 1 <= N <= decision_history)
//   PUT    /v1/override        {"workers": 8, "ttl_seconds": 600, "reason": "..."}
//   DELETE /v1/override
//   PUT    /v1/bounds          {"min": 4, "max": 16} (either may be omitted: it keeps its value)
//   PUT    /v1/policy          {"name": "pid", "params": {...}}: validated like the config file
//                              (make_policy); the controller uses it from its next tick
//   POST   /v1/pause, /v1/resume   operator pause of consumption (ApiContext::set_paused); an
//                              optional body {"reason": "..."} goes into the log and the
//                              decision log
//
// Mutations (PUT, DELETE, POST) need `Authorization: Bearer <token>`; the token is compared in
// constant time. 401 when the header is missing or wrong, 403 when no token is configured (the
// API is then read-only). Every mutation is logged with spdlog; override, bounds and policy
// changes also land in the controller's decision log with source "api".
//
// Errors are {"error": {"code": "...", "message": "...", "field": "..."}} ("field" only when one
// field is at fault, as a JSON path into the request body, e.g. "params.kp"):
//   400 invalid_json | invalid_body | invalid_query   body or query string cannot be used at all
//   401 unauthorized, 403 forbidden
//   404 not_found, 405 method_not_allowed
//   413 payload_too_large                             body above 64 KiB
//   422 invalid_field | unknown_field | missing_field a field's type, range or name is wrong
//   501 not_supported                                 the runtime gave no callback for it
//   500 internal                                      a callback threw (logged); the server
//                                                     keeps serving
//
// Thread-safety: start() and stop() from one thread (the owner's). Requests are served on the
// server's own threads, concurrently: every callback in ApiContext must be thread-safe, and the
// ControlLoop and Clock already are.

#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "controller/api/api_requests.h"
#include "policies/clock.h"
#include "policies/control_loop.h"

namespace lagpilot {

struct Readiness {
  bool ready = false;
  std::string reason;  // why not ready ("no partitions assigned yet"); may be empty when ready
};

// What the API serves and acts on. The ControlLoop and the Clock must outlive the HttpApi.
struct ApiContext {
  ApiContext(ControlLoop& controller, const Clock& clock) : controller(controller), clock(clock) {}

  ControlLoop& controller;
  // The clock the ControlLoop ticks with: override expiry is clock.now() + ttl_seconds.
  const Clock& clock;
  // Runtime details merged into /v1/status under "runtime", in two parts (status_document.h):
  // what changes only at a control tick (partitions, source counters, tick timing, ...), read
  // when the status is published (HttpApi::publish_status()), and what is read per request
  // (the pool size now, the age of the lag data now, delivery counts, ...). Both must be JSON
  // objects (or empty callbacks: no members).
  std::function<nlohmann::json()> status_tick_extra;
  std::function<nlohmann::json()> status_live_extra;
  // Operator pause (true) / resume (false) of consumption. Empty: /v1/pause and /v1/resume
  // answer 501.
  std::function<void(bool paused)> set_paused;
  // Readiness. Empty: ready once the controller has ticked at least once.
  std::function<Readiness()> ready;
  // The producer pacing document. Empty: /v1/pacing answers 404.
  std::function<nlohmann::json()> pacing;
  // The Prometheus text page. Empty: /metrics answers 404.
  std::function<std::string()> metrics_text;
  // Bearer token for mutations. Empty: mutations are forbidden (403).
  std::string token;
  // Upper bound of /v1/decisions?limit= (the ControlLoop's decision_history).
  std::size_t decision_history = 1000;
};

// Where and how `lagpilot run` serves the API: the "http" object of the config file.
struct HttpApiConfig {
  bool enabled = true;
  std::string host = "127.0.0.1";  // loopback by default; "0.0.0.0" to expose it
  int port = 9464;                 // 0 = an ephemeral port (logged)
  // Name of the environment variable holding the bearer token (tokens do not belong in config
  // files). Unset or empty variable: the API is read-only.
  std::string token_env = "LAGPILOT_API_TOKEN";

  // Reads {"enabled", "host", "port", "token_env"}; throws ConfigError naming the JSON path.
  static HttpApiConfig from_json(const nlohmann::json& j, const std::string& path = "http");
  nlohmann::json to_json() const;
  // The token from the environment ("" if unset).
  std::string token_from_env() const;
};

class HttpApi {
 public:
  // The request limits (api_requests.h, where the bodies are parsed).
  static constexpr std::size_t kMaxBodyBytes = kMaxApiBodyBytes;
  static constexpr double kDefaultOverrideTtlSeconds = lagpilot::kDefaultOverrideTtlSeconds;
  static constexpr double kMaxOverrideTtlSeconds = lagpilot::kMaxOverrideTtlSeconds;
  static constexpr std::size_t kDefaultDecisionLimit = 100;

  explicit HttpApi(ApiContext context);
  ~HttpApi();  // stop()

  HttpApi(const HttpApi&) = delete;
  HttpApi& operator=(const HttpApi&) = delete;

  // Binds host:port (port 0 = ephemeral) and serves on a background thread. Returns false (and
  // logs why) if the address cannot be bound or the server was already started. Call once.
  bool start(const std::string& host, int port);
  // The bound port (after a successful start), else 0.
  int port() const;
  // The document GET /v1/status serves (whether or not the server is started), built now. Any
  // thread.
  nlohmann::json status() const;
  // Serializes the tick part of /v1/status (status_document.h) for the requests until the
  // next call; mutations (bounds, policy) re-publish it. The owner calls it after each control
  // tick, once the tick's status_tick_extra is recorded. Until the first call, every request
  // builds the whole document. Any thread.
  void publish_status();
  // Stops accepting, finishes the requests in progress, joins the server thread. Idempotent.
  void stop();

 private:
  struct Impl;  // http_api.cpp
  std::unique_ptr<Impl> impl_;
};

}  // namespace lagpilot
