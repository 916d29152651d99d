#include "sim/text_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace lagpilot::sim {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int error) {
  throw std::runtime_error(path + ": cannot " + what + ": " + std::strerror(error));
}

}  // namespace

// stdio rather than std::ofstream: fwrite and fclose report errno, and fclose's result says
// whether the buffered tail reached the file.
void write_text_file(const std::string& path, std::string_view content) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) fail(path, "open for writing", errno);
  errno = 0;
  const std::size_t written = std::fwrite(content.data(), 1, content.size(), file);
  const int write_error = errno != 0 ? errno : EIO;
  if (written != content.size()) {
    std::fclose(file);
    fail(path, "write", write_error);
  }
  errno = 0;
  if (std::fclose(file) != 0) fail(path, "write (close)", errno != 0 ? errno : EIO);
}

}  // namespace lagpilot::sim
