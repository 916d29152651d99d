// `lagpilot calibrate` as a user runs it: on the embedded broker with the default synthetic
// handler (5 ms), short dwells; the table, the rate limit, --json, and a written config that
// `run --print-config` and `sim` accept. Each calibration takes about 3 s (the group join) plus
// the dwells.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"

namespace lagpilot {
namespace {

using testing::kBinary;
using testing::run_command;
using testing::shell_quote;

const testing::ScratchDir kCalibrateCliScratch("lagpilot-calibrate-it");

nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(testing::slurp(path));
}

TEST(CalibrateCli, PrintsTheTableAndWritesALoadableConfig) {
  const std::string config = kCalibrateCliScratch.path("calibrated.json");
  const auto r = run_command(kBinary + " calibrate --max-workers 4 --dwell 1s --warmup 0.5s" +
                             " --write-config " + shell_quote(config));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The table: a header and one row per step (1, 2, 4), then the fit and the rate limit.
  EXPECT_NE(r.output.find("workers  throughput/s"), std::string::npos) << r.output;
  for (const char* row : {"\n      1 ", "\n      2 ", "\n      4 "}) {
    EXPECT_NE(r.output.find(row), std::string::npos) << "no row '" << row << "' in\n" << r.output;
  }
  EXPECT_NE(r.output.find("USL fit: lambda"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("recommended producer rate limit: "), std::string::npos) << r.output;

  // The config: the model policy seeded with the fit, the simulator's model calibrated to it,
  // and the measurement for humans.
  const nlohmann::json doc = read_json(config);
  const nlohmann::json& cal = doc["calibration"];
  ASSERT_EQ(cal["steps"].size(), 3u) << cal.dump(2);
  const double lambda = cal["fit"]["lambda"].get<double>();
  // The default handler takes 5 ms: at most 200/s per worker. A wide band, since a loaded
  // machine stretches the handler (149/s was seen under a parallel build); it still catches a
  // fit off by a factor. The accuracy goal (+-15 %) is bench/calibration_bench.cpp's.
  EXPECT_GT(lambda, 120);
  EXPECT_LT(lambda, 230);
  EXPECT_EQ(doc["policy"]["name"], "model");
  EXPECT_DOUBLE_EQ(doc["policy"]["params"]["fit"]["lambda"].get<double>(), lambda);
  EXPECT_NEAR(doc["sim"]["model"]["service_mean_seconds"].get<double>(), 1 / lambda, 1e-12);
  EXPECT_DOUBLE_EQ(doc["sim"]["model"]["usl_sigma"].get<double>(),
                   cal["fit"]["sigma"].get<double>());
  EXPECT_DOUBLE_EQ(cal["recommended_rate_limit"].get<double>(),
                   0.75 * cal["steps"][2]["throughput"].get<double>());
  EXPECT_FALSE(cal["date"].get<std::string>().empty());
  // The producer pacing recommendation at guards.max_workers (16 by default): the fitted curve
  // there, since the largest step was 4; 25 % headroom.
  const nlohmann::json& pace = cal["pacing"];
  EXPECT_EQ(pace["source"], "calibration_fit") << pace.dump();
  EXPECT_EQ(pace["max_workers"], 16);
  EXPECT_NEAR(pace["rate"].get<double>(), 0.75 * pace["sustainable_rate"].get<double>(), 1e-6);
  EXPECT_NE(r.output.find("producer pacing at 16 max workers: "), std::string::npos) << r.output;

  // `run` accepts it (unknown keys would be errors) and keeps the record.
  const auto printed = run_command(kBinary + " run --print-config --config " + shell_quote(config));
  ASSERT_EQ(printed.exit_code, 0) << printed.output;
  const nlohmann::json effective = nlohmann::json::parse(printed.output);
  EXPECT_EQ(effective["policy"]["name"], "model");
  EXPECT_EQ(effective["calibration"]["steps"].size(), 3u);

  // `sim` accepts it: the model policy (seeded) and the calibrated consumer model.
  const std::string trace = kCalibrateCliScratch.path("steady.csv");
  {
    std::ofstream out(trace);
    out << "timestamp,value\n";
    for (int i = 0; i < 120; ++i) out << 1700000000 + i << "," << (i < 60 ? 300 : 700) << "\n";
  }
  const auto simulated = run_command(kBinary + " sim --config " + shell_quote(config) +
                                     " --trace " + shell_quote(trace) + " --policy model,pid");
  ASSERT_EQ(simulated.exit_code, 0) << simulated.output;
  EXPECT_NE(simulated.output.find("\nmodel "), std::string::npos) << simulated.output;
}

TEST(CalibrateCli, JsonOutputHasEveryStep) {
  const std::string out = kCalibrateCliScratch.path("calibration.json");
  // Only stdout goes to the file (the parentheses keep run_command's 2>&1 outside).
  const auto r = run_command("(" + kBinary + " calibrate --steps 1,3 --dwell 1s --warmup 0.5s" +
                             " --json > " + shell_quote(out) + ")");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = read_json(out);
  ASSERT_EQ(j["steps"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["steps"][0]["workers"], 1);
  EXPECT_EQ(j["steps"][1]["workers"], 3);
  EXPECT_GT(j["steps"][1]["throughput"].get<double>(), j["steps"][0]["throughput"].get<double>());
  EXPECT_TRUE(j["complete"].get<bool>());
  // Two sizes cannot determine the whole curve: it says so.
  ASSERT_FALSE(j["warnings"].empty());
  EXPECT_NE(j["warnings"][0].get<std::string>().find("only 2 worker count"), std::string::npos);
}

TEST(CalibrateCli, BadFlagsExitTwoNamingTheFlag) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--steps 4,2", "--steps"},
      {"--steps 1,x", "--steps"},
      {"--dwell 1s --warmup 2s", "--dwell"},
      {"--dwell soon", "--dwell"},
      {"--warmup 500ms1s", "--warmup"},  // units largest first
      {"--max-workers 2 --steps 1,4", "--steps"},
      {"--headroom 1.5", "--headroom"},
      {"--headroom 0.1", "--headroom"},  // outside the practice's 20 to 30 %
  };
  for (const auto& [flags, expected] : cases) {
    const auto r = run_command(kBinary + " calibrate " + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << flags << "\n" << r.output;
  }
}

}  // namespace
}  // namespace lagpilot
