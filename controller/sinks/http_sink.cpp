#include "controller/sinks/http_sink.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "controller/sinks/exec_sink.h"
#include "controller/sinks/http_header_checks.h"
#include "policies/config_reader.h"

namespace lagpilot {

using http_header::iequals;
using http_header::sendable_header;

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

namespace {
std::atomic<uint64_t> g_next_http_sink_id{1};  // atomic: sinks may be built on any thread
}  // namespace

// The headers of the last request stay in the multimap; a delivery rewrites the values that
// change per record in place (their strings keep their capacity) and adds and removes only the
// record's own Kafka headers. Multimap iterators stay valid across inserts and erases of
// other entries.
struct HttpSink::ThreadState {
  std::unique_ptr<httplib::Client> client;
  httplib::Headers headers;
  httplib::Headers::iterator ce_id, ce_source, ce_time, ce_partitionkey;
  bool has_time = false, has_partitionkey = false;
  std::string source_topic;                        // the topic ce_source was built for
  int64_t time_second = INT64_MIN;                 // the second ce_time's prefix shows
  std::vector<httplib::Headers::iterator> record;  // this record's Kafka headers
};

struct HttpSink::ThreadStates {
  std::mutex mu;  // guards states
  std::vector<std::unique_ptr<ThreadState>> states;

  void release(const ThreadState* state) {
    std::lock_guard lock(mu);
    std::erase_if(states, [&](const auto& s) { return s.get() == state; });
  }
};

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
  if (!config_.ca_file.empty()) {
    if (scheme != "https") {
      throw ConfigError("handler.ca_file", "is set, but handler.url is not https://");
    }
    if (std::FILE* f = std::fopen(config_.ca_file.c_str(), "r")) {
      std::fclose(f);
    } else {
      throw ConfigError("handler.ca_file", "cannot read \"" + config_.ca_file + "\"");
    }
  }
  new_client();  // fails early on a URL httplib cannot use (a bad port, say)
  states_ = std::make_shared<ThreadStates>();
}

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
  if (!config_.ca_file.empty()) c->set_ca_cert_path(config_.ca_file);
  return c;
}

HttpSink::~HttpSink() = default;

HttpSink::ThreadState& HttpSink::thread_state() {
  // A thread's view: this sink's state by sink id. When the thread ends, it hands back the
  // states of the sinks that are still alive, which closes their connections.
  struct ThreadView {
    struct Entry {
      std::weak_ptr<ThreadStates> owner;
      ThreadState* state = nullptr;
    };
    std::unordered_map<uint64_t, Entry> by_sink;
    ~ThreadView() {
      for (auto& [id, e] : by_sink) {
        if (auto owner = e.owner.lock()) owner->release(e.state);
      }
    }
  };
  thread_local ThreadView view;
  ThreadView::Entry& e = view.by_sink[id_];
  if (e.state == nullptr) {
    std::erase_if(view.by_sink, [](const auto& kv) { return kv.second.owner.expired(); });
    auto state = std::make_unique<ThreadState>();
    state->client = new_client();
    state->headers.emplace("ce-specversion", "1.0");
    state->headers.emplace("ce-type", config_.ce_type);
    for (const auto& [name, value] : config_.headers) state->headers.emplace(name, value);
    state->ce_id = state->headers.emplace("ce-id", "");
    state->ce_source = state->headers.emplace("ce-source", config_.ce_source);
    ThreadView::Entry& fresh = view.by_sink[id_];  // the erase above may have moved it
    fresh = {states_, state.get()};
    std::lock_guard lock(states_->mu);
    states_->states.push_back(std::move(state));
    return *fresh.state;
  }
  return *e.state;
}

namespace {

void append_number(std::string& out, int64_t n) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, n);
  out.append(buf, end);
}

// Sets an optional header's value, adding or removing the entry as `present` says.
void set_optional(httplib::Headers& headers, httplib::Headers::iterator& it, bool& has,
                  const char* name, bool present) {
  if (present && !has) it = headers.emplace(name, "");
  if (!present && has) headers.erase(it);
  has = present;
}

}  // namespace

Delivery HttpSink::deliver(const SourceMessage& m) {
  ThreadState& s = thread_state();
  std::string& id = s.ce_id->second;
  id.assign(m.topic).push_back('/');
  append_number(id, m.partition);
  id.push_back('/');
  append_number(id, m.offset);
  if (config_.ce_source.empty() && s.source_topic != m.topic) {
    s.source_topic = m.topic;
    s.ce_source->second.assign("kafka://").append(m.topic);
  }
  set_optional(s.headers, s.ce_time, s.has_time, "ce-time", m.timestamp_ms >= 0);
  if (s.has_time) {
    // The date and time of day change once a second; only the milliseconds change per record.
    const int64_t second = m.timestamp_ms / 1000;
    std::string& time = s.ce_time->second;
    if (second != s.time_second || time.size() < 5) {
      time = rfc3339_utc(m.timestamp_ms);
      s.time_second = second;
    } else {
      const int millis = static_cast<int>(m.timestamp_ms % 1000);
      char* ms = time.data() + time.size() - 4;  // "...:56.789Z"
      ms[0] = static_cast<char>('0' + millis / 100);
      ms[1] = static_cast<char>('0' + millis / 10 % 10);
      ms[2] = static_cast<char>('0' + millis % 10);
    }
  }
  set_optional(s.headers, s.ce_partitionkey, s.has_partitionkey, "ce-partitionkey",
               m.has_key && sendable_header("ce-partitionkey", m.key));
  if (s.has_partitionkey) s.ce_partitionkey->second.assign(m.key);
  // The record's headers as HTTP headers (those HTTP can carry: a token name, no control
  // characters in the value); its content-type, if it has one, is the body's.
  static const std::string kOctetStream = "application/octet-stream";
  const std::string* content_type = &kOctetStream;
  for (const auto& [name, value] : m.headers) {
    if (!sendable_header(name, value)) continue;
    if (iequals(name, "content-type")) {
      content_type = &value;
    } else {
      s.record.push_back(s.headers.emplace(name, value));
    }
  }

  httplib::Result res = s.client->Post(path_, s.headers, m.value, *content_type);
  for (const auto& it : s.record) s.headers.erase(it);
  s.record.clear();
  return classify_response(res);
}

Delivery HttpSink::deliver_batch(std::span<const SourceMessage> batch) {
  ThreadState& s = thread_state();
  httplib::Headers headers;
  for (const auto& [name, value] : config_.headers) headers.emplace(name, value);
  const std::string body = cloudevents_batch_body(batch, config_);
  return classify_response(
      s.client->Post(path_, headers, body, "application/cloudevents-batch+json"));
}

namespace {

bool is_json_type(std::string_view content_type) {
  const std::string_view base = content_type.substr(0, content_type.find(';'));
  return iequals(base, "application/json") ||
         (base.size() > 5 && iequals(base.substr(base.size() - 5), "+json"));
}

bool is_text_type(std::string_view content_type) {
  return content_type.size() >= 5 && iequals(content_type.substr(0, 5), "text/");
}

}  // namespace

std::string cloudevents_batch_body(std::span<const SourceMessage> batch,
                                   const HttpSinkConfig& config) {
  nlohmann::json events = nlohmann::json::array();
  for (const SourceMessage& m : batch) {
    std::string content_type = "application/octet-stream";
    for (const auto& [name, value] : m.headers) {
      if (iequals(name, "content-type")) {
        content_type = value;
        break;
      }
    }
    nlohmann::json e = {
        {"specversion", "1.0"},
        {"id", m.topic + "/" + std::to_string(m.partition) + "/" + std::to_string(m.offset)},
        {"source", config.ce_source.empty() ? "kafka://" + m.topic : config.ce_source},
        {"type", config.ce_type},
        {"datacontenttype", content_type}};
    if (m.timestamp_ms >= 0) e["time"] = rfc3339_utc(m.timestamp_ms);
    if (m.has_key && is_valid_utf8(m.key)) e["partitionkey"] = m.key;
    nlohmann::json data = is_json_type(content_type)
                              ? nlohmann::json::parse(m.value, nullptr, false)
                              : nlohmann::json(nlohmann::json::value_t::discarded);
    if (!data.is_discarded()) {
      e["data"] = std::move(data);
    } else if (is_text_type(content_type) && is_valid_utf8(m.value)) {
      e["data"] = m.value;
    } else {
      e["data_base64"] = base64_encode(m.value);
    }
    events.push_back(std::move(e));
  }
  return events.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Delivery HttpSink::classify_response(const httplib::Result& res) {
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
