#include "controller/api/bearer_token.h"

#include <cctype>
#include <fstream>
#include <stdexcept>

namespace lagpilot {

std::string read_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the API token file");
  std::string token;
  std::getline(in, token);
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!token.empty() && space(token.back())) token.pop_back();
  std::size_t start = 0;
  while (start < token.size() && space(token[start])) ++start;
  token.erase(0, start);
  if (token.empty())
    throw std::runtime_error(path + ": the first line of the API token file is empty");
  return token;
}

bool constant_time_equal(std::string_view given, std::string_view expected) {
  if (expected.empty()) return given.empty();
  // volatile: keep the compiler from turning the loop into an early-exit comparison.
  volatile unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i) {
    diff = diff | static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
  }
  return diff == 0;
}

}  // namespace lagpilot
