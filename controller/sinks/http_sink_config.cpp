// HttpSinkConfig's reading and writing, apart from the sink itself (see
// cmake/lagpilot_library.cmake, STANDALONE: the simulator-only commands read configs without
// linking cpp-httplib).
#include "controller/sinks/http_header_checks.h"
#include "controller/sinks/http_sink.h"
#include "policies/config_reader.h"

namespace lagpilot {

HttpSinkConfig HttpSinkConfig::from_json(const nlohmann::json& j, const std::string& path) {
  HttpSinkConfig c;
  JsonObjectReader r(j, path);
  r.raw("type");  // read by the caller, which chose this sink
  r.read("url", c.url);
  r.read("timeout_seconds", c.timeout_seconds, 0.001, 3600.0);
  r.read("ce_source", c.ce_source);
  r.read("ce_type", c.ce_type);
  r.read("ca_file", c.ca_file);
  if (const nlohmann::json* h = r.raw("headers")) {
    const std::string hpath = r.path_of("headers");
    if (!h->is_object()) throw ConfigError(hpath, "must be an object of header names to strings");
    for (const auto& [name, value] : h->items()) {
      if (!value.is_string()) throw ConfigError(hpath + "." + name, "must be a string");
      if (!http_header::sendable_header(name, value.get<std::string>())) {
        throw ConfigError(hpath + "." + name,
                          "is not a valid HTTP header (token name, no control characters)");
      }
      c.headers[name] = value.get<std::string>();
    }
  }
  r.finish();
  if (c.url.empty()) throw ConfigError(r.path_of("url"), "required for the http handler");
  return c;
}

void HttpSinkConfig::write_keys(nlohmann::json& j) const {
  j["url"] = url;
  j["timeout_seconds"] = timeout_seconds;
  j["headers"] = headers;
  j["ce_source"] = ce_source;
  j["ce_type"] = ce_type;
  if (!ca_file.empty()) j["ca_file"] = ca_file;
}

}  // namespace lagpilot
