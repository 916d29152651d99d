// `lagpilot tune` as a user runs it: tables, held-out evaluation, a config that `lagpilot run`
// accepts, determinism across thread counts, and errors that name the file and the JSON path.
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

const testing::ScratchDir kTuneCliScratch("lagpilot-tune");

// Small traces: the Twitter trace (twitter_trace_args) to train on; held out, the first 62 days
// of the NYC taxi trace, compressed the same way (5.2 h).
std::string tune(const std::string& args) {
  return kBinary + " tune " + testing::twitter_trace_args("--train") + " --fidelity batch " + args;
}

TEST(TuneCli, WritesAConfigThatRunAcceptsAndShowsTrainAndTest) {
  const std::string best = kTuneCliScratch.path("best.json");
  const std::string test_trace = kTuneCliScratch.path("taxi.csv");
  // The held-out trace: 2999 half-hour rows of the taxi trace.
  {
    std::ifstream in(kTraces + "nab_nyc_taxi.csv");
    std::ofstream out(test_trace);
    std::string line;
    for (int i = 0; i < 3000 && std::getline(in, line); ++i) out << line << "\n";
  }
  auto r = run_command(tune("--policy pid --test " + shell_quote(test_trace) +
                            " --budget 6 --seed 3 --write-config " + shell_quote(best)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* text : {"Pareto front", "best (objective", "train / test", "baseline",
                           "nab_Twitter_volume_AAPL.csv", "taxi.csv", "objective: train"}) {
    EXPECT_NE(r.output.find(text), std::string::npos) << text << " missing in\n" << r.output;
  }
  // Rows for both sets.
  EXPECT_NE(r.output.find("\ntrain  best"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\ntest   best"), std::string::npos) << r.output;

  const nlohmann::json written = nlohmann::json::parse(slurp(best));
  EXPECT_EQ(written["policy"]["name"], "pid");
  const double kp = written["policy"]["params"]["kp"].get<double>();

  auto printed = run_command(kBinary + " run --print-config --config " + shell_quote(best));
  ASSERT_EQ(printed.exit_code, 0) << printed.output;
  const auto brace = printed.output.find('{');
  ASSERT_NE(brace, std::string::npos) << printed.output;
  const nlohmann::json effective = nlohmann::json::parse(printed.output.substr(brace));
  EXPECT_EQ(effective["policy"]["name"], "pid");
  EXPECT_DOUBLE_EQ(effective["policy"]["params"]["kp"].get<double>(), kp);
  EXPECT_NE(kp, 0.002) << "the tuned kp, not the default";
  EXPECT_EQ(effective["guards"], written["guards"]);

  // `lagpilot sim --config best.json` replays what was tuned.
  auto sim = run_command(testing::sim_command("--policy pid --config " + shell_quote(best)));
  EXPECT_EQ(sim.exit_code, 0) << sim.output;
}

TEST(TuneCli, SameSeedSameJsonWhateverTheThreads) {
  const std::string a = kTuneCliScratch.path("a.json"), b = kTuneCliScratch.path("b.json");
  const std::string args = "--policy threshold --strategy nelder-mead --budget 8 --seed 5 ";
  auto r1 = run_command(tune(args + "--threads 1 --json " + shell_quote(a)));
  ASSERT_EQ(r1.exit_code, 0) << r1.output;
  auto r2 = run_command(tune(args + "--threads 2 --json " + shell_quote(b)));
  ASSERT_EQ(r2.exit_code, 0) << r2.output;
  EXPECT_EQ(slurp(a), slurp(b));
  const auto j = nlohmann::json::parse(slurp(a));
  EXPECT_EQ(j["policy"], "threshold");
  EXPECT_EQ(j["strategy"], "nelder-mead");
  EXPECT_EQ(j["evaluations"].size(), 8u);
  EXPECT_FALSE(j["pareto_front"].empty());
  EXPECT_TRUE(j["held_out"]["best"].contains("train"));
  EXPECT_FALSE(j["held_out"]["best"].contains("test")) << "no --test given";
  // Progress goes to stderr as log lines when stderr is not a terminal.
  EXPECT_NE(r1.output.find("8/8 configurations"), std::string::npos) << r1.output;
}

TEST(TuneCli, GridWithASpaceFileAndWeights) {
  const std::string space = kTuneCliScratch.path("space.json");
  std::ofstream(space) << R"({"tune": {"policy": "static",
      "params": {"workers": {"min": 4, "max": 16, "points": 4}}}})";
  const std::string out = kTuneCliScratch.path("grid.json");
  auto r = run_command(tune("--space " + shell_quote(space) +
                            " --strategy grid --budget 4 --weights slo=1000,actions=0 --json " +
                            shell_quote(out)));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(slurp(out));
  ASSERT_EQ(j["evaluations"].size(), 4u);
  std::vector<int> workers;
  for (const auto& e : j["evaluations"]) workers.push_back(e["params"]["workers"].get<int>());
  EXPECT_EQ(workers, (std::vector<int>{4, 8, 12, 16}));
  EXPECT_EQ(j["weights"]["slo"], 1000.0);
  EXPECT_EQ(j["weights"]["actions"], 0.0);
}

TEST(TuneCli, BadInputNamesTheFileAndThePath) {
  const std::string space = kTuneCliScratch.path("bad_space.json");
  std::ofstream(space) << R"({"policy": "pid", "params": {"kp": {"min": 0.5, "max": 0.1}}})";
  auto r = run_command(tune("--space " + shell_quote(space) + " --budget 2"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(space + ": tune.params.kp.max"), std::string::npos) << r.output;

  auto grid = run_command(tune("--policy pid --strategy grid --budget 3"));
  EXPECT_EQ(grid.exit_code, 2) << grid.output;
  EXPECT_NE(grid.output.find("budget"), std::string::npos) << grid.output;

  auto weights = run_command(tune("--policy pid --budget 2 --weights slo=-3"));
  EXPECT_EQ(weights.exit_code, 2) << weights.output;
  EXPECT_NE(weights.output.find("--weights.slo"), std::string::npos) << weights.output;
}

}  // namespace
}  // namespace lagpilot
