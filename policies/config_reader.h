#pragma once
// Typed, validated reading of JSON config objects.
//
// Every config struct in lagpilot is filled through a JsonObjectReader: it checks the type and
// range of each field and, at finish(), rejects keys nobody read. Errors are ConfigError and
// name the JSON path ("policy.params.kp: must be >= 0, got -1"). Not thread-safe; use on one
// thread while loading.

#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lagpilot {

// `text` with control characters shown as \xNN, so that a key or value holding a NUL or an
// escape sequence cannot cut short or garble an error message or a terminal.
std::string printable(std::string_view text);

class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string path, const std::string& what)
      : std::runtime_error(printable(path.empty() ? what : path + ": " + what)),
        path_(std::move(path)) {}
  // The JSON path of the offending field ("" for the document root).
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class JsonObjectReader {
 public:
  // Throws ConfigError if `object` is not a JSON object. `path` is where it sits in the document.
  JsonObjectReader(const nlohmann::json& object, std::string path);

  // Each read() leaves `out` untouched when the key is absent (the default stays).
  void read(const std::string& key, double& out,
            double min = -std::numeric_limits<double>::infinity(),
            double max = std::numeric_limits<double>::infinity());
  void read(const std::string& key, int& out, int min = std::numeric_limits<int>::min(),
            int max = std::numeric_limits<int>::max());
  void read(const std::string& key, int64_t& out, int64_t min = std::numeric_limits<int64_t>::min(),
            int64_t max = std::numeric_limits<int64_t>::max());
  void read(const std::string& key, bool& out);
  void read(const std::string& key, std::string& out);
  // A string that must be one of `allowed`.
  void read_enum(const std::string& key, std::string& out, const std::vector<std::string>& allowed);
  // Marks the key as known and returns its raw value, if present.
  const nlohmann::json* raw(const std::string& key);
  // A nested object; marks the key as read. Absent key: an empty object.
  JsonObjectReader child(const std::string& key);
  bool has(const std::string& key) const;
  // Path of a key inside this object, for error messages.
  std::string path_of(const std::string& key) const;
  // Throws ConfigError naming the first key that no read()/raw()/child() asked for.
  void finish() const;

 private:
  const nlohmann::json* find(const std::string& key);

  nlohmann::json object_;
  std::string path_;
  std::set<std::string> seen_;
};

}  // namespace lagpilot
