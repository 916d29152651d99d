#pragma once
// What the integration tests that run the lagpilot binary share besides child processes
// (child_process.h): where the binary and the bundled traces are, a scratch directory per test
// file and process for the files a test writes, reading a file whole, and a free loopback port
// for a server the test starts. Test code: plain functions and an immutable object, any thread.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "child_process.h"

namespace lagpilot::testing {

// The lagpilot binary under test (tests/CMakeLists.txt sets LAGPILOT_BINARY).
inline const std::string kBinary = LAGPILOT_BINARY;
// The traces in the source tree, with a trailing slash.
inline const std::string kTraces = std::string(LAGPILOT_SOURCE_DIR) + "/traces/";

// The trace most CLI tests replay, as arguments: `flag` (--trace, --train) naming 55 days of
// 5-minute Twitter counts, compressed 300x (4.4 h, 1 s bins) and scaled to peak at 1.2 x the
// capacity at max workers.
inline std::string twitter_trace_args(const std::string& flag) {
  return flag + " " + shell_quote(kTraces + "nab_Twitter_volume_AAPL.csv") +
         " --speedup 300 --peak-load 1.2";
}

// The command line of `lagpilot sim` on that trace, then `args`.
inline std::string sim_command(const std::string& args) {
  return kBinary + " sim " + twitter_trace_args("--trace") + " " + args;
}

// The whole file, byte for byte; "" when it cannot be read.
inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The directory <system temp dir>/<prefix>-<pid>, made on first use and left behind for a look
// after a failure. Each test file names its own prefix, so that files of the same name written
// by different test files do not meet.
class ScratchDir {
 public:
  explicit ScratchDir(std::string prefix) : prefix_(std::move(prefix)) {}

  // The path of `name` in the directory (which exists after the call).
  std::string path(const std::string& name) const {
    const auto dir =
        std::filesystem::temp_directory_path() / (prefix_ + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return (dir / name).string();
  }

  // Writes `content` (byte for byte) to `name` in the directory; returns its path.
  std::string write(const std::string& name, const std::string& content) const {
    const std::string file = path(name);
    std::ofstream(file, std::ios::binary) << content;
    return file;
  }

 private:
  std::string prefix_;
};

// A listening loopback socket on a kernel-chosen port, held until destroyed. Throws
// std::runtime_error if the kernel gives none.
class TakenPort {
 public:
  TakenPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      if (fd_ >= 0) ::close(fd_);
      throw std::runtime_error("TakenPort: cannot listen on loopback");
    }
    port_ = ntohs(addr.sin_port);
  }
  ~TakenPort() { ::close(fd_); }
  TakenPort(const TakenPort&) = delete;
  TakenPort& operator=(const TakenPort&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A loopback TCP port nobody listens on now. It is released before its user binds it, so a
// process binding port 0 meanwhile may take it: where the child can report its own port, start
// it on port 0 instead (api_port_of_first_status_line).
inline int free_loopback_port() {
  return TakenPort().port();
}

// The port of the API that `lagpilot run --listen HOST:0 --log-format json` bound, read from its
// first status line ("api": "http://HOST:PORT"); 0 if the line has none. A child started on
// port 0 cannot lose its port to another process between a probe and its bind, as a
// free_loopback_port() can.
inline int api_port_of_status(const nlohmann::json& status) {
  if (!status.is_object() || !status.contains("api") || !status["api"].is_string()) return 0;
  const std::string url = status["api"];
  const std::size_t colon = url.rfind(':');
  try {
    return colon == std::string::npos ? 0 : std::stoi(url.substr(colon + 1));
  } catch (const std::exception&) {
    return 0;
  }
}

inline int api_port_of_first_status_line(const std::string& line) {
  return api_port_of_status(nlohmann::json::parse(line, nullptr, false));
}

}  // namespace lagpilot::testing
