// `make run`'s script (scripts/run-demo.sh) twice at once, with the preferred port already taken
// by someone else: each demo must find a free port of its own, name it on its first status line
// and keep its ledger in a private temporary directory, and both must finish without loss.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "cli_test_util.h"

namespace lagpilot {
namespace {

using testing::kBinary;
using testing::run_command;
using testing::shell_quote;
using testing::TakenPort;

// The first status line ("t=...") of a demo's output, or "".
std::string first_status_line(const std::string& output) {
  static const std::regex kStatus(R"((^|\n)(t=[^\n]*))");
  std::smatch m;
  return std::regex_search(output, m, kStatus) ? m[2].str() : "";
}

TEST(DemoScript, TwoDemosAtOnceTakeFreePortsAndPrivateLedgers) {
  const TakenPort taken;
  const testing::ScratchDir scratch("lagpilot-demo-test");
  const std::string tmp = scratch.path("tmp");
  std::filesystem::remove_all(tmp);
  std::filesystem::create_directories(tmp);
  const std::string command =
      "TMPDIR=" + shell_quote(tmp) + " LAGPILOT_DEMO_KEEP=1 LAGPILOT_DEMO_SECONDS=4" +
      " LAGPILOT_DEMO_PORT=" + std::to_string(taken.port()) + " timeout 120 " +
      shell_quote(std::string(LAGPILOT_SOURCE_DIR) + "/scripts/run-demo.sh") + " " +
      shell_quote(kBinary);
  testing::CommandResult a, b;
  std::thread other([&] { b = run_command(command); });
  a = run_command(command);
  other.join();

  std::set<int> ports;
  for (const auto* r : {&a, &b}) {
    ASSERT_EQ(r->exit_code, 0) << r->output;
    const std::string line = first_status_line(r->output);
    std::smatch m;
    static const std::regex kApi(R"(API and /metrics on http://127\.0\.0\.1:(\d+))");
    ASSERT_TRUE(std::regex_search(line, m, kApi)) << "first status line: " << line;
    const int port = std::stoi(m[1].str());
    EXPECT_NE(port, taken.port()) << line;
    ports.insert(port);
    EXPECT_NE(r->output.find("port " + std::to_string(taken.port()) + " is taken"),
              std::string::npos)
        << r->output;
  }
  EXPECT_EQ(ports.size(), 2u) << "both demos on one port";

  // One private directory per demo, each with its own non-empty ledger.
  int ledgers = 0;
  for (const auto& entry : std::filesystem::directory_iterator(tmp)) {
    ASSERT_EQ(entry.path().filename().string().rfind("lagpilot-demo.", 0), 0u) << entry.path();
    const auto ledger = entry.path() / "ledger.txt";
    ASSERT_TRUE(std::filesystem::exists(ledger)) << ledger;
    EXPECT_GT(std::filesystem::file_size(ledger), 0u) << ledger;
    ++ledgers;
  }
  EXPECT_EQ(ledgers, 2);
}

}  // namespace
}  // namespace lagpilot
