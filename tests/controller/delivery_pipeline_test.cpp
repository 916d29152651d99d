// DeliveryPipeline with scripted sinks: retries with backoff, dead letters (and their failures),
// drops, max_attempts, stop() abandoning a message in retry, the pushback fraction, and the
// failure semantics of a C++ handler.
#include "controller/sinks/delivery_pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <thread>

#include "policies/config_reader.h"

namespace lagpilot {
namespace {

FailureConfig fast(std::string dead_letter_topic = "", int max_attempts = 0,
                   std::string on_permanent = "") {
  FailureConfig c;
  c.initial_backoff_seconds = 0.001;
  c.max_backoff_seconds = 0.002;
  c.dead_letter_topic = std::move(dead_letter_topic);
  c.max_attempts = max_attempts;
  c.on_permanent_failure = std::move(on_permanent);
  return c;
}

// Answers the scripted deliveries in order, then `rest`.
struct Script {
  std::mutex mu;  // guards answers, calls
  std::deque<Delivery> answers;
  Delivery rest = Delivery::done();
  int calls = 0;
  DeliveryPipeline::Attempt attempt() {
    return [this](const SourceMessage&) {
      std::lock_guard lock(mu);
      ++calls;
      if (answers.empty()) return rest;
      Delivery d = answers.front();
      answers.pop_front();
      return d;
    };
  }
};

struct DeadLetters {
  std::mutex mu;  // guards the fields
  int sent = 0, fail_first = 0;
  std::string last_error;
  int last_attempts = 0;
  int64_t last_first_failure = 0;
  DeadLetterSend send() {
    return [this](const SourceMessage&, const std::string& error, int attempts, int64_t first) {
      std::lock_guard lock(mu);
      if (fail_first > 0) {
        --fail_first;
        return std::string("broker down");
      }
      ++sent;
      last_error = error;
      last_attempts = attempts;
      last_first_failure = first;
      return std::string();
    };
  }
};

SourceMessage msg() {
  SourceMessage m;
  m.topic = "events";
  m.partition = 2;
  m.offset = 9;
  return m;
}

TEST(DeliveryPipeline, TransientFailuresAreRetriedUntilDone) {
  Script s;
  s.answers = {Delivery::retry("HTTP 500"), Delivery::retry("timeout"),
               Delivery::retry("HTTP 429", 0, true)};
  DeliveryPipeline p(s.attempt(), fast(), {}, 1);
  p(msg());
  const DeliveryStats st = p.stats();
  EXPECT_EQ(s.calls, 4);
  EXPECT_EQ(st.attempts, 4u);
  EXPECT_EQ(st.retry, 3u);
  EXPECT_EQ(st.ok, 1u);
  EXPECT_EQ(st.pushbacks, 1u);
  EXPECT_EQ(st.in_retry, 0);
  EXPECT_DOUBLE_EQ(p.take_pushback_fraction(), 0.25);
  EXPECT_DOUBLE_EQ(p.take_pushback_fraction(), 0.0);  // the window restarted
}

TEST(DeliveryPipeline, PermanentFailuresGoToTheDeadLetterTopicAtOnce) {
  Script s;
  s.answers = {Delivery::permanent("HTTP 400: bad schema")};
  DeadLetters dl;
  DeliveryPipeline p(s.attempt(), fast("events.dlq"), dl.send(), 1);
  p(msg());
  EXPECT_EQ(s.calls, 1);
  EXPECT_EQ(dl.sent, 1);
  EXPECT_EQ(dl.last_error, "HTTP 400: bad schema");
  EXPECT_EQ(dl.last_attempts, 1);
  EXPECT_GT(dl.last_first_failure, 0);
  EXPECT_EQ(p.stats().dead_letter, 1u);
  EXPECT_EQ(p.stats().ok, 0u);
}

TEST(DeliveryPipeline, MaxAttemptsSendsTransientFailuresToTheDeadLetterTopic) {
  Script s;
  s.rest = Delivery::retry("HTTP 503", -1, true);
  DeadLetters dl;
  DeliveryPipeline p(s.attempt(), fast("events.dlq", 3), dl.send(), 1);
  p(msg());
  EXPECT_EQ(s.calls, 3);
  EXPECT_EQ(dl.last_attempts, 3);
  EXPECT_EQ(p.stats().retry, 2u);
  EXPECT_EQ(p.stats().dead_letter, 1u);
}

TEST(DeliveryPipeline, AFailingDeadLetterProduceIsRetriedBeforeTheMessageFinishes) {
  Script s;
  s.answers = {Delivery::permanent("HTTP 422")};
  DeadLetters dl;
  dl.fail_first = 3;
  DeliveryPipeline p(s.attempt(), fast("events.dlq"), dl.send(), 1);
  p(msg());
  EXPECT_EQ(dl.sent, 1);
  EXPECT_EQ(p.stats().dead_letter_failures, 3u);
  EXPECT_EQ(p.stats().dead_letter, 1u);
}

TEST(DeliveryPipeline, DropIsExplicitAndCounted) {
  Script s;
  s.answers = {Delivery::permanent("HTTP 404")};
  DeliveryPipeline p(s.attempt(), fast("", 0, "drop"), {}, 1);
  p(msg());
  EXPECT_EQ(p.stats().dropped, 1u);
  EXPECT_EQ(s.calls, 1);
}

TEST(DeliveryPipeline, WithoutADeadLetterTopicPermanentFailuresAreRetried) {
  Script s;
  s.answers = {Delivery::permanent("HTTP 400"), Delivery::permanent("HTTP 400")};
  DeliveryPipeline p(s.attempt(), fast(), {}, 1);
  p(msg());
  EXPECT_EQ(s.calls, 3);
  EXPECT_EQ(p.stats().ok, 1u);
}

TEST(DeliveryPipeline, StopAbandonsAMessageInRetry) {
  Script s;
  s.rest = Delivery::retry("HTTP 500");
  FailureConfig c = fast();
  c.initial_backoff_seconds = c.max_backoff_seconds = 30;  // stop() must cut the wait short
  DeliveryPipeline p(s.attempt(), c, {}, 1);
  std::atomic<bool> abandoned{false};
  std::thread worker([&] {
    try {
      p(msg());
    } catch (const DeliveryAbandoned&) {
      abandoned = true;
    }
  });
  while (p.stats().in_retry == 0) std::this_thread::yield();
  EXPECT_GE(p.stats().oldest_retry_seconds, 0.0);
  p.stop();
  worker.join();
  EXPECT_TRUE(abandoned.load());
  EXPECT_EQ(p.stats().in_retry, 0);
  EXPECT_EQ(p.stats().ok, 0u);
  EXPECT_THROW(p(msg()), DeliveryAbandoned);  // nothing starts after stop()
}

TEST(DeliveryPipeline, HandlerExceptionsAreTransientUnlessPermanent) {
  int calls = 0;
  MessageHandler flaky = [&calls](const SourceMessage&) {
    if (++calls < 3) throw std::runtime_error("feature store timeout");
  };
  DeliveryPipeline p(callable_attempt(flaky), fast(), {}, 1);
  p(msg());
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(p.stats().retry, 2u);

  MessageHandler poison = [](const SourceMessage&) { throw PermanentFailure("cannot parse"); };
  EXPECT_EQ(callable_attempt(poison)(msg()).result, DeliveryResult::kPermanent);
  EXPECT_EQ(callable_attempt(poison)(msg()).error, "cannot parse");
}

TEST(FailureConfig, DefaultsAndErrors) {
  FailureConfig c = FailureConfig::from_json(nlohmann::json::object());
  EXPECT_EQ(c.max_attempts, 0);
  EXPECT_EQ(c.permanent_action(), "retry");
  c = FailureConfig::from_json({{"dead_letter", {{"topic", "dlq"}}}});
  EXPECT_EQ(c.permanent_action(), "dead_letter");
  EXPECT_EQ(FailureConfig::from_json(c.to_json()).to_json(), c.to_json());
  const auto path_of = [](const nlohmann::json& j) {
    try {
      FailureConfig::from_json(j);
    } catch (const ConfigError& e) {
      return e.path();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(path_of({{"max_attempts", 3}}), "failure.max_attempts");
  EXPECT_EQ(path_of({{"on_permanent_failure", "dead_letter"}}), "failure.on_permanent_failure");
  EXPECT_EQ(path_of({{"on_permanent_failure", "ignore"}}), "failure.on_permanent_failure");
  EXPECT_EQ(path_of({{"initial_backoff_seconds", 5}, {"max_backoff_seconds", 1}}),
            "failure.max_backoff_seconds");
  EXPECT_EQ(path_of({{"dead_letter", {{"topik", "x"}}}}), "failure.dead_letter.topik");
}

}  // namespace
}  // namespace lagpilot
