// The simulator's results do not change by accident: every case of tests/sim/golden/cases.json
// is replayed through the library as `lagpilot sim` replays it (same trace loading and scaling,
// same config, the oracle and its replay beside the simulated policies), and its "sim" and "runs"
// JSON must equal, byte for byte, the file that `lagpilot sim --json` wrote for it
// (scripts/update-golden-kpis.sh). A speed-up must pass this unchanged; a deliberate change of
// results regenerates the files and says why in the commit (docs/testing.md).

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "policies/guards.h"
#include "policies/policy_factory.h"
#include "sim/oracle.h"
#include "sim/report.h"
#include "sim/simulation.h"
#include "sim/trace_reader.h"

namespace lagpilot::sim {
namespace {

const std::string kRoot = std::string(LAGPILOT_SOURCE_DIR) + "/";
const std::string kGolden = kRoot + "tests/sim/golden/";

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return nlohmann::json::parse(in);
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) out.push_back(part);
  return out;
}

// What `lagpilot sim --json` reports for the case, built through the library.
nlohmann::json replay_case(const nlohmann::json& c) {
  const nlohmann::json config = read_json(kGolden + c.at("config").get<std::string>());
  SimConfig sc = SimConfig::from_json(config.at("sim"));
  sc.lag_slo = static_cast<int64_t>(std::floor(config.at("lag_slo").get<double>()));
  const GuardConfig guards = GuardConfig::from_json(config.at("guards"));
  sc.fidelity = c.at("fidelity").get<std::string>();
  sc.seed = c.at("seed").get<uint64_t>();
  if (c.contains("tick")) sc.tick_seconds = c.at("tick").get<double>();

  Trace trace = load_trace(kRoot + c.at("trace").get<std::string>());
  const double speedup = c.value("speedup", 1.0);
  if (speedup != 1.0) trace = compress_time(std::move(trace), speedup);
  if (c.contains("peak_load")) {
    trace = scale_to_peak(std::move(trace),
                          c.at("peak_load").get<double>() * sc.model.capacity(guards.max_workers));
  }

  std::vector<PolicySpec> specs;
  std::vector<std::string> order;
  for (const std::string& text : split_commas(c.at("policies").get<std::string>())) {
    order.push_back(text);
    if (text != "oracle" && text != "oracle-replay") specs.push_back(parse_policy_spec(text));
  }
  std::vector<RunResult> simulated = simulate_all(trace, specs, guards, sc, 2);
  const bool oracle_wanted = specs.size() != order.size();
  const OracleResult oracle = oracle_wanted ? solve_oracle(trace, sc, guards) : OracleResult{};
  std::vector<RunResult> runs;
  std::size_t next = 0;
  for (const std::string& text : order) {
    if (text == "oracle") {
      runs.push_back(oracle.run);
    } else if (text == "oracle-replay") {
      runs.push_back(replay_schedule(trace, oracle.workers, "oracle-replay", guards, sc));
    } else {
      runs.push_back(std::move(simulated[next++]));
    }
  }
  return to_json(runs, sc, TraceInfo::of(trace));
}

TEST(GoldenKpis, EveryCaseGivesTheSameJsonAsTheCommittedFile) {
  const nlohmann::json cases = read_json(kGolden + "cases.json");
  ASSERT_GE(cases.size(), 4u);
  for (const nlohmann::json& c : cases) {
    const std::string name = c.at("name").get<std::string>();
    SCOPED_TRACE(name);
    const nlohmann::json expected = read_json(kGolden + name + ".json");
    const nlohmann::json actual = replay_case(c);
    // The dumped text, not the parsed values: the files are compared byte for byte.
    EXPECT_EQ(actual.at("sim").dump(2), expected.at("sim").dump(2));
    ASSERT_EQ(actual.at("runs").size(), expected.at("runs").size());
    for (std::size_t i = 0; i < expected.at("runs").size(); ++i) {
      EXPECT_EQ(actual["runs"][i].dump(2), expected["runs"][i].dump(2))
          << "run " << i << " (" << expected["runs"][i].value("label", "") << ") of " << name
          << " differs from tests/sim/golden/" << name
          << ".json; if the change is meant to change results, run "
             "scripts/update-golden-kpis.sh and say why in the commit";
    }
  }
}

}  // namespace
}  // namespace lagpilot::sim
