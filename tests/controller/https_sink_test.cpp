// The http sink over TLS: an https:// URL against a real TLS server in this process (cpp-httplib's
// SSLServer) with a self-signed certificate made by the openssl command for this test. The
// sink delivers when handler.ca_file names that certificate, and refuses the server (a
// transient failure, retried) when it does not trust it.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include "controller/sinks/http_sink.h"

namespace lagpilot {
namespace {

class HttpsSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("lagpilot-https-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    cert_ = (dir_ / "cert.pem").string();
    key_ = (dir_ / "key.pem").string();
    const std::string make_cert =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1"
        " -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout " +
        key_ + " -out " + cert_ + " 2>/dev/null";
    ASSERT_EQ(std::system(make_cert.c_str()), 0) << "the openssl command failed: " << make_cert;
    server_ = std::make_unique<httplib::SSLServer>(cert_.c_str(), key_.c_str());
    ASSERT_TRUE(server_->is_valid());
    server_->Post("/events", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      last_id_ = req.get_header_value("ce-id");
      last_body_ = req.body;
      ++requests_;
      res.status = 204;
    });
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    for (int i = 0; i < 500 && !server_->is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    std::filesystem::remove_all(dir_);
  }

  HttpSinkConfig config() const {
    HttpSinkConfig c;
    c.url = "https://127.0.0.1:" + std::to_string(port_) + "/events";
    c.timeout_seconds = 5;
    return c;
  }

  static SourceMessage message() {
    SourceMessage m;
    m.topic = "events";
    m.partition = 0;
    m.offset = 7;
    m.value = "payload";
    m.timestamp_ms = 1714566896789;
    return m;
  }

  std::filesystem::path dir_;
  std::string cert_, key_;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;  // guards last_id_, last_body_, requests_
  std::string last_id_, last_body_;
  int requests_ = 0;
};

TEST_F(HttpsSinkTest, DeliversOverTlsToAServerTheCaFileTrusts) {
  HttpSinkConfig c = config();
  c.ca_file = cert_;
  HttpSink sink(c);
  for (int i = 0; i < 3; ++i) {
    SourceMessage m = message();
    m.offset += i;
    const Delivery d = sink.deliver(m);
    ASSERT_EQ(d.result, DeliveryResult::kDone) << d.error;
  }
  std::lock_guard lock(mu_);
  EXPECT_EQ(requests_, 3);
  EXPECT_EQ(last_id_, "events/0/9");
  EXPECT_EQ(last_body_, "payload");
}

TEST_F(HttpsSinkTest, AnUntrustedCertificateIsRefusedAndRetried) {
  HttpSink sink(config());  // the system's CA store does not hold the test's certificate
  const Delivery d = sink.deliver(message());
  EXPECT_EQ(d.result, DeliveryResult::kRetry);
  EXPECT_NE(d.error.find("SSL"), std::string::npos) << d.error;
  std::lock_guard lock(mu_);
  EXPECT_EQ(requests_, 0);
}

}  // namespace
}  // namespace lagpilot
