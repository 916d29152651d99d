#pragma once
// Checks on HTTP header text that the http sink's config reader and the sink itself share.
//
// Thread-safety: pure functions; any thread.

#include <algorithm>
#include <cctype>
#include <string_view>

namespace lagpilot::http_header {

inline bool is_token_char(unsigned char c) {
  return std::isalnum(c) ||
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

// A header httplib may send as is: a token name and a value without control characters (a CR
// or LF in a value would split the request).
inline bool sendable_header(std::string_view name, std::string_view value) {
  if (name.empty()) return false;
  for (unsigned char c : name) {
    if (!is_token_char(c)) return false;
  }
  for (unsigned char c : value) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

inline bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace lagpilot::http_header
