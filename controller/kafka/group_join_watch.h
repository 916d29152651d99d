#pragma once
// GroupJoinWatch: tells the source when a consumer-group join is on the wire, so that it does
// not send offset commits that would race the join.
//
// Why: a broker answers the requests of one connection in order, and it holds a JoinGroup
// until every member has rejoined (the mock cluster: up to session.timeout.ms - 1 s). A commit
// sent after our JoinGroup waits behind it and is then refused with ILLEGAL_GENERATION, because
// the join bumped the generation. librdkafka 2.0 answers that error by forgetting its
// generation: the SyncGroup that follows fails too, the whole assignment is declared lost, and
// everything since the last good commit is delivered again (librdkafka fixed this in 2.10,
// issue #4908; Debian 12 ships 2.0). So the source holds its commits from the moment a
// JoinGroup is written until a SyncGroup answer arrives; the commit in the revoke callback (the
// one that matters, after the sync) is not held.
//
// It watches the wire with librdkafka interceptors (on_request_sent, on_response_received),
// which run on librdkafka's broker threads; joining() may be called from any thread.
//
// Lifetime: install() before rd_kafka_new() on the conf that is handed to it; the object must
// outlive the rd_kafka_t made from that conf.

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <cstdint>

namespace lagpilot {

class GroupJoinWatch {
 public:
  GroupJoinWatch() = default;
  GroupJoinWatch(const GroupJoinWatch&) = delete;
  GroupJoinWatch& operator=(const GroupJoinWatch&) = delete;

  // Registers the interceptors on conf. Throws std::runtime_error if librdkafka refuses.
  void install(rd_kafka_conf_t* conf);

  // True from a JoinGroup written until the next SyncGroup answer (or a failed JoinGroup), and
  // at most kMaxHoldSeconds (a safety net: a join that never completes must not stop commits
  // for good; the hold is then dropped with a warning). `now_seconds`: steady-clock seconds.
  static constexpr double kMaxHoldSeconds = 120;
  bool joining(double now_seconds) const;
  // The revoke callback is returning: librdkafka rejoins as soon as it does (after the assign
  // callback that may follow in the same poll), before its JoinGroup reaches the wire, so the
  // hold starts now rather than when the interceptor sees the request. The next SyncGroup
  // answer ends it. Poll thread.
  void rejoin_expected() { hold(); }
  // JoinGroup requests seen (each membership change costs at least one).
  uint64_t joins() const { return joins_.load(std::memory_order_relaxed); }

  // Test seam: what the interceptors do, without a broker.
  void on_request_sent(int16_t api_key);
  void on_response_received(int16_t api_key, rd_kafka_resp_err_t err);

 private:
  static rd_kafka_resp_err_t on_new(rd_kafka_t* rk, const rd_kafka_conf_t* conf, void* opaque,
                                    char* errstr, size_t errstr_size);
  void hold();
  std::atomic<bool> joining_{false};  // atomic: written on broker threads, read on any thread
  std::atomic<double> since_{0};      // atomic: steady seconds when the hold started
  std::atomic<uint64_t> joins_{0};    // atomic: as joining_
  // atomic: set by joining() (any thread) once it has logged the expired hold; hold() clears it.
  mutable std::atomic<bool> warned_{false};
};

}  // namespace lagpilot
