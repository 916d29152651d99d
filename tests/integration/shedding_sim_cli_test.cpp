// `lagpilot sim` with a "shedding" object: the same config errors as `lagpilot run` (one parser,
// policies/shed_gate.h), the one warning about the priority rule the simulator ignores, and the
// shed KPIs in the table and the JSON only with shedding (docs/pipeline.md, "Shedding in the
// simulator").
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli_test_util.h"

namespace lagpilot {
namespace {

using testing::kBinary;
using testing::kTraces;
using testing::run_command;
using testing::shell_quote;

const testing::ScratchDir kSheddingSimCliScratch("lagpilot-shedding-sim");

std::string sim(const std::string& config, const std::string& args = "") {
  return kBinary + " sim --trace " + shell_quote(kTraces + "espa_q1_cosine_HPA50_input_rate.csv") +
         " --peak-load 1.3 --seed 7 --policy hpa --config " + shell_quote(config) + " " + args;
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(SheddingSimCli, SameErrorAsRunNamingTheJsonPath) {
  const std::string path =
      kSheddingSimCliScratch.write("bad.json", R"({"shedding": {"max_age_secs": 10}})");
  const auto s = run_command(sim(path));
  const auto r = run_command(kBinary + " run --config " + shell_quote(path) + " --print-config");
  EXPECT_EQ(s.exit_code, 2) << s.output;
  EXPECT_EQ(r.exit_code, 2) << r.output;
  const std::string message = path + ": shedding.max_age_secs: unknown key";
  EXPECT_NE(s.output.find(message), std::string::npos) << s.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
}

TEST(SheddingSimCli, PriorityRuleIsIgnoredWithOneWarningAndAgeSheds) {
  const std::string path = kSheddingSimCliScratch.write(
      "prio.json",
      R"({"lag_slo": 5000, "shedding": {"max_age_seconds": 3, "priority": {"header": "p"},
          "min_priority_under_pressure": 3}})");
  const std::string json = kSheddingSimCliScratch.path("prio-out.json");
  const auto r = run_command(sim(path, "--json " + shell_quote(json)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(occurrences(r.output, "the simulator ignores the priority rule"), 1u) << r.output;
  EXPECT_NE(r.output.find("shed_time"), std::string::npos) << r.output;
  const nlohmann::json j = nlohmann::json::parse(testing::slurp(json));
  const nlohmann::json& k = j["runs"][0]["kpis"];
  EXPECT_GT(k["shed"]["age"].get<int64_t>(), 0);
  EXPECT_EQ(k["arrived"].get<int64_t>(), k["processed"].get<int64_t>() +
                                             k["shed"]["total"].get<int64_t>() +
                                             k["final_lag"].get<int64_t>());
  EXPECT_TRUE(j["shedding"].contains("min_priority_under_pressure"));
}

TEST(SheddingSimCli, NoShedFieldsWithoutShedding) {
  const std::string path = kSheddingSimCliScratch.write("plain.json", R"({"lag_slo": 5000})");
  const std::string json = kSheddingSimCliScratch.path("plain-out.json");
  const auto r = run_command(sim(path, "--json " + shell_quote(json)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("shed_time"), std::string::npos) << r.output;
  const nlohmann::json j = nlohmann::json::parse(testing::slurp(json));
  EXPECT_FALSE(j.contains("shedding"));
  EXPECT_FALSE(j["runs"][0]["kpis"].contains("shed"));
}

}  // namespace
}  // namespace lagpilot
