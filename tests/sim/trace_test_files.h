#pragma once
// Helpers shared by the trace reader's tests: a temporary directory to write trace files into,
// the error that loading one throws, and a tolerant comparison of rates.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/trace_reader.h"

namespace lagpilot::sim::testing {

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("lagpilot_trace_reader_" + std::to_string(::getpid()) + "_" + info->test_suite_name() +
            "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  // Writes `content` byte for byte and returns the file's path.
  std::string write(const std::string& name, const std::string& content) const {
    const std::filesystem::path path = dir_ / name;
    std::ofstream out(path, std::ios::binary);
    out << content;
    return path.string();
  }

 private:
  std::filesystem::path dir_;
};

// The what() of the TraceError that loading `path` throws ("" and a test failure if none).
inline std::string load_error(const std::string& path, const TraceLoadOptions& options = {}) {
  try {
    load_trace(path, options);
  } catch (const TraceError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no TraceError for " << path;
  return "";
}

// Element-wise comparison with a relative tolerance of a few rounding errors.
inline void expect_rates(const std::vector<double>& actual, const std::vector<double>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-12 * std::max(1.0, std::fabs(expected[i])))
        << "bin " << i;
  }
}

}  // namespace lagpilot::sim::testing
