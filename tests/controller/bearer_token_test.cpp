// One reading of API token files for `lagpilot run` and `lagpilot ctl`.
#include "controller/api/bearer_token.h"

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <string>

namespace lagpilot {
namespace {

std::string token_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(BearerToken, FirstLineTrimmedOfWhiteSpace) {
  EXPECT_EQ(read_token_file(token_file("plain", "s3cret\n")), "s3cret");
  EXPECT_EQ(read_token_file(token_file("crlf", "s3cret\r\nsecond line\n")), "s3cret");
  EXPECT_EQ(read_token_file(token_file("padded", " \ts3cret \t\r\n")), "s3cret");
  EXPECT_EQ(read_token_file(token_file("no-newline", "s3cret")), "s3cret");
}

TEST(BearerToken, EmptyOrMissingFilesAreErrorsNamingThePath) {
  const std::string empty = token_file("empty", "  \r\nlater\n");
  try {
    read_token_file(empty);
    FAIL() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), empty + ": the first line of the API token file is empty");
  }
  EXPECT_THROW(read_token_file(::testing::TempDir() + "/no-such-token-file"), std::runtime_error);
}

}  // namespace
}  // namespace lagpilot
