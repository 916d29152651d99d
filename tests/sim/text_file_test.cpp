#include "sim/text_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace lagpilot::sim {
namespace {

// The message of the exception write_text_file throws for `path` (empty if it does not throw).
std::string failure_message(const std::string& path) {
  try {
    write_text_file(path, "some text\n");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(WriteTextFile, WritesAndReplacesTheFile) {
  // The pid keeps two build trees' runs of this test apart.
  const auto path = std::filesystem::temp_directory_path() /
                    ("lagpilot-text-file-test-" + std::to_string(::getpid()) + ".txt");
  write_text_file(path.string(), "a longer first version\n");
  write_text_file(path.string(), "<p>ok</p>");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream content;
  content << in.rdbuf();
  EXPECT_EQ(content.str(), "<p>ok</p>");
  std::filesystem::remove(path);
}

TEST(WriteTextFile, AMissingDirectoryNamesThePathAndTheReason) {
  const std::string path = "/nonexistent-dir-lagpilot/report.html";
  const std::string message = failure_message(path);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
}

TEST(WriteTextFile, AnUnwritableProcFileNamesThePath) {
  const std::string path = "/proc/version";
  const std::string message = failure_message(path);
  EXPECT_NE(message.find(path + ": cannot "), std::string::npos) << message;
}

// /dev/full opens, takes the buffered text, and fails when it is flushed: the error that a
// plain std::ofstream never reports.
TEST(WriteTextFile, AFullDiskIsAnErrorEvenWhenOpenSucceeds) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const std::string message = failure_message("/dev/full");
  EXPECT_NE(message.find("/dev/full: cannot write"), std::string::npos) << message;
  EXPECT_NE(message.find("No space left on device"), std::string::npos) << message;
}

}  // namespace
}  // namespace lagpilot::sim
