#pragma once
// The /v1/status document, built in two parts so that a request does not rebuild what only a
// control tick changes.
//
//   tick part   ticks, last tick time, workers and bounds, policy, last decision, lag, rates,
//               latency, queue, and ApiContext::status_tick_extra under "runtime": changes
//               when the controller ticks, or when an operator changes bounds or the policy
//   live part   time, operator pause, the override (with its remaining time), and
//               ApiContext::status_live_extra under "runtime": read per request
//
// status_document() builds both. StatusPublisher serializes the tick part once (after each
// tick and each mutation), member by member, and a request only builds the live part and
// splices the two texts. Both are JSON objects whose members are merged in key order (the
// order nlohmann::json sorts them in), so the spliced text is the document status_document()
// builds; a key both parts give is taken from the live part.
//
// Thread-safety: status_document() on any thread (ApiContext's callbacks are thread-safe).
// StatusPublisher: publish(), text() and published() on any thread; publishes are serialized
// (the tick thread and the API's request threads both publish).

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "controller/api/http_api.h"
#include "policies/guards.h"
#include "policies/observation.h"

namespace lagpilot {

// A JSON answer's text, compact. Never throws on text: invalid UTF-8 (which only a query string
// can bring in; bodies are validated by the parser) is replaced.
std::string response_text(const nlohmann::json& j);

// One decision-log entry as the API shows it (/v1/status "last_decision", /v1/decisions).
nlohmann::json decision_json(const Decision& d);
// An override pin with its remaining time at `now`; null when there is none.
nlohmann::json override_json(const std::optional<ManualOverride>& pin, double now);

// The whole /v1/status document now.
nlohmann::json status_document(ApiContext& ctx, bool operator_paused);

class StatusPublisher {
 public:
  explicit StatusPublisher(ApiContext& ctx) : ctx_(ctx) {}

  // Serializes the tick part now. A callback that throws (status_tick_extra) withdraws the
  // published text, so that requests build the whole document and answer its error, instead
  // of serving an old tick as if it were current; the error is returned.
  std::optional<std::string> publish();
  // Whether a tick part is published (text() uses it).
  bool published() const;
  // The /v1/status text: the published tick part with the live part spliced in, or the whole
  // document built now when nothing is published. Throws what a callback throws.
  std::string text(bool operator_paused) const;

 private:
  struct Member {
    std::string key;   // for the merge order
    std::string text;  // "key":value
  };
  struct Published {
    std::vector<Member> top;      // the tick part's members, without "runtime"
    std::vector<Member> runtime;  // status_tick_extra's members
  };

  ApiContext& ctx_;
  std::mutex publish_mutex_;  // serializes publish(): a mutation's publish and a tick's in order
  mutable std::mutex mutex_;  // guards published_
  std::shared_ptr<const Published> published_;
};

}  // namespace lagpilot
