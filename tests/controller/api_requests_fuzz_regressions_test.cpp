// The API body fuzzer's kept inputs (fuzz/regressions/api_body_fuzzer: failures found and
// fixed; fuzz/corpus/api_body_fuzzer: seeds) replayed through the same contract check
// (fuzz/api_body_check.h), so the normal test suite and its ASan+UBSan run cover them.
#include <gtest/gtest.h>

#include <string>

#include "fuzz/api_body_check.h"
#include "fuzz/kept_inputs.h"

namespace lagpilot {
namespace {

TEST(ApiRequestsFuzzRegressions, KeptInputsKeepTheContract) {
  const auto inputs = fuzz::kept_fuzz_inputs(LAGPILOT_SOURCE_DIR, "api_body_fuzzer");
  ASSERT_GE(inputs.size(), 10u) << "the seed corpus fuzz/corpus/api_body_fuzzer is missing";
  const GuardConfig guards;
  for (const auto& input : inputs) {
    std::string bad;
    EXPECT_NO_THROW(bad = fuzz::check_api_body(input.data, guards)) << input.path;
    EXPECT_EQ(bad, "") << input.path;
  }
}

// The contract check itself must be able to fail: a forged success outside the limits and an
// error the server could not send are both reported.
TEST(ApiRequestsFuzzRegressions, CheckReportsBrokenErrors) {
  EXPECT_NE(fuzz::check_api_error({500, "internal", "boom", ""}, "p"), "");
  EXPECT_NE(fuzz::check_api_error({400, "", "no code", ""}, "p"), "");
  EXPECT_NE(fuzz::check_api_error({422, "invalid_field", "", "x"}, "p"), "");
  EXPECT_EQ(fuzz::check_api_error({422, "invalid_field", "x: bad \xff", "x"}, "p"), "");
}

}  // namespace
}  // namespace lagpilot
