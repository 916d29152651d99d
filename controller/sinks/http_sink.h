#pragma once
// The `http` sink: POSTs each message to the user's service, in CloudEvents binary content mode
// (the value is the body; the event's attributes are ce-* headers):
//
//   POST <url path>
//   ce-specversion: 1.0
//   ce-id: <topic>/<partition>/<offset>        unique per record, stable across retries
//   ce-source: <handler.ce_source, default kafka://<topic>>
//   ce-type: <handler.ce_type, default dev.lagpilot.kafka.message>
//   ce-time: <record timestamp, RFC 3339 UTC>  (absent when the record has none)
//   ce-partitionkey: <Kafka key>               (absent for a null key)
//   content-type: <the record's content-type header, else application/octet-stream>
//   <handler.headers>, then each Kafka header as an HTTP header
//
// Responses: 2xx done; 429 and 503 retry with pushback, honouring Retry-After (seconds or an
// HTTP date); other 4xx permanent; 5xx, other codes, timeouts and connection errors retry.
//
// Batches (config "batch"; deliver_batch): one POST per batch in CloudEvents structured batch
// mode, content-type application/cloudevents-batch+json, the body a JSON array with one event
// per record: specversion, id, source, type, time and partitionkey as the ce-* headers above
// (partitionkey only for a UTF-8 key), datacontenttype (the record's content-type header, else
// application/octet-stream), and the value as "data" (parsed, for a JSON content type whose
// value parses; as a string, for a text/* type and a UTF-8 value) or else "data_base64". The
// record's other Kafka headers are not sent; handler.headers are. The response is read as
// above, for the whole batch.
//
// Connections are kept alive, one client per calling thread (each pool worker has its own, in
// thread-local storage, so that a delivery takes no lock), with TCP_NODELAY on: without it a
// keep-alive client waits on Nagle and delayed ACKs, about 26 ms a request. Each thread also
// keeps its request headers between deliveries and rewrites only the per-record values, so a
// delivery allocates little beyond what httplib itself does.
//
// https:// URLs use TLS (OpenSSL, through Debian's cpp-httplib): the server's certificate is
// verified against the system's CA store, or against `handler.ca_file` when it is set.
//
// Thread-safety: deliver() from any number of threads at once (the pool's workers), but not
// while the sink is being destroyed.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "controller/kafka/kafka_source.h"
#include "controller/sinks/delivery.h"

namespace httplib {
class Client;
class Result;
}  // namespace httplib

namespace lagpilot {

struct HttpSinkConfig {
  std::string url;                             // http[s]://host[:port][/path]
  double timeout_seconds = 10;                 // connect, write and read, each
  std::map<std::string, std::string> headers;  // added to every request
  std::string ce_source;                       // "" = kafka://<topic>
  std::string ce_type = "dev.lagpilot.kafka.message";
  std::string ca_file;  // PEM CA certificates for https; "" = the system's store

  // Reads {"url", "timeout_seconds", "headers", "ce_source", "ce_type", "ca_file"} of the
  // "handler" object (the caller reads "type"); throws ConfigError naming the JSON path.
  static HttpSinkConfig from_json(const nlohmann::json& j, const std::string& path);
  void write_keys(nlohmann::json& j) const;
};

class HttpSink {
 public:
  // Throws ConfigError("handler.url") for a URL it cannot use, ConfigError("handler.ca_file")
  // for a CA file it cannot read or that is set for a plain http:// URL.
  explicit HttpSink(HttpSinkConfig config);
  ~HttpSink();

  HttpSink(const HttpSink&) = delete;
  HttpSink& operator=(const HttpSink&) = delete;

  // One attempt. Never throws for what the server or the network does.
  Delivery deliver(const SourceMessage& message);
  // One attempt of a whole batch (one POST; see the header comment).
  Delivery deliver_batch(std::span<const SourceMessage> batch);

  const HttpSinkConfig& config() const { return config_; }

 private:
  struct ThreadState;   // one calling thread's client and reusable request headers
  struct ThreadStates;  // every thread's ThreadState, shared with the threads' own maps

  std::unique_ptr<httplib::Client> new_client() const;
  static Delivery classify_response(const httplib::Result& res);
  ThreadState& thread_state();

  HttpSinkConfig config_;
  std::string scheme_host_port_;  // "http://127.0.0.1:8080"
  std::string path_;              // "/events" ("/" when the URL has none)
  const uint64_t id_;             // tells this sink's thread-local states from other sinks'
  // Owned here, so that destroying the sink closes every thread's connection; a thread that
  // ends first releases its own state (and connection) from it.
  std::shared_ptr<ThreadStates> states_;
};

// Retry-After (RFC 9110): delay-seconds ("120") or an HTTP-date ("Wed, 21 Oct 2015 07:28:00
// GMT"), as seconds from `now_unix_seconds` (a date in the past is 0). -1 when unparseable.
double parse_retry_after(std::string_view value, double now_unix_seconds);

// The body of a batch POST: the JSON array of structured-mode CloudEvents (header comment).
std::string cloudevents_batch_body(std::span<const SourceMessage> batch,
                                   const HttpSinkConfig& config);

// RFC 3339 in UTC with milliseconds: "2024-05-01T12:34:56.789Z".
std::string rfc3339_utc(int64_t unix_ms);

}  // namespace lagpilot
