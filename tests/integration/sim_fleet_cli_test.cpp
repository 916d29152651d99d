// `lagpilot sim --fleet` as a user runs it: the help documents the fleet flags, a run prints the
// fleet table and writes JSON/CSV/HTML, and bad values exit 2 naming the flag or the field.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace lagpilot {
namespace {

using testing::kBinary;
using testing::kTraces;
using testing::run_command;
using testing::shell_quote;
using testing::slurp;

const testing::ScratchDir kSimFleetCliScratch("lagpilot-sim-fleet");

std::string fleet_command(const std::string& args) {
  return kBinary + " sim --fleet --trace " + shell_quote(kTraces + "eval/train/flash_crowd.csv") +
         " --peak-load 3 " + args;
}

TEST(SimFleetCli, HelpDocumentsTheFleetFlags) {
  const auto r = run_command(kBinary + " sim --fleet --help");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* flag :
       {"--fleet", "--partitions", "--skew", "--assignment", "--replica-policy", "--replica-params",
        "--replicas", "--min-replicas", "--max-replicas", "--pod-start", "--rebalance",
        "--catch-up", "keda-recommended", "keda-lag", "docs/fleet.md"}) {
    EXPECT_NE(r.output.find(flag), std::string::npos) << flag << " missing in\n" << r.output;
  }
}

TEST(SimFleetCli, RunsAndWritesJsonCsvHtml) {
  const std::string json = kSimFleetCliScratch.path("fleet.json"),
                    csv = kSimFleetCliScratch.path("fleet.csv"),
                    html = kSimFleetCliScratch.path("fleet.html");
  const auto r = run_command(fleet_command(
      "--policy threshold --partitions 12 --replica-policy keda-recommended --pod-start 10 "
      "--json " +
      json + " --csv " + csv + " --html " + html));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* col : {"replica-s", "rebal", "threshold + keda-recommended"}) {
    EXPECT_NE(r.output.find(col), std::string::npos) << col << " in\n" << r.output;
  }
  const auto j = nlohmann::json::parse(slurp(json));
  ASSERT_EQ(j["runs"].size(), 1u);
  const auto& k = j["runs"][0]["kpis"];
  EXPECT_EQ(k["arrived"].get<int64_t>(),
            k["processed"].get<int64_t>() + k["final_lag"].get<int64_t>());
  EXPECT_GT(k["max_replicas"].get<int>(), 1);
  EXPECT_EQ(j["fleet"]["partitions"], 12);
  EXPECT_EQ(slurp(csv).rfind("run,t,arrival_rate,processed_rate,lag,workers,replicas", 0), 0u);
  EXPECT_NE(slurp(html).find("Replicas (pods alive"), std::string::npos);
}

TEST(SimFleetCli, BadValuesExitTwoNamingTheFlagOrField) {
  struct Case {
    std::string args, expected;
  };
  for (const Case& c : std::vector<Case>{
           {"--replicas 0", "--replicas"},
           {"--replica-policy hpa", "--replica-policy"},
           {"--assignment sticky", "--assignment"},
           {"--rebalance -1", "--rebalance"},
           {"--replicas 30 --max-replicas 10", "--replicas: 30 outside"},
           {"--replica-policy keda-recommended --replica-params lag_threshold=5",
            "--replica-params.lag_threshold"},
           {"--policy oracle", "the oracle has no fleet version"},
       }) {
    const auto r = run_command(fleet_command(c.args));
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.args << "\n" << r.output;
  }
  // A fleet flag without --fleet, and a bad "fleet" object in a config.
  auto r = run_command(kBinary + " sim --trace " +
                       shell_quote(kTraces + "eval/train/flash_crowd.csv") + " --replicas 3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("add --fleet"), std::string::npos) << r.output;
  const std::string cfg = kSimFleetCliScratch.path("bad-fleet.json");
  std::ofstream(cfg) << R"({"sim": {"fleet": {"rebalance_seconds": -3}}})";
  r = run_command(fleet_command("--config " + cfg));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("sim.fleet.rebalance_seconds"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace lagpilot
