#pragma once
// Writing a whole text file (a report, a config, a JSON dump) with every failure reported:
// std::ofstream on its own stays silent when the disk is full or the directory is missing, and
// a user then finds an empty or truncated file long after the command said it wrote it.
//
// Thread-safety: touches only the file it is given.

#include <string>
#include <string_view>

namespace lagpilot::sim {

// Writes `content` to `path`, replacing the file. Throws std::runtime_error naming the path,
// what failed (open, write, close) and the system's reason (strerror(errno)).
void write_text_file(const std::string& path, std::string_view content);

}  // namespace lagpilot::sim
