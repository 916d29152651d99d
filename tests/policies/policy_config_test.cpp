// Building policies from JSON and from command-line specs: validation names the JSON path,
// defaults round-trip, and the example configs in config/policies/ hold the defaults.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "policies/config_reader.h"
#include "policies/policy_factory.h"

namespace lagpilot {
namespace {

ConfigError make_error(const std::string& name, const nlohmann::json& params,
                       const std::string& path = "policy.params") {
  try {
    make_policy(name, params, path);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << name << " accepted " << params.dump();
  return ConfigError("", "");
}

TEST(PolicyFactory, Names) {
  EXPECT_EQ(policy_names(), (std::vector<std::string>{"static", "threshold", "pid", "hpa", "keda",
                                                      "model", "hybrid"}));
  for (const auto& name : policy_names()) EXPECT_EQ(make_policy(name, {})->name(), name);
}

TEST(ConfigError, ControlCharactersAreShownNotPassedThrough) {
  // A key with a NUL and an escape sequence, as a fuzzer once sent: the message stays whole.
  const std::string key = std::string("ke\0y", 4) + "\x1b[2J";
  try {
    make_policy("pid", nlohmann::json{{key, 1}});
    FAIL() << "unknown key accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ke\\x00y\\x1b[2J"), std::string::npos) << what;
    EXPECT_NE(what.find("unknown"), std::string::npos) << what;
    EXPECT_EQ(what.find('\0'), std::string::npos);
  }
  EXPECT_EQ(printable("tab\there\x7f"), "tab\\x09here\\x7f");
  EXPECT_EQ(printable("caf\xc3\xa9 ok"), "caf\xc3\xa9 ok") << "UTF-8 passes through";
}

TEST(PolicyFactory, DefaultsRoundTrip) {
  for (const auto& name : policy_names()) {
    const nlohmann::json defaults = default_params(name);
    ASSERT_TRUE(defaults.is_object()) << name;
    EXPECT_FALSE(defaults.empty()) << name;
    EXPECT_EQ(make_policy(name, defaults)->params(), defaults) << name;
    EXPECT_EQ(make_policy(name, nullptr)->params(), defaults) << name;  // null = defaults
  }
}

TEST(PolicyFactory, UnknownNameIsAnErrorOnThePolicyName) {
  const ConfigError e = make_error("pdi", {});
  EXPECT_EQ(e.path(), "policy.name");
  const std::string what = e.what();
  EXPECT_NE(what.find("unknown policy \"pdi\""), std::string::npos) << what;
  for (const auto& name : policy_names()) EXPECT_NE(what.find(name), std::string::npos) << what;
  EXPECT_EQ(make_error("x", {}, "controllers[2].policy.params").path(),
            "controllers[2].policy.name");
}

TEST(PolicyFactory, UnknownKeyIsNamedForEveryPolicy) {
  for (const auto& name : policy_names()) {
    nlohmann::json params = default_params(name);
    params["bogus_key"] = 1;
    EXPECT_EQ(make_error(name, params).path(), "policy.params.bogus_key") << name;
  }
}

TEST(PolicyFactory, OutOfRangeValueIsNamedForEveryPolicy) {
  const std::vector<std::tuple<std::string, std::string, nlohmann::json>> cases = {
      {"static", "workers", 0},   {"threshold", "hysteresis", 1.5},          {"pid", "kp", -1},
      {"hpa", "tolerance", -0.5}, {"keda", "polling_interval_seconds", -30},
  };
  for (const auto& [name, key, value] : cases) {
    const ConfigError e = make_error(name, {{key, value}});
    EXPECT_EQ(e.path(), "policy.params." + key) << name;
  }
  EXPECT_STREQ(make_error("pid", {{"kp", -1}}).what(), "policy.params.kp: must be >= 0, got -1");
  EXPECT_EQ(make_error("pid", {{"kp", -1}}, "policies[1].params").path(), "policies[1].params.kp");
}

TEST(PolicyFactory, ParamsMustBeAnObject) {
  EXPECT_EQ(make_error("pid", nlohmann::json::array()).path(), "policy.params");
  EXPECT_EQ(make_error("hpa", 3).path(), "policy.params");
}

TEST(PolicySpec, Parses) {
  const PolicySpec pid = parse_policy_spec("pid");
  EXPECT_EQ(pid.name, "pid");
  EXPECT_EQ(pid.label, "pid");
  EXPECT_TRUE(pid.params.empty());

  const PolicySpec fixed = parse_policy_spec("static:16");
  EXPECT_EQ(fixed.name, "static");
  EXPECT_EQ(fixed.label, "static:16");
  EXPECT_EQ(fixed.params, (nlohmann::json{{"workers", 16}}));
  EXPECT_EQ(make_policy(fixed.name, fixed.params)->params()["workers"], 16);

  const PolicySpec drain = parse_policy_spec("pid:metric=drain_time, setpoint=10");
  EXPECT_EQ(drain.params, (nlohmann::json{{"metric", "drain_time"}, {"setpoint", 10}}));

  const PolicySpec hpa = parse_policy_spec("hpa:target_lag_per_worker=500");
  EXPECT_EQ(hpa.params["target_lag_per_worker"], 500);

  const PolicySpec keda = parse_policy_spec("keda:allow_idle_consumers=true");
  EXPECT_EQ(keda.params["allow_idle_consumers"], true);

  const PolicySpec table = parse_policy_spec(
      "threshold:base_workers=2,steps=[{\"above\":2000,\"workers\":8},"
      "{\"above\":5000,\"workers\":16}]");
  EXPECT_EQ(table.params["steps"].size(), 2u);
  EXPECT_EQ(table.params["base_workers"], 2);

  for (const auto& name : policy_names()) EXPECT_EQ(parse_policy_spec(name).name, name);
}

TEST(PolicySpec, BadSpecsAreConfigErrorsNamingTheSpec) {
  for (const std::string bad :
       {"", ":", "foo", "static:abc", "static:", "static:16:3", "static:16,workers=3", "pid:kp",
        "pid:kp=-1", "pid:kp=1,kp=2", "pid:=1", "hpa:8", "keda:lag_threshold=0",
        "threshold:steps=[1,2]"}) {
    try {
      parse_policy_spec(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), "policy spec \"" + bad + "\"") << e.what();
    }
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(PolicyConfigFiles, EachPolicyHasAnExampleHoldingItsDefaults) {
  for (const auto& name : policy_names()) {
    const std::string path =
        std::string(LAGPILOT_SOURCE_DIR) + "/config/policies/" + name + ".json";
    const std::string text = read_file(path);
    ASSERT_FALSE(text.empty()) << path;
    const nlohmann::json doc = nlohmann::json::parse(text);
    ASSERT_TRUE(doc.contains("policy")) << path;
    EXPECT_EQ(doc["policy"]["name"], name) << path;
    const nlohmann::json& params = doc["policy"]["params"];
    EXPECT_EQ(make_policy(name, params)->params(), params) << path;
    EXPECT_EQ(params, default_params(name)) << path << " should list every default";
  }
}

}  // namespace
}  // namespace lagpilot
