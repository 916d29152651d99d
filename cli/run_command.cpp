// `lagpilot run`: consume Kafka with the worker pool, resized every tick by the controller.
// With --replay it also produces a trace in-process and ends with a loss/duplicate summary
// (this is what `make run` shows).
#include <algorithm>
#include <fstream>
#include <cmath>
#include <iostream>
#include <set>
#include <thread>
#include <unordered_map>

#include <unistd.h>

#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include "controller/steady_clock.h"
#include "cli/app_config.h"
#include "cli/commands.h"
#include "cli/shutdown_signal.h"
#include "controller/loadgen/embedded_broker.h"
#include "controller/api/http_api.h"
#include "controller/metrics/metrics.h"
#include "controller/loadgen/ledger.h"
#include "controller/loadgen/message_codec.h"
#include "controller/loadgen/producer.h"
#include "sim/trace_reader.h"

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
  std::string replay;
  double replay_seconds = 90;
  double replay_peak_rate = 0;
  uint64_t replay_keys = 64;
  double drain_timeout = 60;
  bool until_drained = false;
  std::string listen;
  std::string api_token_file;
};

bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string read_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the API token file");
  std::string token;
  std::getline(in, token);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.empty()) throw std::runtime_error(path + ": the API token file is empty");
  return token;
}

struct Summary {
  uint64_t produced = 0, processed = 0, unique = 0, duplicates = 0, lost = 0, failed = 0,
           lost_to_retention = 0;
};

// Checks the ledger against the sequence numbers the in-process producer sent (0..produced-1).
Summary check_ledger(const std::string& path, uint64_t produced) {
  Summary s;
  s.produced = produced;
  std::vector<uint8_t> seen(produced, 0);
  for (const LedgerEntry& e : read_ledger(path)) {
    ++s.processed;
    if (e.seq < 0 || static_cast<uint64_t>(e.seq) >= produced) continue;
    if (seen[e.seq]++) ++s.duplicates;
  }
  for (uint8_t v : seen) s.unique += v > 0;
  s.lost = produced - s.unique;
  return s;
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
  app.add_option("--policy", o->policy, "Policy name, overriding the config's (default params)");
  app.add_option("--ledger", o->ledger,
                 "Append every processed (topic, partition, offset, seq) to this file");
  app.add_option("--log-format", o->log_format, "Status line format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_flag("--print-config", o->print_config, "Print the effective config (all defaults) and exit");
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
  app.add_option("--replay", o->replay,
                 "Also produce this trace in-process, then stop when it is drained and print a "
                 "loss/duplicate summary (exit 1 if anything was lost)")
      ->check(CLI::ExistingFile);
  app.add_option("--replay-seconds", o->replay_seconds, "Compress the replayed trace to this long")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--replay-peak-rate", o->replay_peak_rate,
                 "Peak messages/s of the replay (default: 0.9 x capacity at max workers)")
      ->check(CLI::PositiveNumber);
  app.add_option("--replay-keys", o->replay_keys, "Distinct keys in the replay")
      ->capture_default_str();
  app.add_option("--drain-timeout", o->drain_timeout,
                 "With --replay: seconds to wait for the backlog after the trace ends")
      ->capture_default_str();
  app.footer(
      "Defaults (no --config): embedded broker, topic 'events' with 8 partitions, synthetic\n"
      "handler (5 ms lognormal), pid policy, 4 to 16 workers, 1 s tick. See --print-config.\n"
      "SIGINT/SIGTERM: stop fetching, finish in-flight messages, commit, exit 0; a second\n"
      "signal exits at once.");

  return [o]() -> int {
    AppConfig cfg = o->config_path.empty() ? AppConfig{} : AppConfig::load(o->config_path);
    if (!o->policy.empty()) {
      cfg.policy_name = o->policy;
      cfg.policy_params = nlohmann::json::object();
      cfg.make_policy();  // validates the name
    }
    if (o->embedded_broker) cfg.runtime.broker = "embedded";
    if (!o->bootstrap.empty()) {
      cfg.runtime.broker = "external";
      cfg.runtime.kafka.bootstrap_servers = o->bootstrap;
    }
    if (!o->ledger.empty()) cfg.runtime.ledger = o->ledger;
    if (!o->listen.empty()) {
      const auto colon = o->listen.rfind(':');
      int port = -1;
      if (colon != std::string::npos) {
        try {
          port = std::stoi(o->listen.substr(colon + 1));
        } catch (const std::exception&) {
        }
      }
      if (colon == std::string::npos || colon == 0 || port < 0 || port > 65535) {
        throw ConfigError("--listen", "must be HOST:PORT, got \"" + o->listen + "\"");
      }
      cfg.http.host = o->listen.substr(0, colon);
      cfg.http.port = port;
      cfg.http.enabled = true;
    }
    if (o->print_config) {
      std::cout << cfg.to_json().dump(2) << std::endl;
      return 0;
    }
    if (cfg.runtime.broker == "external" && cfg.runtime.kafka.bootstrap_servers.empty()) {
      throw ConfigError("kafka.bootstrap_servers",
                        "required with \"broker\": \"external\" (or pass --bootstrap)");
    }
    const bool json_lines = o->log_format == "json";
    std::string api_token =
        o->api_token_file.empty() ? cfg.http.token_from_env() : read_token_file(o->api_token_file);
    if (cfg.http.enabled && !is_loopback(cfg.http.host) && api_token.empty()) {
      throw ConfigError("http.host", "\"" + cfg.http.host +
                                         "\" is not loopback: set a token ($" +
                                         cfg.http.token_env + " or --api-token-file) first");
    }
    ShutdownSignal::install();

    std::unique_ptr<EmbeddedBroker> broker;
    if (cfg.runtime.broker == "embedded") {
      EmbeddedBrokerOptions bo;
      bo.brokers = cfg.runtime.embedded_brokers;
      for (const auto& t : cfg.runtime.kafka.topics) {
        bo.topics.emplace_back(t, cfg.runtime.topic_partitions);
      }
      broker = std::make_unique<EmbeddedBroker>(bo);
      cfg.runtime.kafka.bootstrap_servers = broker->bootstrap_servers();
      spdlog::info("embedded broker at {}", broker->bootstrap_servers());
    }

    // A replay needs a fresh ledger to check for loss (its sequence numbers start at 0); use a
    // temporary one if none was given.
    if (!o->replay.empty()) {
      if (cfg.runtime.ledger.empty()) {
        cfg.runtime.ledger = "/tmp/lagpilot-ledger-" + std::to_string(::getpid()) + ".txt";
      }
      std::remove(cfg.runtime.ledger.c_str());
    }
    std::shared_ptr<Ledger> ledger;
    if (!cfg.runtime.ledger.empty()) ledger = std::make_shared<Ledger>(cfg.runtime.ledger);
    auto synthetic = std::make_shared<SyntheticHandler>(cfg.runtime.handler);
    MessageHandler handler = [synthetic, ledger](const SourceMessage& m) {
      (*synthetic)(m);
      if (ledger) {
        const auto decoded = decode_message(m.value);
        ledger->append(m.topic, m.partition, m.offset,
                       decoded ? static_cast<int64_t>(decoded->seq) : -1);
      }
    };

    SteadyClock clock;
    ConsumerRuntime runtime(cfg.runtime, cfg.make_policy(), cfg.guards, handler, clock);
    runtime.start();
    spdlog::info("consuming {} from {} with policy {} ({}..{} workers)",
                 cfg.runtime.kafka.topics.front(), cfg.runtime.kafka.bootstrap_servers,
                 cfg.policy_name, cfg.guards.min_workers, cfg.guards.max_workers);

    // The control API and /metrics on one port.
    RuntimeMetrics metrics(std::make_shared<prometheus::Registry>(), cfg.runtime.catch_up_seconds);
    ApiContext api_ctx(runtime.controller(), clock);
    api_ctx.token = api_token;
    api_ctx.metrics_text = [&metrics] { return metrics.render(); };
    api_ctx.status_extra = [&metrics, &runtime] {
      nlohmann::json j = metrics.last_tick_status();
      j["pool_size_now"] = runtime.pool().size();
      return j;
    };
    api_ctx.set_paused = [&runtime](bool paused) {
      paused ? runtime.source().pause_consumption() : runtime.source().resume_consumption();
    };
    api_ctx.ready = [&runtime] {
      if (!runtime.source().joined()) return Readiness{false, "not yet assigned partitions"};
      if (runtime.controller().ticks() == 0) return Readiness{false, "no control tick yet"};
      return Readiness{true, ""};
    };
    std::unique_ptr<HttpApi> api;
    if (cfg.http.enabled) {
      api = std::make_unique<HttpApi>(api_ctx);
      if (api->start(cfg.http.host, cfg.http.port)) {
        spdlog::info("control API and /metrics on http://{}:{}", cfg.http.host, api->port());
      } else {
        spdlog::error("control API: cannot listen on {}:{}; consuming without it",
                      cfg.http.host, cfg.http.port);
        api.reset();
      }
    }

    // Optional in-process producer replaying a trace.
    std::atomic<bool> producer_stop{false};
    std::atomic<bool> producer_done{false};
    ProducerStats produced;
    std::thread producer_thread;
    if (!o->replay.empty()) {
      sim::Trace trace = sim::load_trace(o->replay);
      trace = sim::compress_time(std::move(trace), trace.duration() / o->replay_seconds);
      double peak = o->replay_peak_rate;
      if (peak <= 0) {
        peak = 0.9 * cfg.guards.max_workers /
               std::max(1e-6, cfg.runtime.handler.service_mean_seconds);
      }
      trace = sim::scale_to_peak(std::move(trace), peak);
      ProducerOptions po;
      po.bootstrap = cfg.runtime.kafka.bootstrap_servers;
      po.topic = cfg.runtime.kafka.topics.front();
      po.trace_rates = trace.rates;
      po.trace_bin_seconds = trace.bin_seconds;
      po.keys = o->replay_keys;
      spdlog::info("replaying {} over {:.0f} s, peak {:.0f}/s, about {:.0f} messages", o->replay,
                   trace.duration(), peak, trace.total_messages());
      producer_thread = std::thread([&, po] {
        PacedProducer producer(po, clock);
        produced = producer.run(producer_stop);
        producer_done.store(true);
      });
    }

    const double start = clock.now();
    double next_tick = start + cfg.runtime.tick_seconds;
    double drained_since = -1;
    while (!ShutdownSignal::requested()) {
      const double wait = next_tick - clock.now();
      if (wait > 0 && ShutdownSignal::wait_for(wait)) break;
      next_tick += cfg.runtime.tick_seconds;
      const double tick_start = clock.now();
      const auto report = runtime.tick();
      metrics.record_tick(report, runtime.controller().guard_config(),
                          report.decision.source == "override", clock.now() - tick_start,
                          std::chrono::duration<double>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count());
      std::cout << format_status_line(report, json_lines) << std::endl;
      if (o->duration > 0 && clock.now() - start >= o->duration) break;
      if (o->until_drained && report.source.assigned_partitions > 0 &&
          report.observation.total_lag == 0) {
        break;
      }
      if (producer_done.load()) {
        if (drained_since < 0) drained_since = clock.now();
        const bool drained = report.observation.total_lag == 0 &&
                             report.source.processed + report.source.failed >= produced.delivered;
        if (drained || clock.now() - drained_since > o->drain_timeout) break;
      }
    }
    producer_stop.store(true);
    if (producer_thread.joinable()) producer_thread.join();
    if (api) api->stop();
    spdlog::info("stopping: finishing in-flight messages and committing");
    runtime.stop();
    const SourceStats final_stats = runtime.source().stats(false);
    const RuntimeTotals totals = runtime.totals();

    if (o->replay.empty()) return 0;
    Summary s = check_ledger(cfg.runtime.ledger, produced.produced);
    s.failed = final_stats.failed;
    s.lost_to_retention = final_stats.lost_to_retention;
    std::cout << "\nsummary: produced=" << s.produced << " (delivery failures " << produced.failed
              << ") processed=" << s.processed << " unique=" << s.unique << " lost=" << s.lost
              << " duplicates=" << s.duplicates << " handler_failures=" << s.failed
              << " lost_to_retention=" << s.lost_to_retention << "\n"
              << "         seconds_above_lag_slo(" << cfg.runtime.lag_slo
              << ")=" << totals.seconds_above_slo << " worker_seconds=" << totals.worker_seconds
              << " scale_actions=" << totals.scale_actions << " max_lag=" << totals.max_lag
              << std::endl;
    if (s.lost > 0 || produced.failed > 0) {
      spdlog::error("{} messages lost", s.lost + produced.failed);
      return 1;
    }
    return 0;
  };
}

}  // namespace lagpilot::cli
