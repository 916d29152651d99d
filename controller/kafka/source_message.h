#pragma once
// What a handler sees of one Kafka message, and the handler's type.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
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
// logged, and its offset still completes (at-least-once delivery to the handler), unless the
// exception is MessageAbandoned. (lagpilot::Service retries failures itself, so that a failed
// message is committed only once it succeeded, was dead-lettered or was dropped on purpose.)
// The SourceMessage is valid only during the call (the worker refills it for the next one).
using MessageHandler = std::function<void(const SourceMessage&)>;

// With a "batch" config: called on pool workers, concurrently, with one batch of one
// partition's messages in offset order (1 to batch.max_messages of them). The batch succeeds or
// fails as a whole: returning finishes every message of it, an exception fails them all (under
// lagpilot::Service: retried, then dead-lettered or dropped, as one unit), MessageAbandoned
// leaves them all unfinished. The span and its messages are valid only during the call.
using BatchHandler = std::function<void(std::span<const SourceMessage>)>;

// Called by a handler, on its worker and during the call, for messages of that call it
// finished on purpose without processing them (shed under backpressure: lagpilot::Service's
// shedding calls it): the Kafka source counts them in `shed` instead of `processed` (their
// offsets complete all the same), so the processed rate is what the sink took. At most the
// call's messages count; outside a call of the Kafka source's handler it does nothing.
void count_as_shed(std::size_t messages = 1);

// Thrown by a handler to leave a message unfinished, when it is shutting down while the
// message waits to be retried: the message is not processed and not failed; it and the rest of
// its lane are given up (counted as dropped), so its offset is never committed and the next
// owner of the partition gets it again.
class MessageAbandoned : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace lagpilot
