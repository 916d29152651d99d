#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "cli/commands.h"

namespace lagpilot::cli {

int exec_live_binary(char** argv) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    spdlog::error(
        "cannot find this executable (/proc/self/exe: {}), so not lagpilot-live beside it",
        ec.message());
    return 2;
  }
  const std::string live = (self.parent_path() / "lagpilot-live").string();
  ::execv(live.c_str(), argv);  // returns only on failure
  spdlog::error(
      "`{}` runs in {}, which could not be started: {} (install lagpilot and "
      "lagpilot-live in one directory)",
      argv[1], live, std::strerror(errno));
  return 2;
}

}  // namespace lagpilot::cli
