// httplib.h includes <resolv.h>, whose macro `_res` breaks Eigen: no Eigen-using header may be
// included in this file (policies/ headers included here do not use Eigen).
#include "controller/api/http_api.h"

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "controller/api/api_requests.h"
#include "controller/api/bearer_token.h"
#include "controller/api/status_document.h"
#include "policies/config_reader.h"
#include "policies/policy_factory.h"

namespace lagpilot {
namespace {

// Request threads: one per open keep-alive connection (see the constructor).
constexpr std::size_t kApiThreads = 128;
constexpr std::size_t kKeepAliveMaxRequests = 100000;
constexpr int kListenBacklog = 1024;

// Handlers throw ApiError (api_requests.h); the dispatch wrapper turns it into {"error": {...}}.

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(response_text(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  nlohmann::json error = {{"code", e.code}, {"message", e.message}};
  if (!e.field.empty()) error["field"] = e.field;
  send_json(res, e.status, {{"error", error}});
  if (e.status == 401) res.set_header("WWW-Authenticate", "Bearer realm=\"lagpilot\"");
}

bool iequals_prefix(const std::string& text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

// Paths and the methods they answer, for 405 with an Allow header.
const std::map<std::string, std::string>& known_paths() {
  static const std::map<std::string, std::string> paths = {
      {"/healthz", "GET"},    {"/readyz", "GET"},       {"/metrics", "GET"},
      {"/v1/status", "GET"},  {"/v1/decisions", "GET"}, {"/v1/override", "PUT, DELETE"},
      {"/v1/bounds", "PUT"},  {"/v1/policy", "PUT"},    {"/v1/pause", "POST"},
      {"/v1/resume", "POST"}, {"/v1/pacing", "GET"},
  };
  return paths;
}

}  // namespace

struct HttpApi::Impl {
  explicit Impl(ApiContext c) : ctx(std::move(c)) {}

  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  // Turns thrown ApiError / ConfigError / anything else into an error answer.
  Handler guarded(Handler handler) {
    return [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
      try {
        handler(req, res);
      } catch (const ApiError& e) {
        send_error(res, e);
      } catch (const ConfigError& e) {
        send_error(res, api_error_from(e));
      } catch (const std::exception& e) {
        spdlog::error("http api: {} {} failed: {}", req.method, req.path, e.what());
        send_error(res, {500, "internal", e.what(), ""});
      }
    };
  }

  // A mutation: authorised first, then run, then logged.
  Handler mutation(Handler handler) {
    return guarded(
        [this, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
          authorize(req);
          handler(req, res);
          // Bounds and the policy are in the published tick part: show the change at once.
          if (publishing.load()) publish_status();
        });
  }

  void authorize(const httplib::Request& req) const {
    if (ctx.token.empty()) {
      spdlog::warn("http api: {} {} from {} refused: no API token configured", req.method, req.path,
                   req.remote_addr);
      throw ApiError{403, "forbidden", "mutations are disabled: no API token is configured", ""};
    }
    const std::string header = req.get_header_value("Authorization");
    constexpr std::string_view kScheme = "Bearer ";
    const bool ok = iequals_prefix(header, kScheme) &&
                    constant_time_equal(std::string_view(header).substr(kScheme.size()), ctx.token);
    if (!ok) {
      spdlog::warn("http api: {} {} from {} refused: {} bearer token", req.method, req.path,
                   req.remote_addr, header.empty() ? "missing" : "wrong");
      throw ApiError{
          401, "unauthorized",
          header.empty() ? "missing Authorization: Bearer <token>" : "invalid bearer token", ""};
    }
  }

  void routes() {
    server.Get("/healthz", guarded([](const httplib::Request&, httplib::Response& res) {
                 send_json(res, 200, {{"status", "ok"}});
               }));

    server.Get("/readyz", guarded([this](const httplib::Request&, httplib::Response& res) {
                 Readiness r;
                 if (ctx.ready) {
                   r = ctx.ready();
                 } else {
                   r.ready = ctx.controller.ticks() > 0;
                   if (!r.ready) r.reason = "the controller has not ticked yet";
                 }
                 nlohmann::json body = {{"ready", r.ready}};
                 if (!r.reason.empty()) body["reason"] = r.reason;
                 send_json(res, r.ready ? 200 : 503, body);
               }));

    server.Get("/metrics", guarded([this](const httplib::Request&, httplib::Response& res) {
                 if (!ctx.metrics_text)
                   throw ApiError{404, "not_found", "metrics are not configured", ""};
                 res.status = 200;
                 res.set_content(ctx.metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
               }));

    server.Get("/v1/status", guarded([this](const httplib::Request&, httplib::Response& res) {
                 res.status = 200;
                 res.set_content(publisher.text(operator_paused.load()), "application/json");
               }));

    server.Get("/v1/pacing", guarded([this](const httplib::Request&, httplib::Response& res) {
                 if (!ctx.pacing) {
                   throw ApiError{404, "not_found", "producer pacing is not configured", ""};
                 }
                 send_json(res, 200, ctx.pacing());
               }));

    server.Get("/v1/decisions",
               guarded([this](const httplib::Request& req, httplib::Response& res) {
                 std::size_t limit = std::min(kDefaultDecisionLimit, ctx.decision_history);
                 if (req.has_param("limit")) {
                   limit = parse_decision_limit(req.get_param_value("limit"), ctx.decision_history);
                 }
                 nlohmann::json list = nlohmann::json::array();
                 for (const Decision& d : ctx.controller.recent_decisions(limit)) {
                   list.push_back(decision_json(d));
                 }
                 const std::size_t count = list.size();
                 send_json(res, 200, {{"decisions", std::move(list)}, {"count", count}});
               }));

    server.Put(
        "/v1/override", mutation([this](const httplib::Request& req, httplib::Response& res) {
          const OverrideRequest request =
              parse_override_request(req.body, ctx.controller.guard_config());
          const int workers = request.workers;
          const double ttl = request.ttl_seconds;
          const std::string& reason = request.reason;
          const double now = ctx.clock.now();
          ManualOverride pin{workers, now + ttl, reason};
          ctx.controller.set_override(pin, now);
          spdlog::info("http api: override from {}: pin {} workers for {} s ({})", req.remote_addr,
                       workers, ttl, reason.empty() ? "no reason given" : reason);
          send_json(res, 200, {{"override", override_json(pin, now)}, {"effective", "next tick"}});
        }));

    server.Delete(
        "/v1/override", mutation([this](const httplib::Request& req, httplib::Response& res) {
          const double now = ctx.clock.now();
          const bool had = ctx.controller.active_override(now).has_value();
          ctx.controller.clear_override(now);
          spdlog::info("http api: override cleared from {} (one was {}active)", req.remote_addr,
                       had ? "" : "not ");
          send_json(res, 200,
                    {{"cleared", had}, {"override", nullptr}, {"effective", "next tick"}});
        }));

    server.Put("/v1/bounds", mutation([this](const httplib::Request& req, httplib::Response& res) {
                 const GuardConfig g = ctx.controller.guard_config();
                 const BoundsRequest request = parse_bounds_request(req.body, g);
                 const int min = request.min_workers;
                 const int max = request.max_workers;
                 ctx.controller.set_bounds(min, max, ctx.clock.now());
                 spdlog::info("http api: bounds set to [{}, {}] from {}", min, max,
                              req.remote_addr);
                 send_json(res, 200,
                           {{"bounds",
                             {{"min", min},
                              {"max", max},
                              {"hard_min", g.hard_min_workers},
                              {"hard_max", g.hard_max_workers}}},
                            {"effective", "next tick"}});
               }));

    server.Put("/v1/policy", mutation([this](const httplib::Request& req, httplib::Response& res) {
                 PolicyRequest request = parse_policy_request(req.body);
                 const std::string& name = request.name;
                 std::unique_ptr<Policy> policy = std::move(request.policy);
                 const nlohmann::json effective = policy->params();
                 ctx.controller.set_policy(std::move(policy), ctx.clock.now());
                 spdlog::info("http api: policy set to {} {} from {}", name,
                              response_text(effective), req.remote_addr);
                 send_json(res, 200,
                           {{"policy", {{"name", name}, {"params", effective}}},
                            {"effective", "next tick"}});
               }));

    server.Post("/v1/pause", mutation([this](const httplib::Request& req, httplib::Response& res) {
                  pause(req, res, true);
                }));
    server.Post("/v1/resume", mutation([this](const httplib::Request& req, httplib::Response& res) {
                  pause(req, res, false);
                }));

    // Fills in the body of answers httplib produced itself (404, 400, 413, ...); answers our
    // handlers produced already have one.
    httplib::Server::HandlerWithResponse on_error = [](const httplib::Request& req,
                                                       httplib::Response& res) {
      if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
      ApiError e{res.status, "error", "HTTP status " + std::to_string(res.status), ""};
      if (res.status == 404) {
        const auto it = known_paths().find(req.path);
        if (it != known_paths().end()) {
          e = {405, "method_not_allowed", req.method + " is not allowed on " + req.path, ""};
          res.set_header("Allow", it->second);
        } else {
          e = {404, "not_found", "no such endpoint: " + req.path, ""};
        }
      } else if (res.status == 413) {
        e = {413, "payload_too_large",
             "request body above " + std::to_string(kMaxBodyBytes) + " bytes", ""};
      } else if (res.status == 400) {
        e.code = "bad_request";
      }
      send_error(res, e);
      return httplib::Server::HandlerResponse::Handled;
    };
    server.set_error_handler(std::move(on_error));
    server.set_exception_handler(
        [](const httplib::Request& req, httplib::Response& res, std::exception_ptr) {
          spdlog::error("http api: {} {} failed with an unknown exception", req.method, req.path);
          send_error(res, {500, "internal", "internal error", ""});
        });
  }

  // POST /v1/pause, /v1/resume: the body is optional ({"reason": "..."}).
  void pause(const httplib::Request& req, httplib::Response& res, bool paused) {
    const std::string reason = parse_pause_request(req.body);
    if (!ctx.set_paused) {
      throw ApiError{501, "not_supported", "this runtime cannot pause consumption", ""};
    }
    const char* what = paused ? "paused" : "resumed";
    {
      std::lock_guard lock(pause_mutex);
      ctx.set_paused(paused);
      operator_paused.store(paused);
      // Under pause_mutex: the log shows pauses and resumes in the order they took effect.
      ctx.controller.record_event(
          ctx.clock.now(), "api",
          std::string(what) + " by api" + (reason.empty() ? "" : ": " + reason));
    }
    spdlog::info("http api: consumption {} from {} ({})", what, req.remote_addr,
                 reason.empty() ? "no reason given" : reason);
    send_json(res, 200, {{"paused", paused}});
  }

  nlohmann::json status() { return status_document(ctx, operator_paused.load()); }

  void publish_status() {
    publishing.store(true);
    std::optional<std::string> error = publisher.publish();
    std::lock_guard lock(publish_error_mutex);
    if (error && *error != publish_error) {
      spdlog::warn("http api: /v1/status cannot be published ({}); it is built per request",
                   *error);
    } else if (!error && !publish_error.empty()) {
      spdlog::info("http api: /v1/status is published again");
    }
    publish_error = error.value_or("");
  }

  ApiContext ctx;
  StatusPublisher publisher{ctx};
  // Atomic: set by the first publish_status() (the owner's tick), read by mutations.
  std::atomic<bool> publishing{false};
  std::mutex publish_error_mutex;  // guards publish_error
  std::string publish_error;       // the last publish's error, "" when it succeeded
  httplib::Server server;
  std::thread thread;
  socket_t listen_socket = -1;  // set by the socket-options callback during bind (start())
  int port = 0;
  bool started = false;  // start()/stop() thread only
  bool stopped = false;
  // Atomic: set when the server thread's listen loop returns, read by start() while waiting.
  std::atomic<bool> listen_returned{false};
  std::mutex pause_mutex;  // serialises set_paused() calls with operator_paused updates
  // Atomic: written under pause_mutex by request threads, read without it by /v1/status.
  std::atomic<bool> operator_paused{false};
};

HttpApi::HttpApi(ApiContext context) : impl_(std::make_unique<Impl>(std::move(context))) {
  // httplib's default socket options add SO_REUSEPORT, with which a second process could bind
  // the same port and silently take half of the requests: keep SO_REUSEADDR only (quick
  // restarts after TIME_WAIT).
  impl_->server.set_socket_options([m = impl_.get()](socket_t sock) {
    m->listen_socket = sock;  // see start(): the backlog
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    // Also here: these options replace httplib's; accepted sockets inherit it from the listener.
    ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  });
  // Without TCP_NODELAY a small answer waits for the client's delayed ACK (Nagle): about 40 ms
  // per request on a keep-alive connection.
  impl_->server.set_tcp_nodelay(true);
  // A keep-alive connection holds one of these threads for as long as it stays open, so the
  // pool is sized for many concurrent clients (scrapers, dashboards, load tests), not for the
  // cores; the threads sleep when idle. httplib's default (about the core count) made the 9th
  // keep-alive client wait for another to close.
  impl_->server.new_task_queue = [] { return new httplib::ThreadPool(kApiThreads); };
  // httplib closes a keep-alive connection after 5 requests by default: a reconnect each time.
  impl_->server.set_keep_alive_max_count(kKeepAliveMaxRequests);
  impl_->server.set_payload_max_length(kMaxBodyBytes);
  impl_->server.set_read_timeout(5, 0);
  impl_->server.set_write_timeout(5, 0);
  impl_->routes();
}

HttpApi::~HttpApi() {
  stop();
}

bool HttpApi::start(const std::string& host, int port) {
  Impl& m = *impl_;
  if (m.started) {
    spdlog::error("http api: already started");
    return false;
  }
  int bound = -1;
  if (port == 0) {
    bound = m.server.bind_to_any_port(host);
  } else if (m.server.bind_to_port(host, port)) {
    bound = port;
  }
  if (bound <= 0) {
    spdlog::error("http api: cannot listen on {}:{}", host, port);
    return false;
  }
  // httplib listens with a backlog of 5: 64 clients connecting at once overflow it, and the
  // overflowing ones retry their SYN after 1 s (a 1 s outlier, or a client timeout). Listening
  // again on the bound socket raises the backlog (Linux).
  if (m.listen_socket >= 0) ::listen(m.listen_socket, kListenBacklog);
  m.started = true;
  m.port = bound;
  m.thread = std::thread([&m] {
    if (!m.server.listen_after_bind()) spdlog::error("http api: server stopped with an error");
    m.listen_returned.store(true);
  });
  // stop() is a no-op until the listen loop runs (httplib), so wait for it: a short real wait.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!m.server.is_running() && !m.listen_returned.load() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  spdlog::info("http api: listening on http://{}:{} (mutations {})", host, bound,
               m.ctx.token.empty() ? "disabled: no token" : "need a bearer token");
  return m.server.is_running();
}

nlohmann::json HttpApi::status() const {
  return impl_->status();
}

void HttpApi::publish_status() {
  impl_->publish_status();
}

int HttpApi::port() const {
  return impl_->started ? impl_->port : 0;
}

void HttpApi::stop() {
  Impl& m = *impl_;
  if (!m.started || m.stopped) return;
  m.stopped = true;
  m.server.stop();
  if (m.thread.joinable()) m.thread.join();
}

}  // namespace lagpilot
