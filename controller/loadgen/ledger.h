#pragma once
// An append-only record of every processed message, one line per message:
//   <topic> <partition> <offset> <seq>
// written with one write(2) per line to an O_APPEND file descriptor *before* the message's
// offset is marked complete, so a crash (even SIGKILL) never loses a line for a committed
// offset. Loss and duplicate checks read it back with read_ledger().
//
// Thread-safety: append() may be called from any thread (the kernel serialises O_APPEND
// writes of one line; no lock is taken).

#include <cstdint>
#include <string>
#include <vector>

namespace lagpilot {

struct LedgerEntry {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  int64_t seq = -1;  // -1 when the value carried no sequence number
};

class Ledger {
 public:
  explicit Ledger(const std::string& path);  // throws std::runtime_error naming the path
  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  void append(const std::string& topic, int32_t partition, int64_t offset, int64_t seq);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Reads a ledger file; throws std::runtime_error with "path:line: ..." on a malformed line.
// A final line without newline (torn by a crash) is ignored.
std::vector<LedgerEntry> read_ledger(const std::string& path);

}  // namespace lagpilot
