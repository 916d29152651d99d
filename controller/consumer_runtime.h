#pragma once
// The live runtime: a KafkaSource feeding a WorkerPool, and the shared ControlLoop resizing the
// pool every tick. Only the Sampler (Kafka lag + pool statistics) and the Actuator (the pool)
// are specific to production; the policy and the guards are the ones the simulator runs.
//
// Thread-safety: start(), tick() and stop() are called from one control thread. controller()
// may be used from any thread (it is internally locked). The handler runs on pool workers.

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "controller/handler_config.h"
#include "controller/kafka/batch_config.h"
#include "controller/kafka/kafka_source.h"
#include "controller/metrics/pacing.h"
#include "controller/metrics/tick_report.h"
#include "controller/pool/worker_pool.h"
#include "controller/sinks/failure_policy.h"
#include "controller/sinks/shedding.h"
#include "policies/clock.h"
#include "policies/config_reader.h"
#include "policies/control_loop.h"

namespace lagpilot {

// Everything `lagpilot run` reads from its config file besides "policy" and "guards".
struct RuntimeConfig {
  std::string broker = "embedded";  // "embedded": start the mock cluster in-process; "external"
  int embedded_brokers = 1;
  int topic_partitions = 8;  // partitions of each topic the embedded broker creates
  KafkaSourceConfig kafka;
  WorkerPoolOptions pool;  // initial_workers and max_workers follow the guards
  HandlerConfig handler;   // "handler": synthetic (the default), http or exec
  FailureConfig failure;   // "failure": retries, backoff, dead letters
  ShedConfig shedding;     // "shedding": opt-in (enabled only with a "shedding" object)
  BatchConfig batch;       // "batch": opt-in batch delivery (enabled only with a "batch" object)
  std::string ledger;      // file to append processed (topic, partition, offset, seq)
  double tick_seconds = 1.0;
  double shutdown_timeout_seconds = 10.0;
  double lag_slo = 10000;  // messages; "seconds above the lag SLO" counts ticks above it
  // Capacity estimate (lagpilot_needed_workers, lagpilot_recommended_replicas): the backlog is
  // to be drained within this many seconds on top of the arrivals (CapacityEstimator).
  double catch_up_seconds = 60;
  // "pacing": the burst headroom of the producer pacing recommendation (GET /v1/pacing).
  PacingConfig pacing;

  // Reads this struct's keys from the top-level config object (leaves other keys alone).
  static void read_keys(JsonObjectReader& root, RuntimeConfig& config);
  void write_keys(nlohmann::json& root) const;
};

// Totals over the whole run, for the end-of-run summary.
struct RuntimeTotals {
  double seconds = 0;
  double worker_seconds = 0;
  double seconds_above_slo = 0;
  int scale_actions = 0;
  int64_t max_lag = 0;
};

class ConsumerRuntime {
 public:
  ConsumerRuntime(RuntimeConfig config, std::unique_ptr<Policy> policy, GuardConfig guards,
                  MessageHandler handler, const Clock& clock);
  ~ConsumerRuntime();

  // Where the sink's pushback fraction comes from (Observation::sink_pushback: the fraction of
  // deliveries since the last call that the sink pushed back). Unset: -1, no sink. Before
  // start(); it is called on the control thread, once per tick.
  void set_sink_pushback(std::function<double()> source);
  // Starts the pool and the Kafka source (subscribes). kafka.bootstrap_servers must be set.
  void start();
  // One control iteration: sample, decide, guard, resize. `schedule` says how the tick kept
  // its beat; the decision records why it was late.
  TickReport tick(const TickSchedule& schedule = {});
  // Stops fetching, lets in-flight messages finish (bounded by shutdown_timeout_seconds),
  // commits and closes the consumer. Idempotent.
  void stop();

  // Any thread. Empty while healthy; else why this runtime cannot go on (the Kafka poll thread
  // died, or a task let an exception escape into the pool). Its owner should stop() (which
  // still drains and commits, bounded) and exit non-zero so that a supervisor restarts it.
  std::string failure() const;

  ControlLoop& controller() { return *controller_; }
  WorkerPool& pool() { return *pool_; }
  KafkaSource& source() { return *source_; }
  RuntimeTotals totals() const { return totals_; }
  const RuntimeConfig& config() const { return config_; }

 private:
  class LiveSampler;
  class PoolActuator;

  RuntimeConfig config_;
  const Clock& clock_;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<KafkaSource> source_;
  std::unique_ptr<LiveSampler> sampler_;
  std::unique_ptr<PoolActuator> actuator_;
  std::unique_ptr<ControlLoop> controller_;
  RuntimeTotals totals_;
  double last_tick_ = -1;
  bool stopped_ = false;
};

// A status line for humans ("t=12s in=1200/s lag=5600 p99=12.3ms workers 6->8 | pid: ...") or
// one JSON object per line for machines.
std::string format_status_line(const TickReport& report, bool json);

}  // namespace lagpilot
