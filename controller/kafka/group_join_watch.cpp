#include "controller/kafka/group_join_watch.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <stdexcept>
#include <string>

namespace lagpilot {
namespace {

constexpr int16_t kJoinGroup = 11;  // Kafka protocol api keys
constexpr int16_t kSyncGroup = 14;
constexpr const char* kName = "lagpilot-group-join-watch";

rd_kafka_resp_err_t request_sent(rd_kafka_t*, int, const char*, int32_t, int16_t api_key, int16_t,
                                 int32_t, size_t, void* opaque) {
  static_cast<GroupJoinWatch*>(opaque)->on_request_sent(api_key);
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

rd_kafka_resp_err_t response_received(rd_kafka_t*, int, const char*, int32_t, int16_t api_key,
                                      int16_t, int32_t, size_t, int64_t, rd_kafka_resp_err_t err,
                                      void* opaque) {
  static_cast<GroupJoinWatch*>(opaque)->on_response_received(api_key, err);
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

}  // namespace

void GroupJoinWatch::install(rd_kafka_conf_t* conf) {
  if (rd_kafka_conf_interceptor_add_on_new(conf, kName, &GroupJoinWatch::on_new, this) !=
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw std::runtime_error("kafka: installing the group-join interceptor failed");
  }
}

rd_kafka_resp_err_t GroupJoinWatch::on_new(rd_kafka_t* rk, const rd_kafka_conf_t*, void* opaque,
                                           char*, size_t) {
  rd_kafka_resp_err_t err =
      rd_kafka_interceptor_add_on_request_sent(rk, kName, &request_sent, opaque);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    err = rd_kafka_interceptor_add_on_response_received(rk, kName, &response_received, opaque);
  }
  return err;
}

void GroupJoinWatch::hold() {
  since_.store(
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(),
      std::memory_order_relaxed);
  warned_.store(false, std::memory_order_relaxed);
  joining_.store(true, std::memory_order_release);
}

bool GroupJoinWatch::joining(double now_seconds) const {
  if (!joining_.load(std::memory_order_acquire)) return false;
  if (now_seconds - since_.load(std::memory_order_relaxed) <= kMaxHoldSeconds) return true;
  if (!warned_.exchange(true, std::memory_order_relaxed)) {  // once per hold
    spdlog::warn("kafka: no end seen of a group join begun {:.0f} s ago; committing again",
                 now_seconds - since_.load(std::memory_order_relaxed));
  }
  return false;
}

void GroupJoinWatch::on_request_sent(int16_t api_key) {
  if (api_key != kJoinGroup) return;
  joins_.fetch_add(1, std::memory_order_relaxed);
  hold();
}

void GroupJoinWatch::on_response_received(int16_t api_key, rd_kafka_resp_err_t err) {
  // A SyncGroup answer ends the join (the generation is settled, whatever its error code); a
  // JoinGroup that failed on the wire ends it too (librdkafka starts over with a new one).
  if (api_key == kSyncGroup || (api_key == kJoinGroup && err != RD_KAFKA_RESP_ERR_NO_ERROR)) {
    joining_.store(false, std::memory_order_release);
  }
}

}  // namespace lagpilot
