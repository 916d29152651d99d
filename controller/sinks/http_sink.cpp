#include "controller/sinks/http_sink.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>
#include <unordered_map>

#include "policies/config_reader.h"

namespace lagpilot {
namespace {

bool is_token_char(unsigned char c) {
  return std::isalnum(c) ||
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

// A header httplib may send as is: a token name and a value without control characters (a CR
// or LF in a value would split the request).
bool sendable_header(std::string_view name, std::string_view value) {
  if (name.empty()) return false;
  for (unsigned char c : name) {
    if (!is_token_char(c)) return false;
  }
  for (unsigned char c : value) {
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

const char* delivery_result_name(DeliveryResult result) {
  switch (result) {
    case DeliveryResult::kDone:
      return "done";
    case DeliveryResult::kRetry:
      return "retry";
    case DeliveryResult::kPermanent:
      return "permanent";
  }
  return "?";
}

HttpSinkConfig HttpSinkConfig::from_json(const nlohmann::json& j, const std::string& path) {
  HttpSinkConfig c;
  JsonObjectReader r(j, path);
  r.raw("type");  // read by the caller, which chose this sink
  r.read("url", c.url);
  r.read("timeout_seconds", c.timeout_seconds, 0.001, 3600.0);
  r.read("ce_source", c.ce_source);
  r.read("ce_type", c.ce_type);
  if (const nlohmann::json* h = r.raw("headers")) {
    const std::string hpath = r.path_of("headers");
    if (!h->is_object()) throw ConfigError(hpath, "must be an object of header names to strings");
    for (const auto& [name, value] : h->items()) {
      if (!value.is_string()) throw ConfigError(hpath + "." + name, "must be a string");
      if (!sendable_header(name, value.get<std::string>())) {
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
}

namespace {
std::atomic<uint64_t> g_next_http_sink_id{1};  // atomic: sinks may be built on any thread
}  // namespace

HttpSink::HttpSink(HttpSinkConfig config) : config_(std::move(config)), id_(g_next_http_sink_id++) {
  const std::string& url = config_.url;
  const auto scheme_end = url.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "" : url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    throw ConfigError("handler.url", "must start with http:// or https://, got \"" + url + "\"");
  }
  const auto path_start = url.find('/', scheme_end + 3);
  scheme_host_port_ = url.substr(0, path_start);
  path_ = path_start == std::string::npos ? "/" : url.substr(path_start);
  if (scheme_host_port_.size() <= scheme_end + 3) {
    throw ConfigError("handler.url", "has no host: \"" + url + "\"");
  }
  new_client();  // fails early on a URL httplib cannot use (a bad port, say)
}

HttpSink::~HttpSink() = default;

std::unique_ptr<httplib::Client> HttpSink::new_client() const {
  auto c = std::make_unique<httplib::Client>(scheme_host_port_);
  if (!c->is_valid()) throw ConfigError("handler.url", "cannot be used: \"" + config_.url + "\"");
  const auto timeout = std::chrono::duration<double>(config_.timeout_seconds);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(timeout);
  c->set_connection_timeout(micros);
  c->set_read_timeout(micros);
  c->set_write_timeout(micros);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  return c;
}

httplib::Client& HttpSink::thread_client() {
  // Destroyed when the worker's thread ends, which closes its connection.
  thread_local std::unordered_map<uint64_t, std::unique_ptr<httplib::Client>> clients;
  std::unique_ptr<httplib::Client>& c = clients[id_];
  if (!c) c = new_client();
  return *c;
}

Delivery HttpSink::deliver(const SourceMessage& m) {
  httplib::Headers headers;
  headers.emplace("ce-specversion", "1.0");
  headers.emplace("ce-id",
                  m.topic + "/" + std::to_string(m.partition) + "/" + std::to_string(m.offset));
  headers.emplace("ce-source",
                  config_.ce_source.empty() ? "kafka://" + m.topic : config_.ce_source);
  headers.emplace("ce-type", config_.ce_type);
  if (m.timestamp_ms >= 0) headers.emplace("ce-time", rfc3339_utc(m.timestamp_ms));
  if (m.has_key && sendable_header("ce-partitionkey", m.key)) {
    headers.emplace("ce-partitionkey", m.key);
  }
  for (const auto& [name, value] : config_.headers) headers.emplace(name, value);
  // The record's headers as HTTP headers (those HTTP can carry: a token name, no control
  // characters in the value); its content-type, if it has one, is the body's.
  std::string content_type = "application/octet-stream";
  for (const auto& [name, value] : m.headers) {
    if (!sendable_header(name, value)) continue;
    if (iequals(name, "content-type")) {
      content_type = value;
    } else {
      headers.emplace(name, value);
    }
  }

  httplib::Client& client = thread_client();
  httplib::Result res = client.Post(path_, headers, m.value, content_type);
  if (!res) {
    // httplib closes a broken connection itself; the next attempt reconnects.
    return Delivery::retry(std::string("http: ") + httplib::to_string(res.error()));
  }
  const int status = res->status;
  if (status >= 200 && status < 300) return Delivery::done();
  const std::string what = "HTTP " + std::to_string(status);
  if (status == 429 || status == 503) {
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    const double after = res->has_header("Retry-After")
                             ? parse_retry_after(res->get_header_value("Retry-After"), now)
                             : -1;
    return Delivery::retry(what, after, true);
  }
  if (status >= 400 && status < 500) {
    std::string body = res->body.substr(0, 200);
    return Delivery::permanent(body.empty() ? what : what + ": " + body);
  }
  return Delivery::retry(what);
}

double parse_retry_after(std::string_view value, double now_unix_seconds) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  if (value.empty()) return -1;
  if (std::isdigit(static_cast<unsigned char>(value.front()))) {
    int64_t seconds = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (ec != std::errc() || end != value.data() + value.size() || seconds < 0) return -1;
    return static_cast<double>(seconds);
  }
  // IMF-fixdate, the form senders must use: "Sun, 06 Nov 1994 08:49:37 GMT".
  std::tm tm{};
  const std::string text(value);
  const char* end = ::strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return -1;
  const double at = static_cast<double>(::timegm(&tm));
  return std::max(0.0, at - now_unix_seconds);
}

std::string rfc3339_utc(int64_t unix_ms) {
  const std::time_t seconds =
      static_cast<std::time_t>(unix_ms >= 0 ? unix_ms / 1000 : (unix_ms - 999) / 1000);
  const int millis = static_cast<int>(unix_ms - static_cast<int64_t>(seconds) * 1000);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char buf[40];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%.*s.%03dZ", static_cast<int>(n), buf, millis);
  return out;
}

}  // namespace lagpilot
