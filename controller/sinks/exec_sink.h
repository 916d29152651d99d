#pragma once
// The `exec` sink: each pool worker owns one long-running child process (handler.command),
// fed one message at a time as a JSON line on its stdin, answering one JSON line on its stdout:
//
//   -> {"topic":"events","partition":3,"offset":42,"key":"user-7","value":"...",
//       "headers":[["name","value"],...],"timestamp":1714566896789}
//   <- {"ok": true}
//   <- {"ok": false, "error": "feature store down", "retry": true}     transient (pushback)
//   <- {"ok": false, "error": "bad schema", "retry": false}            permanent
//
// A key or value that is not valid UTF-8 is sent base64-encoded, with "key_encoding" or
// "value_encoding": "base64" beside it; a null key is JSON null, a missing timestamp -1.
//
// Batches (config "batch"; deliver_batch): one line per batch, the JSON array of the
// messages' objects above, and one reply, as above, for the whole batch.
//
// The child is the worker's: it is started on the worker's first message and stopped when the
// worker's thread ends (the pool retires a worker after its message in hand), so the number of
// children follows the pool size. A child that exits, answers something that is not a reply,
// or does not answer within handler.timeout_seconds is killed, the message is retried (by the
// caller's retry rules), and the next message starts a new child after a backoff that doubles
// with each consecutive failure (restart_backoff_seconds, at most 30 s). The child's stderr goes
// to lagpilot's log, a line at a time, with the worker's child id.
//
// Thread-safety: deliver() from any number of threads at once; each thread talks only to its
// own child. children_running() and restarts() from any thread.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "controller/kafka/kafka_source.h"
#include "controller/sinks/delivery.h"

namespace lagpilot {

struct ExecSinkConfig {
  std::vector<std::string> command;  // argv; command[0] is looked up in PATH
  double timeout_seconds = 30;       // for one reply
  double restart_backoff_seconds = 0.1;
  // The backoff doubles up to this, and a configured one may not exceed it.
  static constexpr double kMaxRestartBackoffSeconds = 30;

  // Reads {"command", "timeout_seconds", "restart_backoff_seconds"} of the "handler" object
  // (the caller reads "type"); throws ConfigError naming the JSON path.
  static ExecSinkConfig from_json(const nlohmann::json& j, const std::string& path);
  void write_keys(nlohmann::json& j) const;
};

class ExecSink {
 public:
  explicit ExecSink(ExecSinkConfig config);
  ~ExecSink();  // stops every child (their workers must be done delivering)

  ExecSink(const ExecSink&) = delete;
  ExecSink& operator=(const ExecSink&) = delete;

  // One attempt, on the calling thread's child. Never throws for what the child does.
  Delivery deliver(const SourceMessage& message);
  // One attempt of a whole batch: one JSON array line, one reply.
  Delivery deliver_batch(std::span<const SourceMessage> batch);

  int children_running() const;
  uint64_t restarts() const { return restarts_.load(); }

  class Child;  // exec_sink.cpp

 private:
  struct ThreadSlot;
  ThreadSlot& slot();
  Delivery deliver_line(const std::string& line);

  ExecSinkConfig config_;
  const uint64_t id_;                  // tells this sink's thread-local slots from other sinks'
  std::atomic<uint64_t> restarts_{0};  // atomic: counted by workers, read by metrics
  std::atomic<int> next_child_id_{0};  // atomic: workers number their children
  mutable std::mutex children_mutex_;  // guards children_
  std::vector<std::weak_ptr<Child>> children_;
};

// The JSON line sent to an exec child for `message` (without the newline).
std::string exec_request_line(const SourceMessage& message);
// The JSON array line sent for a batch (without the newline).
std::string exec_batch_line(std::span<const SourceMessage> batch);

// True when `text` is valid UTF-8 (no overlong forms, no surrogates).
bool is_valid_utf8(std::string_view text);
std::string base64_encode(std::string_view bytes);

}  // namespace lagpilot
