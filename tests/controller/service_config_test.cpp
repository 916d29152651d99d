// What lagpilot::Service refuses before it touches a broker, and how its config loaders report
// errors: the same loader as `lagpilot run`, with the file, the JSON path and, for syntax
// errors, the line and column.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "lagpilot/lagpilot.h"

namespace lagpilot {
namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ServiceConfig, ExternalBrokerWithoutBootstrapServersIsRefused) {
  AppConfig c = Service::config_from_json({{"broker", "external"}});
  try {
    Service service(c, MessageHandler{});
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "kafka.bootstrap_servers");
  }
  c.runtime.kafka.properties["bootstrap.servers"] = "127.0.0.1:1";  // the property also counts
  EXPECT_NO_THROW(Service(c, MessageHandler{}));
}

TEST(ServiceConfig, ApiOffLoopbackNeedsAToken) {
  AppConfig c = Service::config_from_json({{"http", {{"host", "0.0.0.0"}}}});
  try {
    Service service(c, MessageHandler{});
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "http.host");
  }
  ServiceOptions with_token;
  with_token.api_token = "secret";
  EXPECT_NO_THROW(Service(c, MessageHandler{}, with_token));
  c.http.enabled = false;  // no API, nothing exposed
  EXPECT_NO_THROW(Service(c, MessageHandler{}));
}

TEST(ServiceConfig, FileErrorsNameTheFileAndTheJsonPath) {
  const std::string path =
      write_file("service-bad-field.json", R"({"guards": {"max_workers": -3}})");
  try {
    Service::config_from_file(path);
    FAIL() << "accepted";
  } catch (const ConfigFileError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.json_path(), "guards.max_workers");
    EXPECT_EQ(std::string(e.what()).rfind(path + ": guards.max_workers: ", 0), 0u) << e.what();
    EXPECT_EQ(e.line(), 0);
  }
}

TEST(ServiceConfig, SyntaxErrorsNameLineAndColumn) {
  const std::string path = write_file("service-syntax.json", "{\n  \"lag_slo\": 5,\n  oops\n}\n");
  try {
    Service::config_from_file(path);
    FAIL() << "accepted";
  } catch (const ConfigFileError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.column(), 3);
    EXPECT_EQ(std::string(e.what()).rfind(path + ":3:3: invalid JSON", 0), 0u) << e.what();
  }
}

TEST(ServiceConfig, StringsAndJsonLoadLikeFiles) {
  const AppConfig c =
      Service::config_from_string(R"({"policy": {"name": "threshold"}, "lag_slo": 500})");
  EXPECT_EQ(c.policy_name, "threshold");
  EXPECT_EQ(c.runtime.lag_slo, 500);
  try {
    Service::config_from_string(R"({"kafka": {"ordering": "sideways"}})");
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "kafka.ordering");
  }
  EXPECT_THROW(Service::config_from_string("{nope"), ConfigError);
  // Unknown keys are refused, as by `lagpilot run`.
  EXPECT_THROW(Service::config_from_json({{"pollicy", 1}}), ConfigError);
  // "sim" is the simulator's, kept as written.
  EXPECT_EQ(Service::config_from_json({{"sim", {{"tick_seconds", 2}}}}).sim["tick_seconds"], 2);
}

TEST(ServiceConfig, AServiceThatNeverStartedStopsQuietly) {
  Service service(AppConfig{}, MessageHandler{});
  EXPECT_FALSE(service.stop_requested());
  EXPECT_EQ(service.api_port(), 0);
  EXPECT_TRUE(service.status().empty());
  service.stop();
  EXPECT_TRUE(service.stop_requested());
}

}  // namespace
}  // namespace lagpilot
