// `lagpilot run` serves the control API and /metrics: an operator override pins the live pool.
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "child_process.h"
#include "cli_test_util.h"

namespace lagpilot {
namespace {

using testing::ChildProcess;

TEST(ApiCli, OverridePinsTheLivePoolThenPolicyResumes) {
  ::setenv("LAGPILOT_API_TOKEN", "s3cret", 1);  // inherited by the child
  // Port 0, not a fixed one: a fixed port met a docs example listening on it when doc_commands
  // ran beside this test, and the test then talked to that process. The bound port is in the
  // first status line, which also says that the API is up.
  const testing::ScratchDir scratch("lagpilot-api-cli-it");
  ChildProcess run({LAGPILOT_BINARY, "run", "--embedded-broker", "--listen", "127.0.0.1:0",
                    "--log-format", "json"},
                   scratch.path("run.log"));
  const std::string first = run.read_line();
  const int port = testing::api_port_of_first_status_line(first);
  ASSERT_GT(port, 0) << "no API port in the first status line: " << first;
  nlohmann::json status = nlohmann::json::parse(first);
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(1);
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health) << "API not reachable";
  EXPECT_EQ(health->status, 200);
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("lagpilot_workers"), std::string::npos);
  EXPECT_NE(metrics->body.find("lagpilot_consumer_total_lag"), std::string::npos);

  // Without the token: refused.
  auto denied =
      client.Put("/v1/override", R"({"workers": 11, "ttl_seconds": 4})", "application/json");
  ASSERT_TRUE(denied);
  EXPECT_EQ(denied->status, 401);

  httplib::Headers auth = {{"Authorization", "Bearer s3cret"}};
  auto pinned =
      client.Put("/v1/override", auth, R"({"workers": 11, "ttl_seconds": 4, "reason": "test"})",
                 "application/json");
  ASSERT_TRUE(pinned);
  EXPECT_EQ(pinned->status, 200) << pinned->body;
  bool reached = false, released = false;
  for (int i = 0; i < 20 && !released; ++i) {
    status = nlohmann::json::parse(run.read_line());
    if (status["workers"] == 11) reached = true;
    if (reached && status["desired"] != 11) released = true;  // TTL over: the policy is back
  }
  // Back at the policy's own size: with no traffic, the minimum it held before the pin.
  EXPECT_EQ(status["desired"], 4) << status.dump();
  EXPECT_TRUE(reached) << "the pool never reached the override";
  EXPECT_TRUE(released) << "the override did not expire";
  run.signal(SIGTERM);
  EXPECT_EQ(run.wait(), 0);
}

}  // namespace
}  // namespace lagpilot
