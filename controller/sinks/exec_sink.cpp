#include "controller/sinks/exec_sink.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "policies/config_reader.h"

extern char** environ;

namespace lagpilot {
// Named, not anonymous: ExecSink::Child (external linkage) holds UniqueFd fields, which GCC
// warns about (-Wsubobject-linkage) when the file is compiled in a unity batch.
namespace exec_sink_detail {

// Owns a file descriptor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

}  // namespace exec_sink_detail

namespace {

using SteadyTime = std::chrono::steady_clock::time_point;
constexpr double kMaxRestartBackoffSeconds = ExecSinkConfig::kMaxRestartBackoffSeconds;

using exec_sink_detail::UniqueFd;

std::pair<UniqueFd, UniqueFd> socket_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
  }
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

std::pair<UniqueFd, UniqueFd> pipe_pair() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Milliseconds left until `deadline` (0 when past), for poll().
int millis_until(SteadyTime deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
}

}  // namespace

// One child process: stdin and stdout are a socket pair (so that writes can say MSG_NOSIGNAL
// and a dead child is an error, not a SIGPIPE), stderr a pipe read by a thread that logs it.
class ExecSink::Child {
 public:
  Child(const std::vector<std::string>& command, int id) : id_(id) {
    auto [in_parent, in_child] = socket_pair();
    auto [out_parent, out_child] = socket_pair();
    auto [err_read, err_write] = pipe_pair();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_child.get(), STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out_child.get(), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_write.get(), STDERR_FILENO);
    std::vector<char*> argv;
    for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int rc = ::posix_spawnp(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      throw std::runtime_error("cannot start \"" + command[0] + "\": " + std::strerror(rc));
    }
    in_ = std::move(in_parent);
    out_ = std::move(out_parent);
    err_ = std::move(err_read);
    stderr_thread_ = std::thread([this] { forward_stderr(); });
  }

  ~Child() {
    kill();
    stderr_stop_.store(true);
    if (stderr_thread_.joinable()) stderr_thread_.join();
  }

  // Sends one line and reads one line back within `timeout_seconds`. False, with `error`, when
  // the child is gone, stuck or writes a line too long to be a reply.
  bool exchange(const std::string& request, double timeout_seconds, std::string& reply,
                std::string& error) {
    const SteadyTime deadline = std::chrono::steady_clock::now() +
                                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(timeout_seconds));
    std::string line = request;
    line.push_back('\n');
    std::size_t sent = 0;
    while (sent < line.size()) {
      pollfd p{in_.get(), POLLOUT, 0};
      if (::poll(&p, 1, millis_until(deadline)) == 0) return fail(error, "timed out writing");
      const ssize_t n = ::send(in_.get(), line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return fail(error, exit_text("its stdin closed"));
      sent += static_cast<std::size_t>(n);
    }
    while (true) {
      const std::size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        reply = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return true;
      }
      if (buffer_.size() > kMaxReplyBytes) return fail(error, "reply line too long");
      pollfd p{out_.get(), POLLIN, 0};
      const int ready = ::poll(&p, 1, millis_until(deadline));
      if (ready == 0) {
        return fail(error, "no reply within " + std::to_string(timeout_seconds) + " s");
      }
      if (ready < 0 && errno == EINTR) continue;
      char chunk[4096];
      const ssize_t n = ::recv(out_.get(), chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return fail(error, exit_text("its stdout closed"));
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  // Kills the process (if still running) and reaps it. Idempotent.
  void kill() {
    if (pid_ <= 0) return;
    in_.reset();  // a well-behaved child exits on EOF; one that does not is killed
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

  int id() const { return id_; }

 private:
  static constexpr std::size_t kMaxReplyBytes = 1 << 20;

  bool fail(std::string& error, std::string what) {
    error = "exec child " + std::to_string(id_) + ": " + std::move(what);
    kill();
    return false;
  }

  // Why the conversation ended: the child's exit status once it has exited (waiting a little
  // for it, since its pipes close just before it is reapable), else `otherwise`.
  std::string exit_text(const std::string& otherwise) {
    for (int i = 0; i < 50 && pid_ > 0; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
        if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return otherwise;
  }

  void forward_stderr() {
    std::string pending;
    char chunk[4096];
    while (true) {
      pollfd p{err_.get(), POLLIN, 0};
      const int ready = ::poll(&p, 1, 100);
      if (ready == 0) {
        if (stderr_stop_.load()) break;
        continue;
      }
      if (ready < 0 && errno == EINTR) continue;
      const ssize_t n = ::read(err_.get(), chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      pending.append(chunk, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
        spdlog::warn("exec child {}: {}", id_, pending.substr(0, nl));
        pending.erase(0, nl + 1);
      }
    }
    if (!pending.empty()) spdlog::warn("exec child {}: {}", id_, pending);
  }

  const int id_;
  pid_t pid_ = -1;
  UniqueFd in_, out_, err_;
  std::string buffer_;                    // stdout read beyond the last reply
  std::atomic<bool> stderr_stop_{false};  // atomic: set by the destructor, read by the thread
  std::thread stderr_thread_;
};

// What one worker thread keeps for one sink: its child and the restart backoff.
struct ExecSink::ThreadSlot {
  std::shared_ptr<Child> child;
  int consecutive_failures = 0;
  SteadyTime restart_at{};
};

namespace {
std::atomic<uint64_t> g_next_sink_id{1};  // atomic: sinks may be built on any thread
}  // namespace

ExecSink::ExecSink(ExecSinkConfig config) : config_(std::move(config)), id_(g_next_sink_id++) {
  if (config_.command.empty())
    throw ConfigError("handler.command", "required for the exec handler");
}

ExecSink::~ExecSink() {
  std::lock_guard lock(children_mutex_);
  for (const auto& weak : children_) {
    if (auto child = weak.lock()) child->kill();
  }
}

ExecSink::ThreadSlot& ExecSink::slot() {
  // Destroyed when the worker's thread ends: that stops the worker's child.
  thread_local std::unordered_map<uint64_t, ThreadSlot> slots;
  return slots[id_];
}

int ExecSink::children_running() const {
  std::lock_guard lock(children_mutex_);
  return static_cast<int>(std::count_if(children_.begin(), children_.end(),
                                        [](const auto& w) { return !w.expired(); }));
}

Delivery ExecSink::deliver(const SourceMessage& message) {
  return deliver_line(exec_request_line(message));
}

Delivery ExecSink::deliver_batch(std::span<const SourceMessage> batch) {
  return deliver_line(exec_batch_line(batch));
}

Delivery ExecSink::deliver_line(const std::string& line) {
  ThreadSlot& s = slot();
  const auto after_failure = [&](std::string error) {
    s.child.reset();
    ++s.consecutive_failures;
    const double backoff = std::min(kMaxRestartBackoffSeconds,
                                    config_.restart_backoff_seconds *
                                        std::ldexp(1.0, std::min(s.consecutive_failures - 1, 20)));
    s.restart_at = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(backoff));
    return Delivery::retry(std::move(error));
  };
  if (!s.child) {
    std::this_thread::sleep_until(s.restart_at);  // the worker holds this message meanwhile
    try {
      const int child_id = next_child_id_++;
      s.child = std::make_shared<Child>(config_.command, child_id);
      if (s.consecutive_failures > 0) ++restarts_;  // the thread's previous child failed
      std::lock_guard lock(children_mutex_);
      std::erase_if(children_, [](const auto& w) { return w.expired(); });
      children_.push_back(s.child);
    } catch (const std::exception& e) {
      spdlog::error("exec sink: {}", e.what());
      return after_failure(e.what());
    }
  }
  std::string reply, error;
  if (!s.child->exchange(line, config_.timeout_seconds, reply, error)) {
    spdlog::warn("{}; restarting it", error);
    return after_failure(error);
  }
  nlohmann::json j = nlohmann::json::parse(reply, nullptr, false);
  if (!j.is_object() || !j.contains("ok") || !j["ok"].is_boolean()) {
    const std::string what =
        "exec child " + std::to_string(s.child->id()) + ": not a reply: " + reply.substr(0, 200);
    spdlog::warn("{}; restarting it", what);
    return after_failure(what);
  }
  s.consecutive_failures = 0;
  if (j["ok"].get<bool>()) return Delivery::done();
  const std::string why =
      j.contains("error") && j["error"].is_string() ? j["error"].get<std::string>() : "not ok";
  const bool retry = !j.contains("retry") || !j["retry"].is_boolean() || j["retry"].get<bool>();
  return retry ? Delivery::retry(why, -1, true) : Delivery::permanent(why);
}

namespace {

nlohmann::json exec_request_json(const SourceMessage& m) {
  nlohmann::json j = {{"topic", m.topic},
                      {"partition", m.partition},
                      {"offset", m.offset},
                      {"timestamp", m.timestamp_ms}};
  if (!m.has_key) {
    j["key"] = nullptr;
  } else if (is_valid_utf8(m.key)) {
    j["key"] = m.key;
  } else {
    j["key"] = base64_encode(m.key);
    j["key_encoding"] = "base64";
  }
  if (is_valid_utf8(m.value)) {
    j["value"] = m.value;
  } else {
    j["value"] = base64_encode(m.value);
    j["value_encoding"] = "base64";
  }
  nlohmann::json headers = nlohmann::json::array();
  for (const auto& [name, value] : m.headers) headers.push_back({name, value});
  j["headers"] = std::move(headers);
  return j;
}

}  // namespace

std::string exec_request_line(const SourceMessage& m) {
  return exec_request_json(m).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string exec_batch_line(std::span<const SourceMessage> batch) {
  nlohmann::json lines = nlohmann::json::array();
  for (const SourceMessage& m : batch) lines.push_back(exec_request_json(m));
  return lines.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool is_valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int extra = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= s.size()) return false;  // truncated sequence
    for (int k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += static_cast<std::size_t>(extra) + 1;
  }
  return true;
}

std::string base64_encode(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v =
        (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) | uint8_t(in[i + 2]);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace lagpilot
