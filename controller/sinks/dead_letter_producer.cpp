#include "controller/sinks/dead_letter_producer.h"

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include "controller/kafka/rdkafka_handles.h"

namespace lagpilot {
namespace {

// One produce's acknowledgement. Shared by the sender and the delivery report, since a report
// may arrive after the sender gave up waiting.
struct PendingAck {
  std::mutex mu;  // guards done, error
  std::condition_variable cv;
  bool done = false;
  std::string error;
};

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
  auto* pending = static_cast<std::shared_ptr<PendingAck>*>(m->_private);
  {
    std::lock_guard lock((*pending)->mu);
    (*pending)->done = true;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) (*pending)->error = rd_kafka_err2str(m->err);
    (*pending)->cv.notify_all();
  }
  delete pending;
}

}  // namespace

struct DeadLetterProducer::Handle {
  RdKafka rk;
  ~Handle() {
    if (rk) rd_kafka_flush(rk.get(), 5000);  // the last delivery reports, before the destroy
  }
};

DeadLetterProducer::DeadLetterProducer(const std::string& bootstrap, std::string topic,
                                       const std::map<std::string, std::string>& properties,
                                       double ack_timeout_seconds)
    : handle_(std::make_unique<Handle>()),
      topic_(std::move(topic)),
      ack_timeout_seconds_(ack_timeout_seconds) {
  RdKafkaConf conf(rd_kafka_conf_new());
  char errstr[512];
  std::map<std::string, std::string> settings = {{"bootstrap.servers", bootstrap},
                                                 {"acks", "all"},
                                                 {"enable.idempotence", "true"},
                                                 {"linger.ms", "1"},
                                                 {"log_level", "4"}};
  for (const auto& [k, v] : properties) settings[k] = v;
  for (const auto& [k, v] : settings) {
    if (rd_kafka_conf_set(conf.get(), k.c_str(), v.c_str(), errstr, sizeof errstr) !=
        RD_KAFKA_CONF_OK) {
      throw std::runtime_error("dead-letter producer: property " + k + "=" + v + ": " + errstr);
    }
  }
  rd_kafka_conf_set_dr_msg_cb(conf.get(), on_delivery);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr, sizeof errstr);
  if (rk == nullptr) {
    throw std::runtime_error(std::string("dead-letter producer: cannot create: ") + errstr);
  }
  conf.release();  // rd_kafka_new owns it now
  handle_->rk.reset(rk);
  poll_thread_ = std::thread([this] {
    while (!stop_.load()) rd_kafka_poll(handle_->rk.get(), 100);
  });
}

DeadLetterProducer::~DeadLetterProducer() {
  stop_.store(true);
  if (poll_thread_.joinable()) poll_thread_.join();
  handle_.reset();  // flushes, serving the last delivery reports
}

std::string DeadLetterProducer::send(
    const SourceMessage& m, const std::string& error, int attempts, int64_t first_failure_unix_ms,
    const std::vector<std::pair<std::string, std::string>>& extra) {
  RdKafkaHeaders headers(rd_kafka_headers_new(8 + m.headers.size() + extra.size()));
  const auto add = [&](const char* name, const std::string& value) {
    rd_kafka_header_add(headers.get(), name, -1, value.data(), static_cast<ssize_t>(value.size()));
  };
  for (const auto& [name, value] : m.headers) add(name.c_str(), value);  // the original ones first
  add("lagpilot-original-topic", m.topic);
  add("lagpilot-original-partition", std::to_string(m.partition));
  add("lagpilot-original-offset", std::to_string(m.offset));
  add("lagpilot-error", error);
  add("lagpilot-attempts", std::to_string(attempts));
  add("lagpilot-first-failure", std::to_string(first_failure_unix_ms));
  for (const auto& [name, value] : extra) add(name.c_str(), value);

  auto pending = std::make_shared<PendingAck>();
  auto* opaque = new std::shared_ptr<PendingAck>(pending);
  const rd_kafka_resp_err_t err = rd_kafka_producev(
      handle_->rk.get(), RD_KAFKA_V_TOPIC(topic_.c_str()),
      RD_KAFKA_V_KEY(m.has_key ? m.key.data() : nullptr, m.has_key ? m.key.size() : 0),
      RD_KAFKA_V_VALUE(const_cast<char*>(m.value.data()), m.value.size()),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(headers.get()),
      RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    delete opaque;  // not queued: no report will come, and the headers are still ours
    return std::string("produce: ") + rd_kafka_err2str(err);
  }
  headers.release();  // librdkafka owns them once the message is queued
  std::unique_lock lock(pending->mu);
  if (!pending->cv.wait_for(lock, std::chrono::duration<double>(ack_timeout_seconds_),
                            [&] { return pending->done; })) {
    return "no acknowledgement within " + std::to_string(ack_timeout_seconds_) + " s";
  }
  return pending->error;
}

}  // namespace lagpilot
