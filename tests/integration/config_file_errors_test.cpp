// `lagpilot run --config FILE --print-config` on broken config files: the error names the file
// and, for JSON that cannot be read, the line and column. Covers read_json_file (cli/), which
// the GoogleTest suites cannot link; config_fuzzer exercises it too (fuzz/, docs/fuzzing.md).
#include <gtest/gtest.h>

#include <string>

#include "cli_test_util.h"

namespace lagpilot {
namespace {

using testing::run_command;
using testing::shell_quote;

const testing::ScratchDir kConfigFileErrorsScratch("lagpilot-config-errors");

testing::CommandResult print_config(const std::string& path) {
  return run_command(testing::kBinary + " run --config " + shell_quote(path) + " --print-config");
}

TEST(ConfigFileErrors, ValidConfigPrints) {
  const auto r =
      print_config(kConfigFileErrorsScratch.write("ok.json", R"({"policy": {"name": "static"}})"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"static\""), std::string::npos) << r.output;
}

TEST(ConfigFileErrors, SyntaxErrorNamesLineAndColumn) {
  const std::string path =
      kConfigFileErrorsScratch.write("syntax.json", "{\n  \"guards\": {\"min_workers\": }\n}\n");
  const auto r = print_config(path);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(path + ":2:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("invalid JSON"), std::string::npos) << r.output;
}

// Found by fuzzing: a number beyond double is nlohmann's out_of_range, not a parse_error, and
// was reported without the file's position.
TEST(ConfigFileErrors, NumberOverflowNamesLineAndColumn) {
  const std::string path = kConfigFileErrorsScratch.write(
      "overflow.json", "{\n  \"guards\": {\"max_workers\": 1e999}\n}\n");
  const auto r = print_config(path);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(path + ":2:29: invalid JSON: number overflow parsing '1e999'"),
            std::string::npos)
      << r.output;
}

TEST(ConfigFileErrors, BadFieldNamesThePath) {
  const std::string path =
      kConfigFileErrorsScratch.write("field.json", R"({"guards": {"min_workers": -3}})");
  const auto r = print_config(path);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(path + ": guards.min_workers"), std::string::npos) << r.output;
}

TEST(ConfigFileErrors, CatchUpSecondsIsReadAndChecked) {
  const auto ok =
      print_config(kConfigFileErrorsScratch.write("catch_up.json", R"({"catch_up_seconds": 300})"));
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("\"catch_up_seconds\": 300.0"), std::string::npos) << ok.output;
  const std::string path =
      kConfigFileErrorsScratch.write("catch_up_bad.json", R"({"catch_up_seconds": 0})");
  const auto bad = print_config(path);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find(path + ": catch_up_seconds"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace lagpilot
