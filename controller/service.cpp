// lagpilot::Service (include/lagpilot/lagpilot.h): assembles the live runtime from one config
// — the embedded broker when asked for, the consumer runtime (Kafka source, worker pool, control
// loop), the metrics and the control API — and ticks it.
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <map>

#include "controller/api/http_api.h"
#include "controller/api/status_document.h"
#include "controller/config_advice.h"
#include "controller/loadgen/embedded_broker.h"
#include "controller/loadgen/ledger.h"
#include "controller/loadgen/message_codec.h"
#include "controller/loadgen/synthetic_handler.h"
#include "controller/metrics/delivery_metrics.h"
#include "controller/metrics/metrics.h"
#include "controller/sinks/dead_letter_producer.h"
#include "controller/sinks/delivery_pipeline.h"
#include "controller/sinks/exec_sink.h"
#include "controller/sinks/http_sink.h"
#include "controller/steady_clock.h"
#include "controller/tick_beat.h"
#include "lagpilot/lagpilot.h"
#include "policies/config_reader.h"

namespace lagpilot {
namespace {

bool is_loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// The start-up warnings: the findings of `lagpilot advise` on this config and its
// "calibration" section (config_advice.h), one warning each.
void warn_about_config(const AppConfig& config) {
  CalibrationInput calibration;
  if (!config.calibration.is_null()) {
    try {
      calibration = calibration_record(nlohmann::json{{"calibration", config.calibration}});
    } catch (const ConfigError& e) {
      spdlog::warn("advise: the config's calibration section is not used: {}", e.what());
    }
  }
  try {
    for (const AdviceFinding& f : advise(config, calibration)) {
      spdlog::warn("advise: {}", format_finding(f));
    }
  } catch (const ConfigError& e) {
    spdlog::warn("advise: {}", e.what());
  }
}

double unix_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Whether backpressure holds at this tick, for the shedding gate, and why: the pool's queue at
// its high watermark, the source's unfinished messages at the high watermark of their bound, or
// lag above the lag SLO. "" when none. (An operator pause by itself is not pressure; the lag it
// lets grow is.)
std::string shed_pressure(const TickReport& r, const RuntimeConfig& rc, bool pool_backpressure) {
  char buf[160];
  const double hw = rc.pool.high_watermark;
  if (pool_backpressure) {
    std::snprintf(buf, sizeof buf, "pool queue %lld/%lld at its high watermark %g",
                  static_cast<long long>(r.observation.queue_depth),
                  static_cast<long long>(r.observation.queue_capacity), hw);
    return buf;
  }
  if (r.source.max_unfinished > 0 && static_cast<double>(r.source.unfinished) >=
                                         hw * static_cast<double>(r.source.max_unfinished)) {
    std::snprintf(buf, sizeof buf,
                  "unfinished %lld at the high watermark %g of max_unfinished %lld",
                  static_cast<long long>(r.source.unfinished), hw,
                  static_cast<long long>(r.source.max_unfinished));
    return buf;
  }
  if (static_cast<double>(r.observation.total_lag) > rc.lag_slo) {
    std::snprintf(buf, sizeof buf, "lag %lld above lag_slo %g",
                  static_cast<long long>(r.observation.total_lag), rc.lag_slo);
    return buf;
  }
  return "";
}

// Once per tick on the control thread: feeds the gate, records its transitions in the decision
// log, logs what was shed since the last tick (one line, only when something was), and feeds
// the metrics.
void tick_shedding(Shedder& shedder, ConsumerRuntime& runtime, DeliveryMetrics& metrics,
                   const TickReport& report, double now) {
  const ShedConfig& c = shedder.config();
  const std::string why = shed_pressure(report, runtime.config(), runtime.pool().backpressure());
  const ShedGate::Transition t = shedder.gate().update(now, !why.empty());
  char buf[160];
  if (t == ShedGate::Transition::kStarted) {
    std::snprintf(buf, sizeof buf,
                  "shedding started: backpressure for %.1f s (after_pressure_seconds %g): ",
                  shedder.gate().pressure_for(now), c.after_pressure_seconds);
    runtime.controller().record_event(now, "shedding", buf + why);
    shedder.note_transition(buf + why, unix_seconds_now());
    spdlog::warn("{}{}", buf, why);
  } else if (t == ShedGate::Transition::kStopped) {
    std::snprintf(
        buf, sizeof buf,
        "shedding stopped: no backpressure for %g s (release_after_seconds); shed so far: %llu",
        c.release_after_seconds, static_cast<unsigned long long>(shedder.stats().total()));
    runtime.controller().record_event(now, "shedding", buf);
    shedder.note_transition(buf, unix_seconds_now());
    spdlog::warn("{}", buf);
  }
  if (const std::string line = format_shed_window(shedder.take_window()); !line.empty()) {
    spdlog::info("{}", line);
  }
  metrics.record_shedding(shedder.stats());
}

}  // namespace

// What start() builds, in the order it builds them (and the reverse order of destruction).
struct Service::Parts {
  SteadyClock clock;
  // The sink the handler delivers to (at most one of them), its retries and dead letters.
  std::shared_ptr<SyntheticHandler> synthetic;
  std::unique_ptr<HttpSink> http;
  std::unique_ptr<ExecSink> exec;
  std::unique_ptr<DeadLetterProducer> dead_letters;  // built by start(): needs the brokers
  // Shedding (config "shedding"; null without one) and its shed topic (built by start()).
  std::unique_ptr<Shedder> shedder;
  std::unique_ptr<DeadLetterProducer> shed_topic;
  std::unique_ptr<DeliveryPipeline> pipeline;
  MessageHandler handler;
  // With "batch": what the source calls per batch, and per incomplete batch drop_last drops.
  BatchHandler batch_handler;
  BatchHandler batch_drop;
  uint64_t dropped_incomplete_logged = 0;  // the source's count at the last tick's log line
  std::string api_token;
  std::unique_ptr<EmbeddedBroker> broker;
  std::unique_ptr<ConsumerRuntime> runtime;
  std::unique_ptr<RuntimeMetrics> metrics;
  std::unique_ptr<DeliveryMetrics> delivery_metrics;  // in the same registry
  std::unique_ptr<ApiContext> api_context;
  std::unique_ptr<HttpApi> api;
};

AppConfig Service::config_from_file(const std::string& path) {
  return AppConfig::load(path);
}

AppConfig Service::config_from_string(const std::string& json_text) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError("", std::string("invalid JSON: ") + e.what());
  }
  return AppConfig::from_json(root);
}

AppConfig Service::config_from_json(const nlohmann::json& root) {
  return AppConfig::from_json(root);
}

Service::Service(AppConfig config, MessageHandler handler, ServiceOptions options)
    : Service(std::move(config), std::move(handler), BatchHandler{}, std::move(options)) {}

Service::Service(AppConfig config, BatchHandler handler, ServiceOptions options)
    : Service(std::move(config), MessageHandler{}, std::move(handler), std::move(options)) {}

Service::Service(AppConfig config, MessageHandler handler, BatchHandler batch_handler,
                 ServiceOptions options)
    : config_(std::move(config)), options_(std::move(options)), parts_(std::make_unique<Parts>()) {
  if (batch_handler && !config_.runtime.batch.enabled) {
    throw ConfigError("batch",
                      "a batch handler needs a \"batch\" section (max_messages, "
                      "max_wait_seconds, drop_last)");
  }
  if (config_.runtime.broker == "external" && config_.runtime.kafka.bootstrap_servers.empty() &&
      !config_.runtime.kafka.properties.count("bootstrap.servers")) {
    throw ConfigError("kafka.bootstrap_servers",
                      "required with \"broker\": \"external\" (or pass --bootstrap)");
  }
  parts_->api_token =
      options_.api_token.empty() ? config_.http.token_from_env() : options_.api_token;
  if (config_.http.enabled && !is_loopback(config_.http.host) && parts_->api_token.empty()) {
    throw ConfigError("http.host", "\"" + config_.http.host + "\" is not loopback: set a token ($" +
                                       config_.http.token_env + " or --api-token-file) first");
  }
  Parts& p = *parts_;
  DeliveryPipeline::Attempt attempt;
  DeliveryPipeline::BatchAttempt batch_attempt;  // (set with "batch")
  const HandlerConfig& hc = config_.runtime.handler;
  if (batch_handler) {
    batch_attempt = callable_batch_attempt(std::move(batch_handler));
    attempt = [](const SourceMessage&) {
      return Delivery::permanent("lagpilot: a batch handler got a single message");
    };
  } else if (handler) {
    attempt = callable_attempt(std::move(handler));
  } else if (hc.type == "http") {
    p.http = std::make_unique<HttpSink>(hc.http);
    attempt = [sink = p.http.get()](const SourceMessage& m) { return sink->deliver(m); };
    batch_attempt = [sink = p.http.get()](std::span<const SourceMessage> b) {
      return sink->deliver_batch(b);
    };
  } else if (hc.type == "exec") {
    p.exec = std::make_unique<ExecSink>(hc.exec);
    attempt = [sink = p.exec.get()](const SourceMessage& m) { return sink->deliver(m); };
    batch_attempt = [sink = p.exec.get()](std::span<const SourceMessage> b) {
      return sink->deliver_batch(b);
    };
  } else {
    p.synthetic = std::make_shared<SyntheticHandler>(hc.synthetic);
    attempt =
        callable_attempt([synthetic = p.synthetic](const SourceMessage& m) { (*synthetic)(m); });
  }
  DeadLetterSend dead_letter;
  if (!config_.runtime.failure.dead_letter_topic.empty()) {
    dead_letter = [&p](const SourceMessage& m, const std::string& error, int attempts,
                       int64_t first_failure_ms) {
      return p.dead_letters->send(m, error, attempts, first_failure_ms);
    };
  }
  p.pipeline = std::make_unique<DeliveryPipeline>(std::move(attempt), config_.runtime.failure,
                                                  std::move(dead_letter),
                                                  config_.runtime.handler.synthetic.seed);
  if (config_.runtime.shedding.enabled) {
    p.shedder = std::make_unique<Shedder>(config_.runtime.shedding);
    ShedSend send;
    if (!config_.runtime.shedding.to_topic.empty()) {
      send = [&p](const SourceMessage& m, const ShedVerdict& v) {
        return p.shed_topic->send(m, "shed: " + v.detail, 0, unix_ms_now(),
                                  {{"lagpilot-shed-reason", shed_reason_name(v.reason)}});
      };
    }
    p.pipeline->set_shedding(p.shedder.get(), std::move(send));
  }
  if (config_.runtime.batch.enabled) {
    if (!batch_attempt) batch_attempt = per_message_batch_attempt(attempt);
    // Incomplete batches that drop_last drops go to the shed topic when there is one.
    IncompleteBatchSend drop_send;
    if (config_.runtime.shedding.enabled && !config_.runtime.shedding.to_topic.empty()) {
      drop_send = [&p](const SourceMessage& m) {
        return p.shed_topic->send(m, "dropped: incomplete batch (batch.drop_last)", 0,
                                  unix_ms_now(), {{"lagpilot-shed-reason", "incomplete_batch"}});
      };
    }
    p.pipeline->set_batching(std::move(batch_attempt), std::move(drop_send));
    p.batch_handler = [pipeline = p.pipeline.get()](std::span<const SourceMessage> b) {
      pipeline->deliver_batch(b);
    };
    p.batch_drop = [pipeline = p.pipeline.get()](std::span<const SourceMessage> b) {
      pipeline->drop_incomplete(b);
    };
  }
  handler = [pipeline = p.pipeline.get()](const SourceMessage& m) { (*pipeline)(m); };
  if (!config_.runtime.ledger.empty()) {
    // Appended once the message is finished (done, dead-lettered or dropped): the ledger
    // lists what the run accounted for.
    auto ledger = std::make_shared<Ledger>(config_.runtime.ledger);
    const auto append = [ledger](const SourceMessage& m) {
      const auto decoded = decode_message(m.value);
      ledger->append(m.topic, m.partition, m.offset,
                     decoded ? static_cast<int64_t>(decoded->seq) : -1);
    };
    handler = [inner = std::move(handler), append](const SourceMessage& m) {
      inner(m);
      append(m);
    };
    // Batches: each message once the batch is finished; dropped ones too (accounted for).
    for (BatchHandler* h : {&p.batch_handler, &p.batch_drop}) {
      if (!*h) continue;
      *h = [inner = std::move(*h), append](std::span<const SourceMessage> b) {
        inner(b);
        for (const SourceMessage& m : b) append(m);
      };
    }
  }
  parts_->handler = std::move(handler);
}

Service::~Service() {
  stop();
}

void Service::start() {
  std::lock_guard life(lifecycle_mutex_);
  if (started_) throw std::logic_error("lagpilot::Service::start() called twice");
  started_ = true;
  Parts& p = *parts_;
  RuntimeConfig& rc = config_.runtime;
  warn_about_config(config_);
  if (rc.broker == "embedded") {
    EmbeddedBrokerOptions bo;
    bo.brokers = rc.embedded_brokers;
    for (const auto& t : rc.kafka.topics) bo.topics.emplace_back(t, rc.topic_partitions);
    p.broker = std::make_unique<EmbeddedBroker>(bo);
    rc.kafka.bootstrap_servers = p.broker->bootstrap_servers();
    spdlog::info("embedded broker at {}", p.broker->bootstrap_servers());
  }

  // The dead-letter and shed-topic producers use the consumer's connection settings (TLS,
  // SASL), not its consumer settings.
  std::map<std::string, std::string> connection;
  for (const auto& [k, v] : rc.kafka.properties) {
    if (k.rfind("security.", 0) == 0 || k.rfind("sasl.", 0) == 0 || k.rfind("ssl.", 0) == 0 ||
        k == "bootstrap.servers" || k == "client.id") {
      connection[k] = v;
    }
  }
  const std::string brokers = rc.kafka.bootstrap_servers.empty() ? connection["bootstrap.servers"]
                                                                 : rc.kafka.bootstrap_servers;
  if (!rc.failure.dead_letter_topic.empty()) {
    p.dead_letters =
        std::make_unique<DeadLetterProducer>(brokers, rc.failure.dead_letter_topic, connection);
  }
  if (p.shedder && !rc.shedding.to_topic.empty()) {
    p.shed_topic = std::make_unique<DeadLetterProducer>(brokers, rc.shedding.to_topic, connection);
  }
  p.runtime = std::make_unique<ConsumerRuntime>(rc, config_.make_policy(), config_.guards,
                                                p.handler, p.clock);
  if (rc.batch.enabled) p.runtime->source().set_batching(rc.batch, p.batch_handler, p.batch_drop);
  // Only a sink that can push back (http, exec) feeds the sink_pushback guard.
  if (p.http || p.exec) {
    p.runtime->set_sink_pushback(
        [pipeline = p.pipeline.get()] { return pipeline->take_pushback_fraction(); });
  }
  p.runtime->start();
  spdlog::info("consuming {} from {} with policy {} ({}..{} workers)", rc.kafka.topics.front(),
               rc.kafka.bootstrap_servers, config_.policy_name, config_.guards.min_workers,
               config_.guards.max_workers);

  // The control API and /metrics on one port. The context also serves status() when the API
  // is off.
  ConsumerRuntime& runtime = *p.runtime;
  auto registry = std::make_shared<prometheus::Registry>();
  p.metrics = std::make_unique<RuntimeMetrics>(
      registry, rc.catch_up_seconds,
      PacingEstimator(rc.pacing, rc.tick_seconds, config_.calibration));
  p.delivery_metrics = std::make_unique<DeliveryMetrics>(*registry);
  RuntimeMetrics& metrics = *p.metrics;
  p.api_context = std::make_unique<ApiContext>(runtime.controller(), p.clock);
  ApiContext& ctx = *p.api_context;
  ctx.token = p.api_token;
  ctx.metrics_text = [&metrics] { return metrics.render(); };
  ctx.status_tick_extra = [&metrics] { return metrics.last_tick_status(); };
  ctx.status_live_extra = [&metrics, &runtime, &p, pipeline = p.pipeline.get()] {
    nlohmann::json j = {{"pool_size_now", runtime.pool().size()}};
    // The age of the lag data now: its age at the tick plus the time since the tick; null
    // before the first tick, or while a partition was never refreshed.
    const double age = metrics.lag_age_seconds(unix_seconds_now());
    j["lag_age_seconds"] = age >= 0 ? nlohmann::json(age) : nlohmann::json(nullptr);
    j["deliveries"] = to_json(pipeline->stats());
    if (p.shedder) {
      // shedding.active and the shed counts (any thread); pressure as of the last tick.
      nlohmann::json shed = to_json(p.shedder->stats());
      shed["config"] = p.shedder->config().to_json();
      j["shedding"] = std::move(shed);
    }
    return j;
  };
  ctx.pacing = [&metrics] { return pacing_json(metrics.pacing(), unix_seconds_now()); };
  ctx.set_paused = [&runtime](bool paused) {
    paused ? runtime.source().pause_consumption() : runtime.source().resume_consumption();
  };
  ctx.ready = [&runtime] {
    if (std::string why = runtime.failure(); !why.empty())
      return Readiness{false, "failed: " + why};
    if (!runtime.source().joined()) return Readiness{false, "not yet assigned partitions"};
    if (runtime.controller().ticks() == 0) return Readiness{false, "no control tick yet"};
    return Readiness{true, ""};
  };
  if (config_.http.enabled) {
    p.api = std::make_unique<HttpApi>(ctx);
    if (p.api->start(config_.http.host, config_.http.port)) {
      spdlog::info("control API and /metrics on http://{}:{}", config_.http.host, p.api->port());
    } else {
      spdlog::error("control API: cannot listen on {}:{}; consuming without it", config_.http.host,
                    config_.http.port);
      p.api.reset();
    }
  }
  if (options_.tick_thread == ServiceOptions::TickThread::kOwn) {
    {
      std::lock_guard lock(stop_mutex_);
      loop_running_ = true;  // before the thread runs: stop() must wait for it
    }
    tick_thread_ = std::thread([this] { tick_loop(); });
  }
}

void Service::run_until_stopped() {
  if (options_.tick_thread == ServiceOptions::TickThread::kCaller) {
    {
      std::lock_guard life(lifecycle_mutex_);
      if (!started_ || stopped_) return;
      std::lock_guard lock(stop_mutex_);
      loop_running_ = true;  // under lifecycle_mutex_: a stop() cannot be half done
    }
    tick_loop();
  } else {
    std::unique_lock lock(stop_mutex_);
    stop_cv_.wait(lock, [this] { return stop_requested_; });
  }
  stop();
}

// Ticks every tick_seconds on the clock (TickBeat: a late tick says why, and beats missed by
// more than a period are skipped, not caught up), until a stop is requested. loop_running_ is
// true while it runs.
void Service::tick_loop() {
  Parts& p = *parts_;
  TickBeat beat(config_.runtime.tick_seconds, p.clock.now());
  std::unique_lock lock(stop_mutex_);
  while (!stop_requested_) {
    const double wait = beat.due() - p.clock.now();
    if (wait > 0 && stop_cv_.wait_for(lock, std::chrono::duration<double>(wait),
                                      [this] { return stop_requested_; })) {
      break;
    }
    lock.unlock();
    const double tick_start = p.clock.now();
    const TickSchedule schedule = beat.begin(tick_start);
    if (!schedule.late.empty()) spdlog::info("control tick {}", schedule.late);
    const TickReport report = p.runtime->tick(schedule);
    p.metrics->record_tick(report, p.runtime->controller().guard_config(),
                           report.decision.source == "override", p.clock.now() - tick_start,
                           unix_seconds_now());
    p.delivery_metrics->record(p.pipeline->stats(), p.exec ? p.exec->restarts() : 0);
    if (p.shedder) {
      tick_shedding(*p.shedder, *p.runtime, *p.delivery_metrics, report, tick_start);
    }
    // drop_last: one line per tick with what was dropped since the last one.
    if (const uint64_t dropped = report.source.dropped_incomplete_batch;
        dropped > p.dropped_incomplete_logged) {
      spdlog::info(
          "batch: dropped {} message(s) of incomplete batches this tick (batch.drop_last, "
          "max_wait_seconds {}); {} in all",
          dropped - p.dropped_incomplete_logged, config_.runtime.batch.max_wait_seconds, dropped);
      p.dropped_incomplete_logged = dropped;
    }
    p.metrics->publish();  // after every recorder: scrapes until the next tick read this text
    if (p.api) p.api->publish_status();  // the same, for /v1/status's tick part
    if (options_.on_status_line) {
      options_.on_status_line(format_status_line(report, options_.json_status_lines));
    }
    if (options_.on_tick) options_.on_tick(report);
    beat.end(p.clock.now());
    // Crash-only: a runtime that failed (poll thread dead, a task threw into the pool) stops,
    // drains and commits (bounded), and the owner exits non-zero (failure()).
    if (std::string why = p.runtime->failure(); !why.empty()) {
      spdlog::error("stopping: {}", why);
      request_stop();
    }
    lock.lock();
  }
  loop_running_ = false;
  stop_cv_.notify_all();
}

void Service::request_stop() {
  std::lock_guard lock(stop_mutex_);
  stop_requested_ = true;
  stop_cv_.notify_all();
}

std::string Service::failure() const {
  return parts_ && parts_->runtime ? parts_->runtime->failure() : std::string();
}

bool Service::stop_requested() const {
  std::lock_guard lock(stop_mutex_);
  return stop_requested_;
}

void Service::stop() {
  request_stop();
  std::lock_guard life(lifecycle_mutex_);
  if (!started_ || stopped_) return;
  {
    // The loop ends after its tick in progress (its own thread, or run_until_stopped's caller).
    std::unique_lock lock(stop_mutex_);
    stop_cv_.wait(lock, [this] { return !loop_running_; });
  }
  if (tick_thread_.joinable()) tick_thread_.join();
  shutdown();
  stopped_ = true;
}

void Service::shutdown() {
  Parts& p = *parts_;
  if (p.api) p.api->stop();
  spdlog::info("stopping: finishing in-flight messages and committing");
  // Messages waiting to be retried are given up now (not committed: delivered again later);
  // attempts in progress finish.
  p.pipeline->stop();
  // No runtime when start() threw before building it (a property librdkafka refuses).
  if (p.runtime) p.runtime->stop();
}

nlohmann::json Service::status() const {
  const Parts& p = *parts_;
  if (p.api) return p.api->status();
  if (!p.api_context) return nlohmann::json::object();
  return status_document(*p.api_context, false);
}

int Service::api_port() const {
  return parts_->api ? parts_->api->port() : 0;
}

std::string Service::bootstrap_servers() const {
  return config_.runtime.kafka.bootstrap_servers;
}

const Clock& Service::clock() const {
  return parts_->clock;
}

ConsumerRuntime& Service::runtime() {
  if (!parts_->runtime) throw std::logic_error("lagpilot::Service::runtime() before start()");
  return *parts_->runtime;
}

}  // namespace lagpilot
