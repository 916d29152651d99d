#include "controller/loadgen/ledger.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace lagpilot {

Ledger::Ledger(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw std::runtime_error("ledger " + path + ": cannot open: " + std::strerror(errno));
  }
}

Ledger::~Ledger() {
  if (fd_ >= 0) ::close(fd_);
}

void Ledger::append(const std::string& topic, int32_t partition, int64_t offset, int64_t seq) {
  char buf[512];
  const int n = std::snprintf(buf, sizeof buf, "%s %d %lld %lld\n", topic.c_str(), partition,
                              static_cast<long long>(offset), static_cast<long long>(seq));
  if (n <= 0 || n >= static_cast<int>(sizeof buf)) {
    throw std::runtime_error("ledger " + path_ + ": topic name too long");
  }
  const char* p = buf;
  std::size_t left = static_cast<std::size_t>(n);
  while (left > 0) {
    const ssize_t w = ::write(fd_, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("ledger " + path_ + ": write failed: " + std::strerror(errno));
    }
    p += w;
    left -= static_cast<std::size_t>(w);
  }
}

std::vector<LedgerEntry> read_ledger(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("ledger " + path + ": cannot open");
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<LedgerEntry> out;
  std::size_t pos = 0;
  int line = 0;
  while (pos < content.size()) {
    const std::size_t end = content.find('\n', pos);
    if (end == std::string::npos) break;  // torn final line
    ++line;
    std::string_view row(content.data() + pos, end - pos);
    pos = end + 1;
    LedgerEntry e;
    const auto fail = [&] {
      throw std::runtime_error(path + ":" + std::to_string(line) + ": malformed ledger line");
    };
    const auto sp1 = row.find(' ');
    if (sp1 == std::string_view::npos) fail();
    e.topic = std::string(row.substr(0, sp1));
    const char* p = row.data() + sp1 + 1;
    const char* last = row.data() + row.size();
    auto r = std::from_chars(p, last, e.partition);
    if (r.ec != std::errc() || r.ptr == last || *r.ptr != ' ') fail();
    r = std::from_chars(r.ptr + 1, last, e.offset);
    if (r.ec != std::errc() || r.ptr == last || *r.ptr != ' ') fail();
    r = std::from_chars(r.ptr + 1, last, e.seq);
    if (r.ec != std::errc() || r.ptr != last) fail();
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace lagpilot
