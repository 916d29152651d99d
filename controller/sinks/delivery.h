#pragma once
// What delivering one message to a sink came to, and how a C++ handler says "do not retry".
//
// Every sink (the C++ callable, http, exec) answers one of three things per attempt:
//   done       the message is finished; its offset may be committed
//   retry      a transient failure (5xx, a timeout, a lost connection, an exception, an exec
//              reply with "retry": true): deliver the same message again after a backoff, or
//              after retry_after_seconds when the sink said when (Retry-After)
//   permanent  the sink will never take this message (4xx other than 429, PermanentFailure,
//              an exec reply with "retry": false): dead-letter, drop or retry it as configured
// `pushback` marks a retry that the sink asked for because it is saturated (429, 503, an exec
// "retry"): the controller reads it as a signal not to add concurrency.
//
// Thread-safety: plain values.

#include <stdexcept>
#include <string>

namespace lagpilot {

enum class DeliveryResult { kDone, kRetry, kPermanent };

struct Delivery {
  DeliveryResult result = DeliveryResult::kDone;
  std::string error;                // why it was not done ("HTTP 503", "timeout", ...)
  double retry_after_seconds = -1;  // the sink's own wait (Retry-After); -1 when it gave none
  bool pushback = false;            // the sink is saturated (429/503, exec "retry")

  static Delivery done() { return {}; }
  static Delivery retry(std::string error, double retry_after_seconds = -1, bool pushback = false) {
    return {DeliveryResult::kRetry, std::move(error), retry_after_seconds, pushback};
  }
  static Delivery permanent(std::string error) {
    return {DeliveryResult::kPermanent, std::move(error), -1, false};
  }
};

const char* delivery_result_name(DeliveryResult result);  // "done" | "retry" | "permanent"

// Thrown by a C++ MessageHandler for a message that must not be retried (it is dead-lettered,
// dropped or retried as the "failure" config says). Any other exception is transient.
class PermanentFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace lagpilot
