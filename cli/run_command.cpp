// `lagpilot run`: consume Kafka with the worker pool, resized every tick by the controller
// (lagpilot::Service). With --replay it also produces a trace in-process and ends with a
// loss/duplicate summary (cli/replay_demo.h; this is what `make run` shows).
#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/config.h"
#include "cli/replay_demo.h"
#include "cli/shutdown_signal.h"
#include "controller/api/bearer_token.h"
#include "lagpilot/lagpilot.h"
#include "policies/policy_factory.h"

namespace lagpilot::cli {
namespace {

struct RunOptions {
  std::string config_path;
  bool embedded_broker = false;
  std::string bootstrap;
  std::string policy;
  std::string ledger;
  std::string log_format = "text";
  bool print_config = false;
  double duration = 0;
  ReplayOptions replay;
  bool until_drained = false;
  std::string listen;
  std::string api_token_file;
};

// Applies the command line over the config file.
void apply_flags(const RunOptions& o, AppConfig& cfg) {
  if (!o.policy.empty()) {
    cfg.policy_name = o.policy;
    cfg.policy_params = nlohmann::json::object();
    cfg.make_policy();  // validates the name
  }
  if (o.embedded_broker) cfg.runtime.broker = "embedded";
  if (!o.bootstrap.empty()) {
    cfg.runtime.broker = "external";
    cfg.runtime.kafka.bootstrap_servers = o.bootstrap;
  }
  if (!o.ledger.empty()) cfg.runtime.ledger = o.ledger;
  if (!o.listen.empty()) {
    const auto colon = o.listen.rfind(':');
    int port = -1;
    if (colon != std::string::npos) {
      try {
        port = std::stoi(o.listen.substr(colon + 1));
      } catch (const std::exception&) {
      }
    }
    if (colon == std::string::npos || colon == 0 || port < 0 || port > 65535) {
      throw ConfigError("--listen", "must be HOST:PORT, got \"" + o.listen + "\"");
    }
    cfg.http.host = o.listen.substr(0, colon);
    cfg.http.port = port;
    cfg.http.enabled = true;
  }
}

// `line`, and on the first text line the API's address ("| API and /metrics on
// http://127.0.0.1:9464"); JSON lines get an "api" field instead. Port 0: the API is off.
std::string first_status_line_suffix(const std::string& line, bool first, bool json,
                                     const std::string& host, int port) {
  if (!first || port <= 0) return line;
  const std::string url = "http://" + host + ":" + std::to_string(port);
  if (!json) return line + " | API and /metrics on " + url;
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) return line;
  j["api"] = url;
  return j.dump();
}

}  // namespace

CommandMain add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  app.add_option("--config", o->config_path, "Config file (JSON); defaults when omitted")
      ->check(CLI::ExistingFile);
  app.add_flag("--embedded-broker", o->embedded_broker,
               "Start librdkafka's mock cluster in-process (same as \"broker\": \"embedded\")");
  app.add_option("--bootstrap", o->bootstrap,
                 "bootstrap.servers of an external cluster (sets \"broker\": \"external\")");
  app.add_option(
      "--policy", o->policy,
      "Policy name (" + policy_name_list() + "), overriding the config's (default params)");
  app.add_option("--ledger", o->ledger,
                 "Append every processed (topic, partition, offset, seq) to this file");
  app.add_option("--log-format", o->log_format, "Status line format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_flag("--print-config", o->print_config,
               "Print the effective config (all defaults) and exit");
  app.add_option("--duration", o->duration, "Stop after this many seconds (0: until SIGINT)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--listen", o->listen,
                 "HOST:PORT of the control API and /metrics (default 127.0.0.1:9464; "
                 "config \"http\"); PORT 0 picks a free port");
  app.add_option("--api-token-file", o->api_token_file,
                 "File holding the bearer token for mutating API calls (else $LAGPILOT_API_TOKEN)")
      ->check(CLI::ExistingFile);
  app.add_flag("--until-drained", o->until_drained,
               "Stop once partitions are assigned and the committed lag is 0");
  app.add_option("--replay", o->replay.trace,
                 "Also produce this trace in-process, then stop when it is drained and print a "
                 "loss/duplicate summary (exit 1 if anything was lost)")
      ->check(CLI::ExistingFile);
  app.add_option("--replay-seconds", o->replay.seconds, "Compress the replayed trace to this long")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--replay-peak-rate", o->replay.peak_rate,
                 "Peak messages/s of the replay (default: 0.9 x capacity at max workers)")
      ->check(CLI::PositiveNumber);
  app.add_option("--replay-keys", o->replay.keys, "Distinct keys in the replay")
      ->capture_default_str();
  app.add_option("--drain-timeout", o->replay.drain_timeout,
                 "With --replay: seconds to wait for the backlog after the trace ends")
      ->capture_default_str();
  app.footer(
      "Defaults (no --config): embedded broker, topic 'events' with 8 partitions, synthetic\n"
      "handler (5 ms lognormal), hybrid policy, 4 to 16 workers, 1 s tick. See --print-config.\n"
      "Your own service: \"handler\": {\"type\": \"http\", \"url\": ...} or {\"type\": \"exec\",\n"
      "\"command\": [...]}, with retries and a dead-letter topic in \"failure\" (docs/sinks.md).\n"
      "SIGINT/SIGTERM: stop fetching, finish in-flight messages (those waiting for a retry are\n"
      "left uncommitted), commit, exit 0; a second signal exits at once.");

  return [o]() -> int {
    AppConfig cfg = o->config_path.empty() ? AppConfig{} : load_config(o->config_path);
    apply_flags(*o, cfg);
    if (o->print_config) {
      std::cout << config_json(cfg).dump(2) << std::endl;
      return 0;
    }
    std::unique_ptr<ReplayDemo> replay;
    if (!o->replay.trace.empty()) replay = std::make_unique<ReplayDemo>(o->replay, cfg);

    ServiceOptions so;
    so.tick_thread = ServiceOptions::TickThread::kCaller;  // the main thread ticks
    if (!o->api_token_file.empty()) so.api_token = read_token_file(o->api_token_file);
    so.json_status_lines = o->log_format == "json";
    Service* service_ptr = nullptr;  // set before start(), so before the first tick
    // The first status line also says where the API listens: with "--listen HOST:0" (a second
    // demo beside the first, say) nobody else knows the port.
    so.on_status_line = [&service_ptr, first = true, json = so.json_status_lines,
                         host = cfg.http.host](const std::string& line) mutable {
      std::cout << first_status_line_suffix(line, first, json, host, service_ptr->api_port())
                << std::endl;
      first = false;
    };
    double start = 0;
    so.on_tick = [&](const TickReport& report) {
      const double now = service_ptr->clock().now();
      const bool over = (o->duration > 0 && now - start >= o->duration) ||
                        // (lag_age_seconds >= 0: every partition's high watermark was read,
                        // so a lag of 0 is not merely unknown)
                        (o->until_drained && report.source.assigned_partitions > 0 &&
                         report.source.lag_age_seconds >= 0 && report.observation.total_lag == 0) ||
                        (replay && replay->over(report, now));
      if (!over) return;
      if (replay) replay->stop_producer();
      service_ptr->request_stop();
    };
    Service service(cfg, MessageHandler{}, so);
    service_ptr = &service;
    ShutdownSignal::install();
    service.start();
    if (replay) replay->start(service.bootstrap_servers(), service.clock());

    // SIGINT/SIGTERM: the producer stops first, then the service (which finishes and commits
    // what is in flight).
    std::thread signal_watch([&] {
      while (!service.stop_requested()) {
        if (ShutdownSignal::wait_for(0.05)) {
          if (replay) replay->stop_producer();
          service.request_stop();
        }
      }
    });
    start = service.clock().now();
    try {
      service.run_until_stopped();
    } catch (...) {
      service.request_stop();
      signal_watch.join();
      throw;
    }
    signal_watch.join();
    if (const std::string why = service.failure(); !why.empty()) {
      std::cerr << "lagpilot run: failed: " << why << std::endl;
      return 1;  // so that a supervisor restarts it
    }
    if (!replay) return 0;
    return replay->finish(service.runtime().source().stats(), service.runtime().totals());
  };
}

}  // namespace lagpilot::cli
