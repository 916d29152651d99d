// The two executables (cli/commands.h): `lagpilot` runs the simulator's commands without the live
// runtime's libraries and hands every live command to `lagpilot-live` beside it, with the same
// arguments, the same exit code and the same process.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_test_util.h"

namespace lagpilot {
namespace {

using lagpilot::testing::kBinary;
using lagpilot::testing::run_command;
using lagpilot::testing::ScratchDir;
using lagpilot::testing::shell_quote;

const ScratchDir kDir("lagpilot-live-binary-cli");

TEST(LiveBinary, LagpilotNeedsNoneOfTheLiveRuntimesLibraries) {
  const auto r = run_command("readelf -d " + shell_quote(kBinary));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_NE(r.output.find("(NEEDED)"), std::string::npos) << r.output;  // a dynamic executable
  ASSERT_NE(r.output.find("libstdc++"), std::string::npos) << r.output;
  for (const char* library : {"librdkafka", "libcpp-httplib", "libprometheus", "libssl",
                              "libcrypto", "libsasl2", "libzstd"}) {
    EXPECT_EQ(r.output.find(library), std::string::npos) << library << " in\n" << r.output;
  }
}

TEST(LiveBinary, LiveCommandsRunInLagpilotLiveWithTheirOwnOptionsAndExitCodes) {
  // `run --help` lists run's options, which only lagpilot-live registers.
  const auto help = run_command(shell_quote(kBinary) + " run --help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_NE(help.output.find("--print-config"), std::string::npos) << help.output;
  // A bad flag of a live command: lagpilot-live's parse error and exit code 2.
  const auto bad = run_command(shell_quote(kBinary) + " run --no-such-flag");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("no-such-flag"), std::string::npos) << bad.output;
  // The top-level help still lists every command, the live ones included.
  const auto top = run_command(shell_quote(kBinary) + " --help");
  EXPECT_EQ(top.exit_code, 0) << top.output;
  for (const char* command :
       {"sim", "run", "broker", "produce", "tune", "ctl", "calibrate", "advise"}) {
    EXPECT_NE(top.output.find(std::string("\n  ") + command + " "), std::string::npos)
        << command << " missing from\n"
        << top.output;
  }
}

TEST(LiveBinary, ALiveCommandWithoutLagpilotLiveBesideItSaysWhatIsMissing) {
  const std::filesystem::path alone = kDir.path("alone");
  std::filesystem::create_directories(alone);
  const std::filesystem::path copy = alone / "lagpilot";
  std::filesystem::copy_file(kBinary, copy, std::filesystem::copy_options::overwrite_existing);
  const auto r = run_command(shell_quote(copy.string()) + " broker");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find((alone / "lagpilot-live").string()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("No such file"), std::string::npos) << r.output;
  // The simulator's commands need nothing beside it.
  const auto sim = run_command(shell_quote(copy.string()) + " sim --help");
  EXPECT_EQ(sim.exit_code, 0) << sim.output;
}

}  // namespace
}  // namespace lagpilot
