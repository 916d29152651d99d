#include "controller/api/pacing_client.h"

#include <httplib.h>

#include <chrono>

namespace lagpilot {

std::optional<HttpUrl> parse_http_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) return std::nullopt;
  const std::string rest = url.substr(kScheme.size());
  const std::size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  HttpUrl u;
  u.path = slash == std::string::npos ? "/" : rest.substr(slash);
  const std::size_t colon = authority.rfind(':');
  u.host = authority.substr(0, colon);
  if (colon != std::string::npos) {
    const std::string port = authority.substr(colon + 1);
    std::size_t used = 0;
    int p = -1;
    try {
      p = std::stoi(port, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != port.size() || p < 1 || p > 65535) return std::nullopt;
    u.port = p;
  }
  if (u.host.empty()) return std::nullopt;
  return u;
}

std::optional<nlohmann::json> get_json(const HttpUrl& url, double timeout_seconds,
                                       std::string* error) {
  httplib::Client client(url.host, url.port);
  const auto timeout = std::chrono::duration<double>(timeout_seconds);
  client.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  client.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  const httplib::Result result = client.Get(url.path);
  if (!result) {
    if (error) *error = httplib::to_string(result.error());
    return std::nullopt;
  }
  if (result->status != 200) {
    if (error) *error = "HTTP " + std::to_string(result->status);
    return std::nullopt;
  }
  nlohmann::json doc = nlohmann::json::parse(result->body, nullptr, false);
  if (doc.is_discarded()) {
    if (error) *error = "the body is not JSON";
    return std::nullopt;
  }
  return doc;
}

}  // namespace lagpilot
