#pragma once
// Bearer tokens of the control API: how `lagpilot run` (the server) and `lagpilot ctl` (the
// client) read a token file, and how the server compares a presented token.
//
// Thread-safety: plain functions; any thread.

#include <string>
#include <string_view>

namespace lagpilot {

// The token in a token file: its first line, with leading and trailing white space (spaces,
// tabs, CR) removed, so that files written by `echo`, editors and Kubernetes secrets all work.
// Throws std::runtime_error "<path>: cannot read the API token file" or "<path>: the first line
// of the API token file is empty".
std::string read_token_file(const std::string& path);

// Constant-time comparison (time depends only on the length of `given`).
bool constant_time_equal(std::string_view given, std::string_view expected);

}  // namespace lagpilot
