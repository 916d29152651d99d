// The config fuzzer's kept inputs (fuzz/regressions/config_fuzzer: failures found and fixed;
// fuzz/corpus/config_fuzzer: seeds) replayed through the contract check of the parsers below
// the binary (fuzz/config_check.h: policy specs, policy params, "guards", "sim"), so the normal
// test suite and its ASan+UBSan run cover them. (The AppConfig part of the contract lives in
// the binary's sources and is checked by the fuzzer alone.)
#include <gtest/gtest.h>

#include <string>

#include "fuzz/config_check.h"
#include "fuzz/kept_inputs.h"

namespace lagpilot {
namespace {

TEST(ConfigFuzzRegressions, KeptInputsKeepTheContract) {
  const auto inputs = fuzz::kept_fuzz_inputs(LAGPILOT_SOURCE_DIR, "config_fuzzer");
  ASSERT_GE(inputs.size(), 10u) << "the seed corpus fuzz/corpus/config_fuzzer is missing";
  for (const auto& input : inputs) {
    std::string bad;
    EXPECT_NO_THROW(bad = fuzz::check_config_text(input.data)) << input.path;
    EXPECT_EQ(bad, "") << input.path;
  }
}

}  // namespace
}  // namespace lagpilot
