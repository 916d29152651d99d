#pragma once
// The client side of GET /v1/pacing (`lagpilot produce --pacing-url`): an http:// URL and a
// blocking GET of a JSON document. httplib.h stays in the .cpp (see http_api.h).
//
// Thread-safety: plain functions; any thread (each call makes its own connection).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace lagpilot {

struct HttpUrl {
  std::string host;
  int port = 80;
  std::string path = "/";
};

// "http://127.0.0.1:9464/v1/pacing" -> {host, port, path}; nullopt for anything else (https,
// no host, a bad port).
std::optional<HttpUrl> parse_http_url(const std::string& url);

// GET url; the body parsed as JSON when the status is 200. Else nullopt, with why in *error.
std::optional<nlohmann::json> get_json(const HttpUrl& url, double timeout_seconds,
                                       std::string* error);

}  // namespace lagpilot
