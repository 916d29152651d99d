// Batch delivery in the sinks: the http sink's CloudEvents batch (one POST, content type
// application/cloudevents-batch+json, a JSON array of structured-mode events with the fields
// the single-message sink sends as headers) against a local cpp-httplib server, a 5xx that
// retries the whole batch and a 4xx that dead-letters every message of it through the
// DeliveryPipeline; the exec sink's one JSON array line and one reply; the pipeline's batch
// accounting, its drop_incomplete produce and the batch-size counts; the "batch" config.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "controller/app_config.h"
#include "controller/kafka/batch_config.h"
#include "controller/sinks/delivery_pipeline.h"
#include "controller/sinks/exec_sink.h"
#include "controller/sinks/http_sink.h"
#include "lagpilot/lagpilot.h"
#include "policies/config_reader.h"

namespace lagpilot {
namespace {

FailureConfig fast_failures(std::string dead_letter_topic = "") {
  FailureConfig c;
  c.initial_backoff_seconds = 0.001;
  c.max_backoff_seconds = 0.002;
  c.dead_letter_topic = std::move(dead_letter_topic);
  return c;
}

std::vector<SourceMessage> batch_of(int n) {
  std::vector<SourceMessage> out;
  for (int i = 0; i < n; ++i) {
    SourceMessage m;
    m.topic = "events";
    m.partition = 2;
    m.offset = 40 + i;
    m.has_key = i != 1;  // the second has a null key
    if (m.has_key) m.key = "user-" + std::to_string(i);
    m.value = "{\"x\": " + std::to_string(i) + "}";
    m.timestamp_ms = i == 2 ? -1 : 1714566896789 + i;  // the third has no timestamp
    if (i == 0) m.headers = {{"content-type", "application/json"}};
    if (i == 3) {
      m.value = std::string("\xff\x00\x01", 3);  // binary
    }
    out.push_back(std::move(m));
  }
  return out;
}

class BatchHttpServer {
 public:
  BatchHttpServer() {
    server_.Post("/events", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      requests_.push_back(req);
      res.status = statuses_.empty() ? 200 : statuses_.front();
      if (!statuses_.empty()) statuses_.pop_front();
      res.set_content(res.status >= 400 ? "nope" : "", "text/plain");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 500 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~BatchHttpServer() {
    server_.stop();
    thread_.join();
  }
  HttpSinkConfig config() const {
    HttpSinkConfig c;
    c.url = "http://127.0.0.1:" + std::to_string(port_) + "/events";
    c.timeout_seconds = 2;
    c.headers["x-team"] = "features";
    return c;
  }
  void script(std::deque<int> statuses) {
    std::lock_guard lock(mu_);
    statuses_ = std::move(statuses);
  }
  std::vector<httplib::Request> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;  // guards requests_, statuses_
  std::vector<httplib::Request> requests_;
  std::deque<int> statuses_;
};

TEST(BatchHttpSink, OnePostOfACloudEventsBatchWithTheSingleSinksFields) {
  BatchHttpServer server;
  HttpSink sink(server.config());
  const std::vector<SourceMessage> batch = batch_of(4);
  EXPECT_EQ(sink.deliver_batch(batch).result, DeliveryResult::kDone);
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  const httplib::Request& req = requests[0];
  EXPECT_EQ(req.get_header_value("Content-Type"), "application/cloudevents-batch+json");
  EXPECT_EQ(req.get_header_value("x-team"), "features");
  EXPECT_FALSE(req.has_header("ce-id"));  // structured mode: attributes are in the body
  const nlohmann::json body = nlohmann::json::parse(req.body);
  ASSERT_TRUE(body.is_array());
  ASSERT_EQ(body.size(), 4u);
  for (std::size_t i = 0; i < body.size(); ++i) {
    const nlohmann::json& e = body[i];
    EXPECT_EQ(e["specversion"], "1.0");
    EXPECT_EQ(e["id"], "events/2/" + std::to_string(40 + i));  // as ce-id
    EXPECT_EQ(e["source"], "kafka://events");                  // as ce-source
    EXPECT_EQ(e["type"], "dev.lagpilot.kafka.message");        // as ce-type
  }
  EXPECT_EQ(body[0]["time"], rfc3339_utc(1714566896789));
  EXPECT_EQ(body[0]["partitionkey"], "user-0");
  EXPECT_FALSE(body[1].contains("partitionkey"));  // null key
  EXPECT_FALSE(body[2].contains("time"));          // no timestamp
  // JSON content: the value as JSON; otherwise octet-stream, base64.
  EXPECT_EQ(body[0]["datacontenttype"], "application/json");
  EXPECT_EQ(body[0]["data"], nlohmann::json({{"x", 0}}));
  EXPECT_EQ(body[1]["datacontenttype"], "application/octet-stream");
  EXPECT_EQ(body[1]["data_base64"], base64_encode("{\"x\": 1}"));
  EXPECT_EQ(body[3]["data_base64"], base64_encode(std::string("\xff\x00\x01", 3)));
  EXPECT_FALSE(body[3].contains("data"));
}

TEST(BatchHttpSink, A5xxRetriesTheWholeBatchAndA4xxDeadLettersAllOfIt) {
  BatchHttpServer server;
  HttpSink sink(server.config());
  std::mutex mu;  // guards dead
  std::vector<int64_t> dead;
  DeliveryPipeline pipeline(
      [&](const SourceMessage& m) { return sink.deliver(m); }, fast_failures("events.dlq"),
      [&](const SourceMessage& m, const std::string& error, int attempts, int64_t) {
        std::lock_guard lock(mu);
        EXPECT_EQ(attempts, 1);
        EXPECT_NE(error.find("HTTP 400"), std::string::npos) << error;
        dead.push_back(m.offset);
        return std::string();
      },
      1);
  pipeline.set_batching([&](std::span<const SourceMessage> b) { return sink.deliver_batch(b); },
                        {});
  const std::vector<SourceMessage> batch = batch_of(5);

  server.script({500, 503});
  pipeline.deliver_batch(batch);
  auto requests = server.requests();
  ASSERT_EQ(requests.size(), 3u);  // 500, 503, then 200: each time the whole batch
  for (const auto& r : requests) EXPECT_EQ(nlohmann::json::parse(r.body).size(), 5u);
  DeliveryStats s = pipeline.stats();
  EXPECT_EQ(s.ok, 5u);
  EXPECT_EQ(s.retry, 10u);  // messages, twice
  EXPECT_EQ(s.attempts, 3u);
  EXPECT_EQ(s.pushbacks, 1u);
  EXPECT_EQ(s.dead_letter, 0u);
  EXPECT_EQ(s.in_retry, 0);

  server.script({400});
  pipeline.deliver_batch(batch);
  EXPECT_EQ(server.requests().size(), 4u);  // no retry of a permanent failure
  s = pipeline.stats();
  EXPECT_EQ(s.dead_letter, 5u);
  EXPECT_EQ(s.ok, 5u);
  EXPECT_EQ(dead, (std::vector<int64_t>{40, 41, 42, 43, 44}));
  EXPECT_EQ(s.batches, 2u);
  EXPECT_EQ(s.batch_messages, 10u);
  EXPECT_EQ(s.batch_size_buckets[2], 2u);  // (2, 5]
}

TEST(BatchExecSink, OneJsonArrayLineInOneReplyOut) {
  // The child checks what it got and says so in its reply's error field.
  ExecSinkConfig c;
  c.command = {"python3", "-u", "-c",
               "import json, sys\n"
               "for line in sys.stdin:\n"
               "    a = json.loads(line)\n"
               "    ok = isinstance(a, list) and [m['offset'] for m in a] == [40, 41, 42]\n"
               "    ok = ok and a[1]['key'] is None and a[0]['value'] == '{\"x\": 0}'\n"
               "    sys.stdout.write(json.dumps({'ok': ok, 'error': 'got ' + line.strip(),"
               " 'retry': False}) + '\\n')\n"
               "    sys.stdout.flush()\n"};
  c.timeout_seconds = 10;
  ExecSink sink(c);
  const std::vector<SourceMessage> batch = batch_of(3);
  const Delivery d = sink.deliver_batch(batch);
  EXPECT_EQ(d.result, DeliveryResult::kDone) << d.error;
  // The line is the array of the single-message objects.
  const nlohmann::json line = nlohmann::json::parse(exec_batch_line(batch));
  ASSERT_EQ(line.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(line[i], nlohmann::json::parse(exec_request_line(batch[i])));
  }
  // One reply for the batch: a permanent "not ok" fails all of it.
  const std::vector<SourceMessage> other = batch_of(2);
  EXPECT_EQ(sink.deliver_batch(other).result, DeliveryResult::kPermanent);
  EXPECT_EQ(sink.children_running(), 1);
}

TEST(BatchPipeline, DropIncompleteProducesEachMessageAndRetriesAFailedProduce) {
  DeliveryPipeline pipeline([](const SourceMessage&) { return Delivery::done(); }, fast_failures(),
                            {}, 1);
  std::vector<int64_t> produced;
  int failures_left = 1;
  pipeline.set_batching([](std::span<const SourceMessage>) { return Delivery::done(); },
                        [&](const SourceMessage& m) {
                          if (failures_left-- > 0) return std::string("broker down");
                          produced.push_back(m.offset);
                          return std::string();
                        });
  const std::vector<SourceMessage> batch = batch_of(3);
  pipeline.drop_incomplete(batch);
  EXPECT_EQ(produced, (std::vector<int64_t>{40, 41, 42}));
  EXPECT_EQ(pipeline.stats().ok, 0u);  // not delivered
  EXPECT_EQ(pipeline.stats().batches, 0u);
}

TEST(BatchPipeline, PerMessageAttemptsFailTheBatchAtTheFirstFailure) {
  int calls = 0;
  const auto attempt = per_message_batch_attempt([&](const SourceMessage& m) {
    ++calls;
    return m.offset == 41 ? Delivery::retry("busy") : Delivery::done();
  });
  const std::vector<SourceMessage> batch = batch_of(3);
  EXPECT_EQ(attempt(batch).result, DeliveryResult::kRetry);
  EXPECT_EQ(calls, 2);
}

TEST(BatchConfig, DefaultsErrorsNameTheJsonPathAndAbsentMeansOff) {
  EXPECT_FALSE(AppConfig::from_json(nlohmann::json::object()).runtime.batch.enabled);
  EXPECT_FALSE(AppConfig::from_json(nlohmann::json::object()).to_json().contains("batch"));
  const AppConfig c = AppConfig::from_json({{"batch", {{"max_messages", 32}}}});
  EXPECT_TRUE(c.runtime.batch.enabled);
  EXPECT_EQ(c.runtime.batch.max_messages, 32);
  EXPECT_EQ(c.runtime.batch.max_wait_seconds, 2.0);
  EXPECT_FALSE(c.runtime.batch.drop_last);
  EXPECT_EQ(AppConfig::from_json(c.to_json()).to_json(), c.to_json());
  const auto error_of = [](const nlohmann::json& batch) {
    try {
      AppConfig::from_json({{"batch", batch}});
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of({{"max_messages", 0}}).rfind("batch.max_messages: must be >= 1", 0), 0u)
      << error_of({{"max_messages", 0}});
  EXPECT_EQ(error_of({{"max_wait_seconds", 0}}).rfind("batch.max_wait_seconds: ", 0), 0u);
  EXPECT_EQ(error_of({{"drop_last", "yes"}}).rfind("batch.drop_last: ", 0), 0u);
  EXPECT_EQ(error_of({{"size", 3}}).rfind("batch.size: ", 0), 0u);
  EXPECT_EQ(error_of(5).rfind("batch: ", 0), 0u);
}

TEST(BatchConfig, ABatchHandlerNeedsABatchSection) {
  const BatchHandler handler = [](std::span<const SourceMessage>) {};
  try {
    Service service(AppConfig{}, handler);
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "batch");
  }
  EXPECT_NO_THROW(Service(AppConfig::from_json({{"batch", nlohmann::json::object()}}), handler));
}

}  // namespace
}  // namespace lagpilot
