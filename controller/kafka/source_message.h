#pragma once
// What a handler sees of one Kafka message, and the handler's type.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace lagpilot {

struct SourceMessage {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  std::string key;  // empty for a null key (see has_key)
  std::string value;
  int64_t timestamp_ms = -1;  // record timestamp (epoch ms), -1 if none
  bool has_key = false;       // false for a null key
  // The record's headers (name, value) in their order; a null value reads as "". Empty for a
  // message without headers.
  std::vector<std::pair<std::string, std::string>> headers;
};

// Called on pool workers, concurrently. May throw: the message is counted as failed and
// logged, and its offset still completes (at-least-once delivery, every message accounted).
// The SourceMessage is valid only during the call (the worker refills it for the next one).
using MessageHandler = std::function<void(const SourceMessage&)>;

}  // namespace lagpilot
