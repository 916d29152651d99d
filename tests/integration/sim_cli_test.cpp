// `lagpilot sim` as a user runs it: table, JSON determinism, CSV, and errors for bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace lagpilot {
namespace {

using testing::kBinary;
using testing::run_command;
using testing::shell_quote;
using testing::sim_command;
using testing::slurp;

const testing::ScratchDir kSimCliScratch("lagpilot-sim");

TEST(SimCli, PrintsOneRowPerPolicyAndSameSeedGivesIdenticalJson) {
  const std::string a = kSimCliScratch.path("a.json"), b = kSimCliScratch.path("b.json"),
                    c = kSimCliScratch.path("c.json");
  const std::string policies = " --policy pid,threshold,hpa,keda,static:16 ";
  auto r1 = run_command(sim_command(policies + "--seed 7 --json " + a));
  ASSERT_EQ(r1.exit_code, 0) << r1.output;
  for (const char* label : {"pid", "threshold", "hpa", "keda", "static:16", "lag_integral",
                            "worker_seconds", "reversals", "final_lag"}) {
    EXPECT_NE(r1.output.find(label), std::string::npos) << label << " missing in\n" << r1.output;
  }
  ASSERT_EQ(run_command(sim_command(policies + "--seed 7 --threads 1 --json " + b)).exit_code, 0);
  ASSERT_EQ(run_command(sim_command(policies + "--seed 8 --json " + c)).exit_code, 0);
  EXPECT_EQ(slurp(a), slurp(b)) << "same seed must give byte-identical JSON";
  EXPECT_NE(slurp(a), slurp(c)) << "a different seed should change the arrivals";

  auto j = nlohmann::json::parse(slurp(a));
  ASSERT_EQ(j["runs"].size(), 5u);
  for (const auto& run : j["runs"]) {
    const auto& k = run["kpis"];
    EXPECT_EQ(k["arrived"].get<int64_t>(),
              k["processed"].get<int64_t>() + k["final_lag"].get<int64_t>())
        << run["label"];
  }
}

TEST(SimCli, CsvHasTheSeriesOfEveryPolicy) {
  const std::string csv = kSimCliScratch.path("series.csv");
  auto r = run_command(sim_command("--policy pid,static:8 --csv " + csv));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header.rfind("t,", 0), 0u) << header;
  for (const char* col : {"pid_lag", "pid_workers", "static:8_lag", "static:8_workers"}) {
    EXPECT_NE(header.find(col), std::string::npos) << col << " in " << header;
  }
  int rows = 0;
  std::string line;
  while (std::getline(in, line)) ++rows;
  EXPECT_GT(rows, 100);
}

TEST(SimCli, MalformedTraceNamesFileAndLine) {
  const std::string bad = kSimCliScratch.path("bad.csv");
  std::ofstream(bad) << "timestamp,value\n2020-01-01 00:00:00,5\n2020-01-01 00:01:00,five\n";
  auto r = run_command(kBinary + " sim --trace " + shell_quote(bad) + " --policy pid");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(bad + ":3:"), std::string::npos) << r.output;
}

TEST(SimCli, BadPolicySpecOrConfigExitsTwo) {
  auto r = run_command(sim_command("--policy pid:kp=-1"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("kp"), std::string::npos) << r.output;
  EXPECT_EQ(run_command(sim_command("--policy nosuch")).exit_code, 2);
  const std::string cfg = kSimCliScratch.path("sim.json");
  std::ofstream(cfg) << R"({"sim": {"batch_size": 0}})";
  r = run_command(sim_command("--policy pid --config " + cfg));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("sim.batch_size"), std::string::npos) << r.output;
}

TEST(SimCli, EveryExampleConfigLoads) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           std::string(LAGPILOT_SOURCE_DIR) + "/config")) {
    if (entry.path().extension() != ".json") continue;
    // Not lagpilot configs: the Grafana dashboard (checked by OpsArtifacts).
    if (entry.path().parent_path().filename() == "grafana") continue;
    auto r =
        run_command(kBinary + " run --print-config --config " + shell_quote(entry.path().string()));
    EXPECT_EQ(r.exit_code, 0) << entry.path() << "\n" << r.output;
  }
}

}  // namespace
}  // namespace lagpilot
