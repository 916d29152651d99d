#pragma once
// A test that needs an external tool (kcat, prometheus, promtool, chromium) skips when the
// tool is missing on a developer's machine, but fails under CI=true: there a skip would look
// like a pass of something that was never checked.
//
//   if (!have_kcat()) LAGPILOT_SKIP_UNLESS_CI("kcat not installed (scripts/install-deps.sh)");
//
// Like GTEST_SKIP / GTEST_FAIL it returns from the current function (a test body or SetUp()).

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace lagpilot::testing {

inline bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::strcmp(ci, "true") == 0 || std::strcmp(ci, "1") == 0);
}

}  // namespace lagpilot::testing

#define LAGPILOT_SKIP_UNLESS_CI(message)                                      \
  do {                                                                        \
    if (::lagpilot::testing::in_ci()) {                                       \
      GTEST_FAIL() << message << " [CI=true: a missing tool fails the test]"; \
    } else {                                                                  \
      GTEST_SKIP() << message;                                                \
    }                                                                         \
  } while (false)
