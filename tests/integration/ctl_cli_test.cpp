// `lagpilot ctl` as an operator runs it, against a live `lagpilot run --embedded-broker` (one
// child for the suite, on a free loopback port, token from --api-token-file): an override pins
// the live pool and the policy resumes after it; pause/resume, bounds and policy land in the
// decision log; refusals, an unreachable server and bad input give exit codes 1 and 2.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli_test_util.h"
#include "tests/common/wait.h"

namespace lagpilot {
namespace {

using testing::ChildProcess;
using testing::CommandResult;
using testing::run_command;
using testing::shell_quote;

using testing::free_loopback_port;
using testing::kBinary;
constexpr const char* kToken = "ctl-test-token";

const testing::ScratchDir kCtlCliScratch("lagpilot-ctl-it");

// The JSON object in a command's output (stdout and stderr are captured together).
nlohmann::json parse_output(const CommandResult& r) {
  const auto brace = r.output.find('{');
  if (r.exit_code != 0 || brace == std::string::npos) return nullptr;
  nlohmann::json j = nlohmann::json::parse(r.output.substr(brace), nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class CtlCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    token_file_ = kCtlCliScratch.write("token", std::string(kToken) + "\n");
    wrong_token_file_ = kCtlCliScratch.write("wrong-token", "not-the-token\n");
    // Port 0: the child binds a port nobody can take in between; its first status line says
    // which one, once the API is up.
    run_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{kBinary, "run", "--embedded-broker", "--listen", "127.0.0.1:0",
                                 "--api-token-file", token_file_, "--log-format", "json"},
        kCtlCliScratch.path("run.log"));
    const std::string first = run_->read_line();
    ASSERT_FALSE(first.empty()) << "lagpilot run exited; see " << kCtlCliScratch.path("run.log");
    port_ = testing::api_port_of_first_status_line(first);
    ASSERT_GT(port_, 0) << "no API port in the first status line: " << first;
    url_ = "http://127.0.0.1:" + std::to_string(port_);
    drain_ = std::thread([] {
      while (!run_->read_line().empty()) {
      }
    });
    // Wait until the consumer has joined its group (about 3 s on the embedded broker), so that
    // the tick-timed checks below do not include the join.
    nlohmann::json s;
    ASSERT_TRUE(testing::wait_until(
        [&] {
          s = status();
          const nlohmann::json* assigned = s.is_object() && s["runtime"].is_object()
                                               ? &s["runtime"]["assigned_partitions"]
                                               : nullptr;
          return assigned && assigned->is_number() && assigned->get<int>() > 0;
        },
        30, std::chrono::milliseconds(100)))
        << "no partitions assigned: " << s.dump();
  }

  static void TearDownTestSuite() {
    if (!run_) return;
    run_->signal(SIGTERM);
    const int code = run_->wait();
    if (drain_.joinable()) drain_.join();
    run_.reset();
    EXPECT_EQ(code, 0) << "lagpilot run did not stop cleanly; see "
                       << kCtlCliScratch.path("run.log");
  }

  // `lagpilot ctl ARGS --url URL` with $LAGPILOT_API_TOKEN removed (other tests in this process
  // set it) unless `env` sets it.
  static CommandResult ctl(const std::string& args, const std::string& env = "") {
    return run_command("env -u LAGPILOT_API_TOKEN " + env + " " + kBinary + " ctl " + args +
                       " --url " + url_);
  }
  static CommandResult ctl_authorized(const std::string& args) {
    return ctl(args + " --token-file " + shell_quote(token_file_));
  }
  static nlohmann::json status() { return parse_output(ctl("status --json")); }
  static nlohmann::json decisions(int limit = 200) {
    const nlohmann::json j = parse_output(ctl("decisions --json --limit " + std::to_string(limit)));
    return j.is_object() && j.contains("decisions") ? j["decisions"] : nlohmann::json::array();
  }
  // The newest decision-log entry whose reason contains `part`, or null.
  static nlohmann::json find_decision(const std::string& part) {
    const nlohmann::json list = decisions();
    for (auto it = list.rbegin(); it != list.rend(); ++it) {
      if (contains((*it).value("reason", ""), part)) return *it;
    }
    return nullptr;
  }

  static int port_;
  static std::string url_;
  static std::string token_file_;
  static std::string wrong_token_file_;
  static std::unique_ptr<ChildProcess> run_;
  static std::thread drain_;
};

int CtlCli::port_ = 0;
std::string CtlCli::url_;
std::string CtlCli::token_file_;
std::string CtlCli::wrong_token_file_;
std::unique_ptr<ChildProcess> CtlCli::run_;
std::thread CtlCli::drain_;

TEST_F(CtlCli, OverridePinsTheLivePoolUntilItExpiresThenThePolicyResumes) {
  CommandResult r = ctl_authorized("override 3 --ttl 6s --reason test");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "override: 3 workers for 6s")) << r.output;
  const nlohmann::json pin = find_decision("pin 3 workers");
  ASSERT_TRUE(pin.is_object()) << decisions().dump();
  EXPECT_EQ(pin["source"], "api");
  EXPECT_TRUE(contains(pin["reason"].get<std::string>(), "(test)")) << pin.dump();
  const double pinned_at = pin["time"].get<double>();
  const double expires_at = pinned_at + 6;

  // The live pool reaches 3, below the default bounds' minimum of 4.
  nlohmann::json s;
  ASSERT_TRUE(testing::wait_until(
      [&] {
        s = status();
        return s.is_object() && s["workers"]["current"] == 3;
      },
      15, std::chrono::milliseconds(100)))
      << "the pool never reached the override: " << s.dump();
  // It stays there while the override lasts.
  ASSERT_TRUE(testing::wait_until(
      [&] {
        s = status();
        if (!s.is_object()) return false;
        if (s["override"].is_null()) return true;
        EXPECT_EQ(s["workers"]["current"], 3) << s.dump();
        EXPECT_EQ(s["workers"]["desired"], 3) << s.dump();
        EXPECT_EQ(s["override"]["workers"], 3);
        EXPECT_EQ(s["override"]["reason"], "test");
        return false;
      },
      15, std::chrono::milliseconds(100)))
      << "the override did not expire: " << s.dump();
  // Expired: the policy decides again and the pool leaves 3.
  ASSERT_TRUE(testing::wait_until(
      [&] {
        s = status();
        return s.is_object() && s["last_decision"]["source"] == "policy" &&
               s["last_decision"]["time"].get<double>() >= expires_at &&
               s["workers"]["current"] != 3;
      },
      15, std::chrono::milliseconds(100)))
      << s.dump();
  EXPECT_GE(s["workers"]["desired"].get<int>(), 4);

  // The decision log agrees, tick by tick: from the request on, pinned ticks, then policy ticks
  // only. (A tick that started just before the expiry may already be the policy's: the tick
  // samples for a while before its guards run, and expiry is judged by the clock.)
  int pinned_ticks = 0, policy_ticks = 0;
  for (const nlohmann::json& d : decisions()) {
    const double t = d["time"].get<double>();
    if (d["source"] == "api" || t < pinned_at) continue;
    if (d["source"] == "override") {
      ++pinned_ticks;
      EXPECT_EQ(policy_ticks, 0) << "pinned again after the policy took over: " << d.dump();
      EXPECT_EQ(d["workers"], 3) << d.dump();
      EXPECT_LT(t, expires_at) << d.dump();
    } else {
      ++policy_ticks;
      EXPECT_EQ(d["source"], "policy") << d.dump();
      EXPECT_GE(d["workers"].get<int>(), 4) << d.dump();
    }
  }
  EXPECT_GE(pinned_ticks, 1);
  EXPECT_GE(policy_ticks, 1);
}

TEST_F(CtlCli, ClearEndsAnOverrideBeforeItsTtl) {
  // The token from the environment this time; a long TTL in h+m form.
  CommandResult r = ctl("override 7 --ttl 1h30m --reason maintenance --json",
                        std::string("LAGPILOT_API_TOKEN=") + kToken);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json answer = parse_output(r);
  ASSERT_TRUE(answer.is_object()) << r.output;
  EXPECT_NEAR(answer["override"]["expires_in_seconds"].get<double>(), 5400, 1);

  nlohmann::json s;
  ASSERT_TRUE(testing::wait_until(
      [&] {
        s = status();
        return s.is_object() && s["workers"]["current"] == 7;
      },
      10, std::chrono::milliseconds(100)))
      << s.dump();
  r = ctl("status");  // human-readable
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* part : {"workers", "current 7", "desired 7", "policy", "hybrid", "lag", "rates",
                           "latency", "queue", "paused", "override  7 workers", "maintenance"}) {
    EXPECT_TRUE(contains(r.output, part)) << "'" << part << "' missing from:\n" << r.output;
  }
  EXPECT_TRUE(contains(r.output, "1h29m") || contains(r.output, "1h30m")) << r.output;

  r = ctl_authorized("clear");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "override cleared")) << r.output;
  const nlohmann::json cleared = find_decision("override cleared");
  ASSERT_TRUE(cleared.is_object());
  EXPECT_EQ(cleared["source"], "api");
  ASSERT_TRUE(testing::wait_until(
      [&] {
        s = status();
        return s.is_object() && s["override"].is_null() &&
               s["last_decision"]["source"] == "policy" &&
               s["last_decision"]["time"].get<double>() > cleared["time"].get<double>() &&
               s["workers"]["current"] != 7;
      },
      10, std::chrono::milliseconds(100)))
      << s.dump();
  r = ctl_authorized("clear");  // nothing left to clear: still a success
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "no override was active")) << r.output;
}

TEST_F(CtlCli, PauseAndResumeShowInStatusAndDecisions) {
  CommandResult r = ctl_authorized("pause --reason drill");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json s = status();
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["operator_paused"], true);
  r = ctl_authorized("resume");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  s = status();
  EXPECT_EQ(s["operator_paused"], false);

  const nlohmann::json list = decisions();
  int paused_at = -1, resumed_at = -1;
  for (int i = 0; i < static_cast<int>(list.size()); ++i) {
    if (list[i]["reason"] == "paused by api: drill") paused_at = i;
    if (list[i]["reason"] == "resumed by api") resumed_at = i;
  }
  ASSERT_GE(paused_at, 0) << list.dump();
  ASSERT_GT(resumed_at, paused_at) << list.dump();
  EXPECT_EQ(list[paused_at]["source"], "api");
  EXPECT_EQ(list[resumed_at]["source"], "api");

  r = ctl("decisions --limit 5");  // the table
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "SOURCE")) << r.output;
  EXPECT_TRUE(contains(r.output, "REASON")) << r.output;
  EXPECT_TRUE(contains(r.output, "resumed by api")) << r.output;
}

TEST_F(CtlCli, BoundsAndPolicyFromAFileOrAConfig) {
  CommandResult r = ctl_authorized("bounds 5 12");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json s = status();
  EXPECT_EQ(s["workers"]["min"], 5);
  EXPECT_EQ(s["workers"]["max"], 12);
  r = ctl_authorized("bounds 12 5");  // refused by the server: exit 1 with its message
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "must be <=")) << r.output;
  EXPECT_TRUE(contains(r.output, "field: min")) << r.output;

  const std::string bare =
      kCtlCliScratch.write("static.json", R"({"name": "static", "params": {"workers": 6}})");
  const double before = status()["time"].get<double>();
  r = ctl_authorized("policy " + shell_quote(bare));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  s = status();
  EXPECT_EQ(s["policy"]["name"], "static");
  EXPECT_EQ(s["policy"]["params"]["workers"], 6);
  const nlohmann::json swapped = find_decision("policy set to static");
  ASSERT_TRUE(swapped.is_object());
  EXPECT_EQ(swapped["source"], "api");
  // The swap is logged at the server's time of the request, not at an older tick's.
  EXPECT_GE(swapped["time"].get<double>(), before);
  EXPECT_LE(swapped["time"].get<double>(), s["time"].get<double>());

  // A full config file: its "policy" object; a bad parameter is named in the file.
  const std::string config = kCtlCliScratch.write(
      "config.json",
      R"({"policy": {"name": "pid", "params": {"kp": -1}}, "guards": {"min_workers": 4}})");
  r = ctl_authorized("policy " + shell_quote(config));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "field: params.kp")) << r.output;
  EXPECT_TRUE(contains(r.output, config + " at policy.params.kp")) << r.output;
  EXPECT_EQ(status()["policy"]["name"], "static");  // unchanged

  const std::string good_config =
      kCtlCliScratch.write("good-config.json", R"({"policy": {"name": "pid"}, "guards": {}})");
  r = ctl_authorized("policy " + shell_quote(good_config));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(status()["policy"]["name"], "pid");

  // A JSON syntax error is ours: exit 2 naming file:line:column; nothing is sent.
  const std::string broken =
      kCtlCliScratch.write("broken.json", "{\n  \"name\": \"static\",,\n}\n");
  r = ctl_authorized("policy " + shell_quote(broken));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, broken + ":2:")) << r.output;
  const std::string nameless = kCtlCliScratch.write("nameless.json", R"({"params": {}})");
  r = ctl_authorized("policy " + shell_quote(nameless));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "name: missing")) << r.output;
  r = ctl_authorized("policy " + shell_quote(kCtlCliScratch.path("no-such-file.json")));
  EXPECT_EQ(r.exit_code, 2) << r.output;

  r = ctl_authorized("bounds 4 16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(CtlCli, RefusalsExitOneWithTheServersMessage) {
  CommandResult r = ctl("override 5 --ttl 10s --token-file " + shell_quote(wrong_token_file_));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "invalid bearer token")) << r.output;
  EXPECT_TRUE(contains(r.output, "401")) << r.output;

  r = ctl("pause");  // no token at all
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "missing Authorization")) << r.output;
  EXPECT_TRUE(contains(r.output, "--token-file")) << r.output;  // the hint
  EXPECT_EQ(status()["operator_paused"], false);

  r = ctl_authorized("override 999");  // above the hard limit
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "field: workers")) << r.output;
  EXPECT_TRUE(status()["override"].is_null());

  r = ctl("decisions --limit 999999");  // above the server's decision history
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "field: limit")) << r.output;
}

TEST_F(CtlCli, OptionsGoBeforeOrAfterTheCommand) {
  CommandResult r =
      run_command("env -u LAGPILOT_API_TOKEN " + kBinary + " ctl --url " + url_ + " --json status");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(parse_output(r).contains("workers")) << r.output;
  r = run_command(kBinary + " ctl status --json --url " + url_ + "/");  // trailing slash is fine
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(parse_output(r).contains("workers")) << r.output;
}

// No server needed below.

TEST(CtlCliOffline, UnreachableServerExitsOne) {
  const int port = free_loopback_port();
  ASSERT_GT(port, 0);
  const CommandResult r = run_command(
      kBinary + " ctl status --timeout 2 --url http://127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "cannot reach")) << r.output;
}

TEST(CtlCliOffline, BadDurationsExitTwoNamingTheFlag) {
  const int port = free_loopback_port();  // never contacted: the duration is checked first
  for (const std::string ttl : {"10x", "1h1h", "30m1h", "m", "1h30", "0", "0s", "1..5s", "-5", "",
                                "5 m", "5sm", "1s1ms1"}) {
    // "--ttl=-5": a value starting with '-' must be attached to its flag.
    const std::string flag = ttl.rfind('-', 0) == 0 ? "--ttl=" : "--ttl ";
    const CommandResult r = run_command(kBinary + " ctl override 3 " + flag + shell_quote(ttl) +
                                        " --url http://127.0.0.1:" + std::to_string(port));
    EXPECT_EQ(r.exit_code, 2) << "--ttl '" << ttl << "': " << r.output;
    EXPECT_TRUE(contains(r.output, "--ttl")) << "--ttl '" << ttl << "': " << r.output;
    EXPECT_FALSE(contains(r.output, "cannot reach")) << r.output;
  }
}

TEST(CtlCliOffline, BadArgumentsExitTwo) {
  const std::string url = " --url http://127.0.0.1:" + std::to_string(free_loopback_port());
  struct Case {
    std::string args;
    std::string expected;  // in the output
  };
  const std::vector<Case> cases = {
      {"status --url https://127.0.0.1:9464", "--url"},
      {"status --url http://:9464", "--url"},
      {"status --url http://127.0.0.1:99999", "--url"},
      {"override 3 --token-file /nonexistent/token" + url, "--token-file"},
      {"override three" + url, "N"},
      {"override" + url, "N"},
      {"bounds 4" + url, "MAX"},
      {"decisions --limit 0" + url, "--limit"},
      {"frobnicate" + url, "subcommand"},
      {"" + url, "subcommand"},
  };
  for (const Case& c : cases) {
    const CommandResult r = run_command(kBinary + " ctl " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.output;
    EXPECT_TRUE(contains(r.output, c.expected)) << c.args << ": " << r.output;
  }
}

}  // namespace
}  // namespace lagpilot
