#pragma once
// Where a command's --json, --csv, --html and --write-config outputs go: a file, or standard
// output when the path is "-".

#include <string>

namespace lagpilot::cli {

// Writes `content` to standard output when `path` is "-", else to the file `path` (replaced).
// Throws std::runtime_error naming the path when the file cannot be written.
void write_output(const std::string& path, const std::string& content);

}  // namespace lagpilot::cli
