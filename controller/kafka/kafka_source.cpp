// KafkaSource: construction, start, operator pause, stop. The parts are in kafka_source_core.h.
#include "controller/kafka/kafka_source.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <stdexcept>

#include "controller/kafka/kafka_source_core.h"
#include "policies/config_reader.h"

namespace lagpilot {

KafkaSource::Core::Core(KafkaSourceConfig c, ConsumerConf cc, WorkerPool& p, MessageHandler h,
                        const Clock& cl)
    : config(std::move(c)),
      pool(p),
      clock(cl),
      conf(std::move(cc.conf)),
      fetch_max_bytes(cc.fetch_max_bytes),
      max_partition_fetch_bytes(cc.max_partition_fetch_bytes) {
  max_poll_interval_seconds = cc.max_poll_interval_seconds;
  reset_to_latest = cc.reset_to_latest;
  const auto capacity = static_cast<int64_t>(pool.queue_capacity());
  max_unfinished =
      config.max_unfinished > 0 ? config.max_unfinished : std::max<int64_t>(2 * capacity, 2);
  resume_unfinished = max_unfinished / 5;
  sched = std::make_shared<LaneScheduler>(pool, std::move(h), clock,
                                          parse_ordering(config.ordering), resume_unfinished);
  rd_kafka_conf_set_opaque(conf.get(), this);
  rd_kafka_conf_set_rebalance_cb(conf.get(), &Core::rebalance_cb);
  rd_kafka_conf_set_offset_commit_cb(conf.get(), &Core::commit_cb);
  join_watch.install(conf.get());
}

KafkaSource::KafkaSource(KafkaSourceConfig config, WorkerPool& pool, MessageHandler handler,
                         const Clock& clock) {
  if (!handler) throw std::invalid_argument("KafkaSource: handler must not be empty");
  if (config.topics.empty()) throw ConfigError("kafka.topics", "must not be empty");
  if (!(config.commit_interval_seconds > 0)) {
    throw ConfigError("kafka.commit_interval_seconds", "must be > 0");
  }
  if (!(config.revoke_timeout_seconds >= 0)) {
    throw ConfigError("kafka.revoke_timeout_seconds", "must be >= 0");
  }
  if (config.max_unfinished < 0) throw ConfigError("kafka.max_unfinished", "must be >= 0");
  parse_ordering(config.ordering);  // (validated before the librdkafka properties)
  ConsumerConf conf = build_consumer_conf(config);
  core_ =
      std::make_shared<Core>(std::move(config), std::move(conf), pool, std::move(handler), clock);
}

KafkaSource::~KafkaSource() {
  if (started_ && !stopped_) stop(core_->config.revoke_timeout_seconds);
}

void KafkaSource::set_batching(const BatchConfig& config, BatchHandler deliver,
                               BatchHandler drop_incomplete) {
  if (started_) throw std::logic_error("KafkaSource::set_batching after start");
  core_->sched->set_batching(config, std::move(deliver), std::move(drop_incomplete));
}

void KafkaSource::start() {
  if (started_) throw std::logic_error("KafkaSource::start called twice");
  Core& c = *core_;
  char err[512];
  RdKafka rk{rd_kafka_new(RD_KAFKA_CONSUMER, c.conf.get(), err, sizeof(err))};
  if (!rk) throw std::runtime_error(std::string("kafka: creating the consumer: ") + err);
  (void)c.conf.release();  // owned by rk now
  rd_kafka_poll_set_consumer(rk.get());

  RdKafkaPartitionList topics = make_partition_list(static_cast<int>(c.config.topics.size()));
  for (const auto& t : c.config.topics) {
    rd_kafka_topic_partition_list_add(topics.get(), t.c_str(), RD_KAFKA_PARTITION_UA);
  }
  const rd_kafka_resp_err_t serr = rd_kafka_subscribe(rk.get(), topics.get());
  if (serr != RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw std::runtime_error(std::string("kafka: subscribing: ") + rd_kafka_err2str(serr));
  }
  c.rk = std::move(rk);
  started_ = true;
  std::string names;
  for (const auto& t : c.config.topics) names += (names.empty() ? "" : ",") + t;
  spdlog::info("kafka: consumer group {} subscribed to {} (ordering {})", c.config.group_id, names,
               c.config.ordering);
  auto core = core_;
  c.refresher = std::thread([core] { core->refresh_loop(); });
  poll_thread_ = std::thread([core] {
    // Nothing in the loop should throw. If something does, consumption has stopped: the
    // failure is recorded (readiness fails, the service stops and exits non-zero) and stop()
    // runs the drain and the final commit the loop did not reach.
    try {
      core->poll_loop();
    } catch (const std::exception& e) {
      core->record_poll_failure(e.what());
    } catch (...) {
      core->record_poll_failure("non-standard exception");
    }
  });
}

void KafkaSource::pause_consumption() {
  core_->operator_paused.store(true);
}
void KafkaSource::resume_consumption() {
  core_->operator_paused.store(false);
}

void KafkaSource::Core::record_poll_failure(const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(failure_mu);
    failure = "kafka poll thread failed: " + what;
  }
  poll_failed.store(true);
  spdlog::error("kafka: poll thread failed, consumption stopped: {}", what);
}

std::string KafkaSource::failure() const {
  if (!core_->poll_failed.load()) return "";
  std::lock_guard<std::mutex> lock(core_->failure_mu);
  return core_->failure;
}

void KafkaSource::inject_seek_failures_for_testing(int count) {
  core_->inject_seek_faults.store(count);
}

void KafkaSource::inject_poll_failure_for_testing() {
  core_->inject_poll_fault.store(true);
}

bool KafkaSource::joined() const {
  return core_->assigned.load() > 0;
}

void KafkaSource::stop(double timeout_seconds) {
  if (!started_ || stopped_) {
    stopped_ = true;
    return;
  }
  stopped_ = true;
  Core& c = *core_;
  c.stop_deadline = steady_after(std::isfinite(timeout_seconds) ? timeout_seconds : 1e6);
  c.stop_requested.store(true, std::memory_order_release);
  // Wakes a poll thread blocked in rd_kafka_consumer_poll, so that stopping starts at once
  // rather than up to kIdlePollMs later (the longer the gap, the likelier the group is
  // rebalancing by the time we close, which librdkafka 2.0 handles badly).
  if (RdKafkaQueue queue{rd_kafka_queue_get_consumer(c.rk.get())}) {
    rd_kafka_queue_yield(queue.get());
  }
  if (poll_thread_.joinable()) poll_thread_.join();
  if (c.poll_failed.load()) {
    // The loop died before its own drain: run it here (the poll thread is gone, so this thread
    // is the only one on the poll side now).
    try {
      c.shutdown_drain();
    } catch (const std::exception& e) {
      spdlog::error("kafka: stop after a poll-thread failure: drain and commit failed: {}",
                    e.what());
    }
  }
  c.stop_refresher();  // it uses rk: before the handle goes
  // Leaves the group: the revoke callback runs here (nothing left to wait for; commits are
  // already done, so it commits nothing new).
  const rd_kafka_resp_err_t err = rd_kafka_consumer_close(c.rk.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    spdlog::warn("kafka: closing the consumer: {}", rd_kafka_err2str(err));
  }
  RdKafka rk;
  {
    std::lock_guard<std::mutex> lock(c.sched->mu);
    rk = std::move(c.rk);
  }
  rk.reset();
  std::lock_guard<std::mutex> lock(c.sched->mu);
  const SourceCounters& n = c.sched->counters;
  spdlog::info(
      "kafka: consumer closed: consumed {}, processed {}, failed {}, lost to retention "
      "{}, commits {} ({} failed)",
      n.consumed, n.processed, n.failed, n.lost_to_retention, n.commits, n.commit_failures);
}

}  // namespace lagpilot
