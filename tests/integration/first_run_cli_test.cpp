// What a newcomer runs first, and what it must show: `lagpilot sim --trace F` on each bundled
// trace gives rows that differ (a trace far from the consumer's range is scaled, and the first
// line says so); a lag recording replays on a consumer of the per-worker rate it was
// reconstructed with; every list of policies names every policy the factory builds; `tune` on
// a trace that saturates every configuration says so instead of drawing a flat front.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "cli_test_util.h"
#include "policies/policy_factory.h"

namespace lagpilot {
namespace {

using testing::kBinary;
using testing::kTraces;
using testing::run_command;
using testing::shell_quote;
using testing::slurp;

const testing::ScratchDir kFirstRunCliScratch("lagpilot-first-run");

// The first `rows` rows of a bundled trace (after its header), so that the long traces simulate
// in a second or two.
std::string cut_trace(const std::string& name, int rows) {
  std::ifstream in(kTraces + name);
  std::ostringstream out;
  std::string line;
  for (int i = 0; i <= rows && std::getline(in, line); ++i) out << line << "\n";
  return kFirstRunCliScratch.write("cut-" + name, out.str());
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// `command` with its stderr (the log) dropped, for a run_command() whose output is then stdout.
std::string stdout_only(const std::string& command) {
  return "(" + command + " 2>/dev/null)";
}

constexpr int kCutRows = 120;

// The trace files in traces/ that hold arrivals (the lag recording and its companion replay
// together, below).
std::vector<std::string> arrival_traces() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(kTraces)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".csv" || name.find("_lag.csv") != std::string::npos ||
        name.find("_taskmanager.csv") != std::string::npos) {
      continue;
    }
    names.push_back(name);
  }
  return names;
}

// Adaptive policies that all sit at min workers give identical rows: the symptom.
void expect_rows_differ(const nlohmann::json& report, const std::string& what) {
  std::set<std::string> adaptive_rows;
  int scaled_up = 0;
  for (const auto& run : report["runs"]) {
    if (run["label"].get<std::string>().rfind("static", 0) == 0) continue;
    adaptive_rows.insert(run["kpis"].dump());
    scaled_up += run["kpis"]["max_workers"].get<int>() > 4 ? 1 : 0;
  }
  EXPECT_GT(adaptive_rows.size(), 1u) << what << ": every adaptive policy gave the same row";
  EXPECT_GT(scaled_up, 0) << what << ": no policy ever left min workers";
}

TEST(FirstRunCli, EveryBundledTraceGivesRowsThatDiffer) {
  const auto names = arrival_traces();
  ASSERT_GE(names.size(), 5u);
  for (const std::string& name : names) {
    const std::string json = kFirstRunCliScratch.path(name + ".json");
    auto r = run_command(stdout_only(
        kBinary + " sim --trace " + shell_quote(cut_trace(name, kCutRows)) +
        " --policy pid,threshold,hpa,static:16 --fidelity batch" + " --json " + shell_quote(json)));
    ASSERT_EQ(r.exit_code, 0) << name << "\n" << r.output;
    expect_rows_differ(nlohmann::json::parse(slurp(json)), name);
    if (r.output.find("scaled to peak") != std::string::npos) {
      EXPECT_NE(first_line(r.output).find("--peak-load 0 keeps absolute rates"), std::string::npos)
          << "the note is not the first line:\n"
          << r.output;
      EXPECT_TRUE(
          nlohmann::json::parse(slurp(json))["trace"]["notes"].value("peak_load_automatic", false));
    }
  }
  // The lag recording, with its companion and the per-worker rate of the recorded consumer.
  const std::string json = kFirstRunCliScratch.path("lag.json");
  auto r = run_command(stdout_only(
      kBinary + " sim --trace " + cut_trace("espa_q1_cosine_HPA50_lag.csv", kCutRows) +
      " --companion " + cut_trace("espa_q1_cosine_HPA50_taskmanager.csv", kCutRows) +
      " --per-worker-rate 20000 --policy pid,threshold,hpa --fidelity batch --json " + json));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_rows_differ(nlohmann::json::parse(slurp(json)), "the lag recording");
}

TEST(FirstRunCli, PeakLoadZeroKeepsAbsoluteRatesAndSaysNothing) {
  const std::string cut = cut_trace("nab_Twitter_volume_AAPL.csv", kCutRows);
  const std::string json = kFirstRunCliScratch.path("absolute.json");
  auto r = run_command(kBinary + " sim --trace " + shell_quote(cut) +
                       " --peak-load 0 --policy pid,hpa --json " + shell_quote(json));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("scaled to peak"), std::string::npos) << r.output;
  for (const auto& run : nlohmann::json::parse(slurp(json))["runs"]) {
    EXPECT_EQ(run["kpis"]["max_workers"].get<int>(), 4) << "absolute rates are far below capacity";
  }
  // An explicit --peak-load is used as given, without the note.
  r = run_command(kBinary + " sim --trace " + shell_quote(cut) +
                  " --peak-load 1.5 --policy pid --fidelity batch");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("scaled to peak"), std::string::npos) << r.output;
}

TEST(FirstRunCli, ReconstructedLagReplaysOnAConsumerOfTheSamePerWorkerRate) {
  const std::string lag = cut_trace("espa_q1_cosine_HPA50_lag.csv", kCutRows);
  const std::string companion = cut_trace("espa_q1_cosine_HPA50_taskmanager.csv", kCutRows);
  const std::string json = kFirstRunCliScratch.path("reconstructed.json");
  auto r = run_command(kBinary + " sim --trace " + lag + " --companion " + companion +
                       " --per-worker-rate 20000 --peak-load 0 --policy pid,hpa --fidelity batch" +
                       " --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto report = nlohmann::json::parse(slurp(json));
  EXPECT_DOUBLE_EQ(report["sim"]["model"]["service_mean_seconds"].get<double>(), 1.0 / 20000);
  for (const auto& run : report["runs"]) {
    // The recorded consumer kept up (its lag drained); a consumer of its rate must mostly keep
    // up too, not end with the whole trace as lag.
    const auto& k = run["kpis"];
    EXPECT_LT(k["final_lag"].get<double>(), 0.01 * k["arrived"].get<double>()) << run["label"];
  }

  // A config whose consumer has another rate is refused, naming both rates and the file.
  const std::string config = kFirstRunCliScratch.write(
      "slow-model.json", R"({"sim": {"model": {"service_mean_seconds": 0.01}}})");
  r = run_command(kBinary + " sim --config " + config + " --trace " + lag + " --companion " +
                  companion + " --per-worker-rate 20000 --policy pid");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("20000 msg/s per worker"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("100 msg/s per worker"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("slow-model.json"), std::string::npos) << r.output;
  // The same rate in the config is fine.
  const std::string same = kFirstRunCliScratch.write(
      "same-model.json", R"({"sim": {"model": {"service_mean_seconds": 5e-5}}})");
  r = run_command(kBinary + " sim --config " + same + " --trace " + lag + " --companion " +
                  companion + " --per-worker-rate 20000 --policy pid");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(FirstRunCli, EveryPolicyListNamesEveryPolicyOfTheFactory) {
  const std::string readme = slurp(std::string(LAGPILOT_SOURCE_DIR) + "/README.md");
  for (const std::string command : {"--help", "sim --help", "tune --help", "run --help"}) {
    const auto r = run_command(kBinary + " " + command);
    ASSERT_EQ(r.exit_code, 0) << command;
    // CLI11 wraps help text; the names stay whole words.
    std::string text = r.output;
    for (char& c : text) c = (c == '\n' || c == '\t') ? ' ' : c;
    EXPECT_NE(text.find(policy_name_list()), std::string::npos)
        << command << " does not list " << policy_name_list() << ":\n"
        << r.output;
  }
  const auto r = run_command(kBinary + " sim --trace " + kTraces +
                             "azure_AzureLLMInferenceTrace_code.csv --policy nosuch");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find(policy_name_list()), std::string::npos) << r.output;
  for (const std::string& name : policy_names()) {
    EXPECT_NE(readme.find("| `" + name + "` |"), std::string::npos)
        << "README.md's policy table has no row for " << name;
  }
}

// 5 minutes at 3000/s: 2.7x the default consumer's capacity at 16 workers.
std::string saturating_trace() {
  std::ostringstream csv;
  csv << "timestamp,value\n";
  for (int i = 0; i < 300; ++i) csv << 1600000000 + i << ",3000\n";
  return kFirstRunCliScratch.write("saturating.csv", csv.str());
}

TEST(FirstRunCli, TuneOnATraceThatSaturatesEveryConfigurationSaysSoInsteadOfAFront) {
  const std::string trace = saturating_trace();
  auto r = run_command(stdout_only(kBinary + " tune --policy pid --train " + trace +
                                   " --peak-load 0 --fidelity batch --budget 6"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("saturate the consumer whatever the parameters"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("--peak-load 1.2"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Pareto front ("), std::string::npos) << r.output;
  // The HTML report says the same in place of the front's chart and table.
  const std::string html = kFirstRunCliScratch.path("flat-tune.html");
  r = run_command(stdout_only(kBinary + " tune --policy pid --train " + trace +
                              " --peak-load 0 --fidelity batch --budget 6 --html " + html));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string page = slurp(html);
  EXPECT_NE(page.find("id=\"no-front\""), std::string::npos);
  EXPECT_EQ(page.find("id=\"pareto-table\""), std::string::npos);

  // Left to choose, tune scales such a trace to 1.2x, and says so on its first line.
  r = run_command(stdout_only(kBinary + " tune --policy pid --train " + trace +
                              " --fidelity batch --budget 2"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(first_line(r.output).find("scaled to peak 1.2x capacity at max workers"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace lagpilot
