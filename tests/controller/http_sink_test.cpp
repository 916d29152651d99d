// The http sink against a real HTTP server in this process (cpp-httplib): the CloudEvents
// binary-mode request, the classification of responses (done, retry with pushback and
// Retry-After, permanent), timeouts and refused connections, keep-alive reuse.
#include "controller/sinks/http_sink.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "policies/config_reader.h"

namespace lagpilot {
namespace {

class HttpSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Post("/events", [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard lock(mu_);
        last_ = req;
        ++requests_;
        client_ports_.insert(req.remote_port);
      }
      const int status = next_status_.load();
      if (status == -1) {  // stall past the client's timeout
        std::this_thread::sleep_for(std::chrono::milliseconds(400));
        res.status = 200;
        return;
      }
      res.status = status;
      if (!retry_after_.empty()) res.set_header("Retry-After", retry_after_);
      res.set_content(status >= 400 ? "nope" : "", "text/plain");
    });
    server_.set_keep_alive_max_count(1000);  // httplib closes after 5 requests by default
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 500 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }

  HttpSinkConfig config() const {
    HttpSinkConfig c;
    c.url = "http://127.0.0.1:" + std::to_string(port_) + "/events";
    // Long enough that a good request never times out on a loaded machine under a sanitizer;
    // the timeout test shortens it.
    c.timeout_seconds = 5.0;
    c.headers["x-team"] = "features";
    return c;
  }

  static SourceMessage message() {
    SourceMessage m;
    m.topic = "events";
    m.partition = 3;
    m.offset = 42;
    m.key = "user-7";
    m.has_key = true;
    m.value = "{\"x\": 1}";
    m.timestamp_ms = 1714566896789;
    return m;
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;  // guards last_, requests_
  httplib::Request last_;
  int requests_ = 0;
  std::set<int> client_ports_;  // one per connection the sink opened
  std::atomic<int> next_status_{200};
  std::string retry_after_;  // set before requests, read by the server thread after
};

TEST_F(HttpSinkTest, PostsACloudEventInBinaryMode) {
  HttpSink sink(config());
  const Delivery d = sink.deliver(message());
  EXPECT_EQ(d.result, DeliveryResult::kDone) << d.error;
  std::lock_guard lock(mu_);
  EXPECT_EQ(last_.body, "{\"x\": 1}");
  EXPECT_EQ(last_.get_header_value("ce-specversion"), "1.0");
  EXPECT_EQ(last_.get_header_value("ce-id"), "events/3/42");
  EXPECT_EQ(last_.get_header_value("ce-source"), "kafka://events");
  EXPECT_EQ(last_.get_header_value("ce-type"), "dev.lagpilot.kafka.message");
  EXPECT_EQ(last_.get_header_value("ce-time"), "2024-05-01T12:34:56.789Z");
  EXPECT_EQ(last_.get_header_value("ce-partitionkey"), "user-7");
  EXPECT_EQ(last_.get_header_value("x-team"), "features");
  EXPECT_EQ(last_.get_header_value("Content-Type"), "application/octet-stream");
}

TEST_F(HttpSinkTest, KafkaHeadersBecomeHttpHeadersAndContentTypeTheBodys) {
  HttpSink sink(config());
  SourceMessage m = message();
  m.headers = {{"content-type", "application/json"},
               {"trace-id", "abc123"},
               {"bad name", "skipped"},
               {"x-evil", "split\r\nInjected: yes"}};
  ASSERT_EQ(sink.deliver(m).result, DeliveryResult::kDone);
  std::lock_guard lock(mu_);
  EXPECT_EQ(last_.get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(last_.get_header_value("trace-id"), "abc123");
  EXPECT_FALSE(last_.has_header("x-evil"));
  EXPECT_FALSE(last_.has_header("Injected"));
}

TEST_F(HttpSinkTest, NullKeyAndNoTimestampLeaveTheirAttributesOut) {
  HttpSink sink(config());
  SourceMessage m = message();
  m.has_key = false;
  m.key.clear();
  m.timestamp_ms = -1;
  ASSERT_EQ(sink.deliver(m).result, DeliveryResult::kDone);
  std::lock_guard lock(mu_);
  EXPECT_FALSE(last_.has_header("ce-partitionkey"));
  EXPECT_FALSE(last_.has_header("ce-time"));
}

TEST_F(HttpSinkTest, ClassifiesResponses) {
  HttpSink sink(config());
  next_status_ = 204;
  EXPECT_EQ(sink.deliver(message()).result, DeliveryResult::kDone);
  next_status_ = 500;
  Delivery d = sink.deliver(message());
  EXPECT_EQ(d.result, DeliveryResult::kRetry);
  EXPECT_FALSE(d.pushback);
  EXPECT_EQ(d.error, "HTTP 500");
  next_status_ = 400;
  d = sink.deliver(message());
  EXPECT_EQ(d.result, DeliveryResult::kPermanent);
  EXPECT_EQ(d.error, "HTTP 400: nope");
  next_status_ = 404;
  EXPECT_EQ(sink.deliver(message()).result, DeliveryResult::kPermanent);
}

TEST_F(HttpSinkTest, TooManyRequestsIsPushbackWithRetryAfter) {
  HttpSink sink(config());
  next_status_ = 429;
  retry_after_ = "3";
  Delivery d = sink.deliver(message());
  EXPECT_EQ(d.result, DeliveryResult::kRetry);
  EXPECT_TRUE(d.pushback);
  EXPECT_EQ(d.retry_after_seconds, 3);
  next_status_ = 503;
  retry_after_.clear();
  d = sink.deliver(message());
  EXPECT_TRUE(d.pushback);
  EXPECT_EQ(d.retry_after_seconds, -1);
}

TEST_F(HttpSinkTest, TimeoutsAndRefusedConnectionsAreTransient) {
  HttpSinkConfig stalls = config();
  stalls.timeout_seconds = 0.2;  // the server stalls 400 ms
  HttpSink sink(stalls);
  next_status_ = -1;
  Delivery d = sink.deliver(message());
  EXPECT_EQ(d.result, DeliveryResult::kRetry);
  EXPECT_NE(d.error.find("http: "), std::string::npos) << d.error;
  HttpSinkConfig nowhere = config();
  nowhere.url = "http://127.0.0.1:1/events";  // nothing listens on port 1
  HttpSink refused(nowhere);
  EXPECT_EQ(refused.deliver(message()).result, DeliveryResult::kRetry);
}

TEST_F(HttpSinkTest, ReusesKeepAliveConnections) {
  HttpSink sink(config());
  for (int i = 0; i < 20; ++i) ASSERT_EQ(sink.deliver(message()).result, DeliveryResult::kDone);
  std::lock_guard lock(mu_);
  EXPECT_EQ(requests_, 20);
  EXPECT_EQ(client_ports_.size(), 1u);  // one connection carried all of them
}

TEST_F(HttpSinkTest, ConcurrentCallersGetAClientEach) {
  HttpSink sink(config());
  std::vector<std::thread> callers;
  std::atomic<int> done{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 25; ++i) done += sink.deliver(message()).result == DeliveryResult::kDone;
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(done.load(), 100);
  std::lock_guard lock(mu_);
  EXPECT_LE(client_ports_.size(), 4u);  // at most one connection per concurrent caller
}

// Each thread keeps its request headers between deliveries and rewrites the per-record ones:
// nothing of one record may show up in the next request.
TEST_F(HttpSinkTest, PerRecordAttributesDoNotLeakIntoTheNextRequest) {
  HttpSink sink(config());
  SourceMessage first = message();
  first.headers = {{"x-trace", "abc"}};
  ASSERT_EQ(sink.deliver(first).result, DeliveryResult::kDone);
  {
    std::lock_guard lock(mu_);
    EXPECT_EQ(last_.get_header_value("x-trace"), "abc");
    EXPECT_EQ(last_.get_header_value("ce-partitionkey"), "user-7");
  }
  SourceMessage second = message();
  second.topic = "clicks";
  second.offset = 43;
  second.has_key = false;
  second.key.clear();
  second.timestamp_ms = first.timestamp_ms + 1;  // the same second
  ASSERT_EQ(sink.deliver(second).result, DeliveryResult::kDone);
  {
    std::lock_guard lock(mu_);
    EXPECT_FALSE(last_.has_header("x-trace"));
    EXPECT_FALSE(last_.has_header("ce-partitionkey"));
    EXPECT_EQ(last_.get_header_value("ce-id"), "clicks/3/43");
    EXPECT_EQ(last_.get_header_value("ce-source"), "kafka://clicks");
    EXPECT_EQ(last_.get_header_value("ce-time"), "2024-05-01T12:34:56.790Z");
    EXPECT_EQ(last_.headers.count("ce-id"), 1u);
  }
  SourceMessage third = message();
  third.timestamp_ms = first.timestamp_ms + 61'211;  // the next minute
  third.key = "user-8";
  ASSERT_EQ(sink.deliver(third).result, DeliveryResult::kDone);
  SourceMessage fourth = message();
  fourth.timestamp_ms = -1;
  {
    std::lock_guard lock(mu_);
    EXPECT_EQ(last_.get_header_value("ce-time"), "2024-05-01T12:35:58.000Z");
    EXPECT_EQ(last_.get_header_value("ce-partitionkey"), "user-8");
    EXPECT_EQ(last_.get_header_value("ce-source"), "kafka://events");
  }
  ASSERT_EQ(sink.deliver(fourth).result, DeliveryResult::kDone);
  std::lock_guard lock(mu_);
  EXPECT_FALSE(last_.has_header("ce-time"));
  EXPECT_EQ(last_.get_header_value("ce-partitionkey"), "user-7");
}

TEST(HttpSinkConfig, RefusesBadUrlsAndHeaders) {
  for (const char* url : {"ftp://x/y", "http://", "localhost:8080/x"}) {
    HttpSinkConfig c;
    c.url = url;
    EXPECT_THROW(HttpSink{c}, ConfigError) << url;
  }
  EXPECT_THROW(HttpSinkConfig::from_json({{"type", "http"}}, "handler"), ConfigError);
  try {
    HttpSinkConfig::from_json({{"url", "http://h/"}, {"headers", {{"bad name", "v"}}}}, "handler");
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "handler.headers.bad name");
  }
  try {
    HttpSinkConfig::from_json({{"url", "http://h/"}, {"timeout_seconds", 0}}, "handler");
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "handler.timeout_seconds");
  }
  const HttpSinkConfig c = HttpSinkConfig::from_json(
      {{"type", "http"}, {"url", "https://example.com/x"}, {"ce_type", "t"}}, "handler");
  EXPECT_EQ(c.url, "https://example.com/x");
  EXPECT_EQ(c.ce_type, "t");

  HttpSinkConfig plain;
  plain.url = "http://127.0.0.1:1/x";
  plain.ca_file = "/etc/hostname";
  try {
    HttpSink sink(plain);
    FAIL() << "accepted a CA file for http://";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "handler.ca_file");
  }
  HttpSinkConfig missing;
  missing.url = "https://127.0.0.1:1/x";
  missing.ca_file = "/nonexistent/ca.pem";
  try {
    HttpSink sink(missing);
    FAIL() << "accepted an unreadable CA file";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "handler.ca_file");
    EXPECT_NE(std::string(e.what()).find("/nonexistent/ca.pem"), std::string::npos);
  }
}

TEST(RetryAfter, SecondsAndHttpDates) {
  EXPECT_EQ(parse_retry_after("120", 0), 120);
  EXPECT_EQ(parse_retry_after(" 0 ", 0), 0);
  // Sun, 06 Nov 1994 08:49:37 GMT = 784111777
  EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784111770), 7);
  EXPECT_EQ(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784111790), 0);  // past
  EXPECT_EQ(parse_retry_after("soon", 0), -1);
  EXPECT_EQ(parse_retry_after("-5", 0), -1);
  EXPECT_EQ(parse_retry_after("12abc", 0), -1);
  EXPECT_EQ(parse_retry_after("", 0), -1);
}

TEST(Rfc3339, UtcWithMilliseconds) {
  EXPECT_EQ(rfc3339_utc(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(rfc3339_utc(1714566896789), "2024-05-01T12:34:56.789Z");
}

}  // namespace
}  // namespace lagpilot
