#pragma once
// lagpilot: the one header an embedder includes.
//
//   #include <lagpilot/lagpilot.h>
//
//   lagpilot::Service service(lagpilot::Service::config_from_file("lagpilot.json"),
//                             [](const lagpilot::SourceMessage& m) { /* your work */ });
//   service.start();
//   service.run_until_stopped();  // until stop() or request_stop() from elsewhere
//
// A Service consumes the config's Kafka topics as one member of a consumer group (librdkafka;
// "broker": "embedded" starts librdkafka's mock cluster in-process, for demos and tests), runs
// the handler on a worker pool, and every tick_seconds samples the lag and the handler's
// latency and resizes the pool with the configured policy and guards. Offsets are committed
// only below messages whose handler returned (or threw: then the message is counted failed),
// so delivery to the handler is at-least-once. The control API and /metrics ("http") are on by
// default; "http": {"enabled": false} switches them off. The config is the file `lagpilot run`
// reads, read by the same code, with the same errors.
//
// Thread-safety.
//  * The handler runs on pool workers, concurrently (messages with the same key one at a time,
//    in order, with the default "ordering": "key"). The SourceMessage is valid only during the
//    call.
//  * start(), run_until_stopped() and stop() are for the owner's threads: start() once, then
//    run_until_stopped() on one thread; stop() from any thread but the callbacks'.
//  * request_stop(), stop_requested(), status(), api_port() and the const accessors may be
//    called from any thread, callbacks included.
//  * The callbacks in ServiceOptions run on the tick thread, one tick at a time; they may call
//    request_stop() but not stop() (stop() waits for the tick thread).
//
// Link with lagpilot::lagpilot (find_package(lagpilot CONFIG REQUIRED)).

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "controller/app_config.h"
#include "controller/consumer_runtime.h"
#include "controller/kafka/kafka_source.h"
#include "controller/metrics/tick_report.h"
#include "lagpilot/version.h"

namespace lagpilot {

struct ServiceOptions {
  // Where the control loop ticks: on a thread that start() starts (kOwn), or on the thread
  // that calls run_until_stopped() (kCaller).
  enum class TickThread { kOwn, kCaller };
  TickThread tick_thread = TickThread::kOwn;
  // Bearer token that the API's mutations need. Empty: the environment variable that the
  // config's http.token_env names (unset: the API is read-only).
  std::string api_token;
  // After every tick, one status line: text ("t=12s in=1200/s lag=5600 ...") or, with
  // json_status_lines, one JSON object. Empty: no status lines.
  std::function<void(const std::string& line)> on_status_line;
  bool json_status_lines = false;
  // After every tick (after the metrics and the status line), with what the tick saw and did.
  std::function<void(const TickReport& report)> on_tick;
};

class Service {
 public:
  // The config `lagpilot run --config` reads. Errors name the file and the JSON path
  // (ConfigFileError) or, for from_string and from_json, the JSON path (ConfigError). The
  // simulator's "sim" section is kept as written: a Service does not simulate.
  static AppConfig config_from_file(const std::string& path);
  static AppConfig config_from_string(const std::string& json_text);
  static AppConfig config_from_json(const nlohmann::json& root);

  // `handler` runs for every message; empty: the config's synthetic handler ("handler": a
  // service-time distribution, for demos). With "ledger" set, every handled message is also
  // appended to that file. Throws ConfigError for a config that cannot run: "broker":
  // "external" without kafka.bootstrap_servers, or an API on a non-loopback host without a
  // token.
  Service(AppConfig config, MessageHandler handler, ServiceOptions options = {});
  // Batch delivery: `handler` gets batches of one partition's messages in offset order (the
  // config's "batch": max_messages, max_wait_seconds, drop_last; see BatchHandler). A batch is
  // retried, dead-lettered or dropped as a whole under the "failure" rules. Throws ConfigError
  // ("batch") when the config has no "batch" section. (With a "batch" section and the other
  // constructor, the http and exec sinks get batches; a MessageHandler or the synthetic
  // handler gets the messages of each batch in turn, and a failure of one fails the batch.)
  Service(AppConfig config, BatchHandler handler, ServiceOptions options = {});
  ~Service();  // stop()

  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Starts the embedded broker (if configured), the consumer (subscribes) and the API, and
  // with TickThread::kOwn the tick thread. Throws (std::runtime_error, ConfigError) if the
  // consumer cannot start; an API that cannot bind is logged and left off. Call once.
  void start();
  // Blocks until a stop is requested (ticking on this thread with TickThread::kCaller), then
  // stops as stop() does.
  void run_until_stopped();
  // Asks the loop to stop after the tick in progress; returns at once.
  void request_stop();
  bool stop_requested() const;
  // Any thread, after start(). Empty while healthy; else why the service stopped itself (the
  // Kafka poll thread died, or a task threw into the worker pool): /readyz answers 503 with it,
  // the loop stops after a bounded drain and commit, and the caller should exit non-zero.
  std::string failure() const;
  // request_stop(), then waits for the tick thread, stops the API, stops fetching, lets the
  // messages in flight finish (bounded by shutdown_timeout_seconds) and commits. Idempotent.
  void stop();

  // The document GET /v1/status serves (also when the API is off). After start().
  nlohmann::json status() const;
  // The API's bound port; 0 when it is off or not started.
  int api_port() const;
  // The brokers the consumer uses (the embedded broker's, once started).
  std::string bootstrap_servers() const;
  const AppConfig& config() const { return config_; }
  // The clock the control loop ticks with (seconds since the Service was built).
  const Clock& clock() const;
  // The runtime (pool, source, control loop), for what the Service does not wrap. After
  // start(); its own header states its thread rules.
  ConsumerRuntime& runtime();

 private:
  struct Parts;  // service.cpp

  Service(AppConfig config, MessageHandler handler, BatchHandler batch_handler,
          ServiceOptions options);

  void tick_loop();
  void shutdown();

  AppConfig config_;
  ServiceOptions options_;
  std::unique_ptr<Parts> parts_;

  // stop_mutex_ guards stop_requested_ and loop_running_; stop_cv_ signals changes of both.
  mutable std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stop_requested_ = false;
  bool loop_running_ = false;
  // lifecycle_mutex_ serialises start() and stop() (and so the shutdown) with each other.
  std::mutex lifecycle_mutex_;
  bool started_ = false;
  bool stopped_ = false;
  std::thread tick_thread_;
};

}  // namespace lagpilot
