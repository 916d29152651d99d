// One lag SLO for every subcommand: the config's top-level "lag_slo" is what `lagpilot sim`
// scores against (and `run` reports), `--slo` overrides it, and an old config's "sim.lag_slo"
// is refused with an error that says where the setting went.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_test_util.h"

namespace lagpilot {
namespace {

using testing::kBinary;
using testing::run_command;
using testing::shell_quote;
using testing::slurp;

const testing::ScratchDir kLagSloCliScratch("lagpilot-lag-slo");

// 720 one-second bins: 200/s, a 2-minute burst of 800/s (about twice what 4 workers of the
// default consumer model drain), then 100/s while the backlog drains. Under static:4 the lag
// climbs to tens of thousands and comes back to about zero.
std::string burst_trace() {
  std::ostringstream csv;
  csv << "timestamp,value\n";
  for (int t = 0; t < 720; ++t) {
    const int rate = t < 300 ? 200 : t < 420 ? 800 : 100;
    csv << 1'600'000'000 + t << "," << rate << "\n";
  }
  return kLagSloCliScratch.write("burst.csv", csv.str());
}

// `lagpilot sim` of the burst under static:4 with `args`; its JSON report.
nlohmann::json sim_report(const std::string& name, const std::string& args) {
  static const std::string trace = burst_trace();
  const std::string out = kLagSloCliScratch.path(name + ".json");
  const auto r = run_command(kBinary + " sim --trace " + shell_quote(trace) +
                             " --policy static:4 --seed 3 --json " + shell_quote(out) + " " + args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(slurp(out), nullptr, /*allow_exceptions=*/false);
}

std::string config_with_slo(const std::string& name, const std::string& slo) {
  return kLagSloCliScratch.write(name,
                                 R"({"lag_slo": )" + slo + R"(, "sim": {"tick_seconds": 1}})");
}

// The JSON object in `output` (the command's stdout and stderr together; logs go around it).
nlohmann::json json_in(const std::string& output) {
  const auto open = output.find('{'), close = output.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return nullptr;
  return nlohmann::json::parse(output.substr(open, close - open + 1), nullptr, false);
}

double seconds_above(const nlohmann::json& report) {
  return report["runs"][0]["kpis"]["seconds_above_slo"].get<double>();
}

TEST(LagSloCli, SimScoresAgainstTheTopLevelLagSlo) {
  const nlohmann::json zero = sim_report("zero", "--config " + config_with_slo("zero.cfg", "0"));
  ASSERT_TRUE(zero.is_object());
  EXPECT_EQ(zero["lag_slo"], 0);
  EXPECT_FALSE(zero["sim"].contains("lag_slo")) << zero["sim"];
  const int64_t max_lag = zero["runs"][0]["kpis"]["max_lag"].get<int64_t>();
  ASSERT_GT(max_lag, 10'000) << "the burst should build a backlog";
  const double above_zero = seconds_above(zero);
  EXPECT_GT(above_zero, 120.0);  // the whole burst and the drain after it

  // Half the peak: some of those seconds, not all.
  const std::string half = std::to_string(max_lag / 2);
  const nlohmann::json mid = sim_report("mid", "--config " + config_with_slo("mid.cfg", half));
  EXPECT_EQ(mid["lag_slo"], max_lag / 2);
  EXPECT_GT(seconds_above(mid), 0.0);
  EXPECT_LT(seconds_above(mid), above_zero);

  // The largest SLO a config may hold: never above it.
  const nlohmann::json top = sim_report("top", "--config " + config_with_slo("top.cfg", "1e15"));
  EXPECT_EQ(top["lag_slo"], int64_t{1'000'000'000'000'000});
  EXPECT_EQ(seconds_above(top), 0.0);

  // A fractional SLO counts what `run` counts (lag > 2500.9 is lag > 2500 for whole messages),
  // and --slo overrides the config's.
  const nlohmann::json fractional =
      sim_report("fractional", "--config " + config_with_slo("fractional.cfg", "2500.9"));
  EXPECT_EQ(fractional["lag_slo"], 2500);
  const nlohmann::json flag =
      sim_report("flag", "--config " + config_with_slo("flag.cfg", "0") + " --slo 2500");
  EXPECT_EQ(flag["lag_slo"], 2500);
  EXPECT_EQ(seconds_above(flag), seconds_above(fractional));
  EXPECT_GT(seconds_above(flag), seconds_above(mid));
  EXPECT_LT(seconds_above(flag), above_zero);
}

TEST(LagSloCli, OldSimLagSloIsRefusedNamingItsNewPlace) {
  const std::string old = kLagSloCliScratch.write(
      "old.cfg", R"({"policy": {"name": "pid"}, "sim": {"lag_slo": 5000}})");
  const std::string sim = kBinary + " sim --trace " + shell_quote(burst_trace()) +
                          " --policy static:4 --config " + shell_quote(old);
  const std::string tune = kBinary + " tune --policy static --budget 1 --train " +
                           shell_quote(burst_trace()) + " --config " + shell_quote(old);
  const std::string print = kBinary + " run --print-config --config " + shell_quote(old);
  for (const std::string& command : {sim, tune, print}) {
    const auto r = run_command(command);
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.output;
    EXPECT_NE(r.output.find(old + ": sim.lag_slo: moved to the top level"), std::string::npos)
        << command << "\n"
        << r.output;
    EXPECT_NE(r.output.find(R"(write "lag_slo": 5000 beside "policy")"), std::string::npos)
        << r.output;
  }
}

TEST(LagSloCli, PrintConfigHasOneLagSlo) {
  const auto r = run_command(kBinary + " run --print-config --config " +
                             shell_quote(config_with_slo("print.cfg", "2500.5")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json printed = json_in(r.output);
  ASSERT_TRUE(printed.is_object()) << r.output;
  EXPECT_EQ(printed["lag_slo"], 2500.5);
  EXPECT_FALSE(printed["sim"].contains("lag_slo")) << printed["sim"];
  EXPECT_EQ(printed["sim"]["tick_seconds"], 1.0);
}

TEST(LagSloCli, TuneWritesTheSloItUsedAtTheTopLevel) {
  const std::string written = kLagSloCliScratch.path("tuned.json");
  const auto r = run_command(kBinary + " tune --policy static --budget 2 --seed 1 --train " +
                             shell_quote(burst_trace()) + " --config " +
                             shell_quote(config_with_slo("tune.cfg", "2500.5")) +
                             " --slo 4000 --write-config " + shell_quote(written));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("above the lag SLO of 4000"), std::string::npos) << r.output;
  const nlohmann::json config = nlohmann::json::parse(slurp(written), nullptr, false);
  ASSERT_TRUE(config.is_object()) << slurp(written);
  EXPECT_EQ(config["lag_slo"], 4000.0);
  EXPECT_FALSE(config["sim"].contains("lag_slo")) << config["sim"];
  // ... and it loads where it is meant to.
  const auto print = run_command(kBinary + " run --print-config --config " + shell_quote(written));
  EXPECT_EQ(print.exit_code, 0) << print.output;
}

}  // namespace
}  // namespace lagpilot
