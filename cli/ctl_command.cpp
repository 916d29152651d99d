// `lagpilot ctl`: a client for the control API of a running `lagpilot run` (controller/http_api.h).
//
//   lagpilot ctl status | decisions [--limit N] | override N [--ttl 10m] [--reason TEXT] | clear
//              | bounds MIN MAX | policy FILE | pause [--reason TEXT] | resume [--reason TEXT]
//              [--url U] [--token-file F] [--json] [--timeout S]
//
// Human-readable output by default; --json prints the server's JSON answer as is. Exit codes:
// 0 success; 1 the server could not be reached or refused (non-2xx: its error message, and the
// field at fault, go to stderr); 2 bad input here (command line, duration, URL, token or policy
// file), named with the flag or file:line:column.
//
// httplib.h includes <resolv.h>, whose macro `_res` breaks any Eigen header parsed after it: so
// httplib.h is included last (an Eigen header that a project header might bring in is then
// parsed before the macro exists).
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/config.h"
#include "cli/duration_flag.h"
#include "controller/api/bearer_token.h"
#include "policies/config_reader.h"

// clang-format off: keep it last (see above).
#include <httplib.h>
// clang-format on

namespace lagpilot::cli {
namespace {

constexpr int kExitFailed = 1;  // unreachable server, or it refused the request
constexpr int kExitBadInput = 2;
constexpr const char* kDefaultUrl = "http://127.0.0.1:9464";
constexpr const char* kTokenEnv = "LAGPILOT_API_TOKEN";

// Bad input on our side: exit 2.
struct BadInput : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The server could not be reached, or answered with an error: exit 1.
struct RequestFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CtlOptions {
  std::string url = kDefaultUrl;
  std::string token_file;
  bool json = false;
  double timeout_seconds = 10;
  // Per command.
  int limit = 20;
  int workers = 0;
  std::string ttl;
  bool ttl_given = false;  // --ttl '' is an error, not "use the server's default"
  std::string reason;
  int min_workers = 0;
  int max_workers = 0;
  std::string policy_file;
};

// ---- Durations ------------------------------------------------------------------------------

// 3725 -> "1h02m05s", 245 -> "4m05s", 12.3 -> "13s" (rounded up: time left). The server sends
// expires_at - now, in which (now + 6) - now can come out as 6.000000000001: rounding ignores
// anything under a microsecond, so that is "6s", not "7s".
std::string format_duration(double seconds) {
  if (!std::isfinite(seconds)) return "?";
  if (seconds < 0) seconds = 0;
  const long long s = static_cast<long long>(std::ceil(seconds - 1e-6));
  char buf[64];
  if (s >= 86400) {
    std::snprintf(buf, sizeof buf, "%lldd%02lldh%02lldm", s / 86400, s % 86400 / 3600,
                  s % 3600 / 60);
  } else if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm%02llds", s / 3600, s % 3600 / 60, s % 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%llds", s);
  }
  return buf;
}

// ---- Talking to the server ------------------------------------------------------------------

struct Endpoint {
  std::string host;  // without IPv6 brackets
  int port = 80;
  std::string base_path;  // "" or "/prefix" (behind a reverse proxy), no trailing slash
};

// http://HOST[:PORT][/PATH]; the scheme may be left out. Throws BadInput naming --url.
Endpoint parse_url(const std::string& url) {
  const auto bad = [&](const std::string& why) {
    return BadInput("--url: \"" + url + "\": " + why + " (expected http://HOST:PORT)");
  };
  std::string rest = url;
  const auto scheme_end = rest.find("://");
  if (scheme_end != std::string::npos) {
    const std::string scheme = rest.substr(0, scheme_end);
    if (scheme == "https") {
      throw bad("https is not supported (the API serves plain HTTP on loopback by default)");
    }
    if (scheme != "http") throw bad("unknown scheme \"" + scheme + "\"");
    rest = rest.substr(scheme_end + 3);
  }
  Endpoint e;
  std::size_t pos = 0;
  if (!rest.empty() && rest[0] == '[') {
    const auto close = rest.find(']');
    if (close == std::string::npos) throw bad("unterminated IPv6 address");
    e.host = rest.substr(1, close - 1);
    pos = close + 1;
  } else {
    pos = rest.find_first_of(":/");
    if (pos == std::string::npos) pos = rest.size();
    e.host = rest.substr(0, pos);
  }
  if (e.host.empty()) throw bad("no host");
  if (pos < rest.size() && rest[pos] == ':') {
    const std::size_t start = ++pos;
    while (pos < rest.size() && std::isdigit(static_cast<unsigned char>(rest[pos]))) ++pos;
    const std::string digits = rest.substr(start, pos - start);
    if (digits.empty() || digits.size() > 5 || std::stoi(digits) < 1 || std::stoi(digits) > 65535) {
      throw bad("the port must be a number from 1 to 65535");
    }
    e.port = std::stoi(digits);
  }
  if (pos < rest.size() && rest[pos] != '/') throw bad("unexpected \"" + rest.substr(pos) + "\"");
  e.base_path = rest.substr(pos);
  while (!e.base_path.empty() && e.base_path.back() == '/') e.base_path.pop_back();
  if (e.base_path.find_first_of("?#") != std::string::npos) throw bad("no query or fragment");
  return e;
}

// The bearer token: first line of --token-file (trimmed), else $LAGPILOT_API_TOKEN, else "".
std::string load_token(const CtlOptions& o) {
  if (o.token_file.empty()) {
    const char* env = std::getenv(kTokenEnv);
    return env ? env : "";
  }
  try {
    return read_token_file(o.token_file);
  } catch (const std::runtime_error& e) {
    throw BadInput(std::string("--token-file: ") + e.what());
  }
}

struct Answer {
  int status = 0;
  std::string body;
  nlohmann::json json;  // discarded when the body is not JSON
};

// The server's {"error": {"code", "message", "field"}} as one line, or the raw status and body.
std::string describe_error(const Answer& a) {
  std::string text = "HTTP " + std::to_string(a.status);
  const nlohmann::json* error =
      a.json.is_object() && a.json.contains("error") && a.json["error"].is_object()
          ? &a.json["error"]
          : nullptr;
  if (error && error->contains("message") && (*error)["message"].is_string()) {
    if (error->contains("code") && (*error)["code"].is_string()) {
      text += " " + (*error)["code"].get<std::string>();
    }
    text += ": " + (*error)["message"].get<std::string>();
    if (error->contains("field") && (*error)["field"].is_string()) {
      text += " (field: " + (*error)["field"].get<std::string>() + ")";
    }
    return text;
  }
  std::string body = a.body.substr(0, 300);
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) body.pop_back();
  return body.empty() ? text : text + ": " + body;
}

class ApiClient {
 public:
  explicit ApiClient(const CtlOptions& o) : options_(o), endpoint_(parse_url(o.url)) {}

  // Sends one request; throws RequestFailed when the server cannot be reached or answers
  // outside 2xx (the message is the server's error). `mutation`: sends the bearer token.
  Answer send(const std::string& method, const std::string& path, const std::string& body = "",
              bool mutation = false) {
    std::string token;
    if (mutation) token = load_token(options_);
    httplib::Client client(endpoint_.host, endpoint_.port);
    const auto whole = [](double s, auto& sec, auto& usec) {
      sec = static_cast<time_t>(s);
      usec = static_cast<time_t>((s - static_cast<double>(sec)) * 1e6);
    };
    time_t sec = 0, usec = 0;
    whole(options_.timeout_seconds, sec, usec);
    client.set_connection_timeout(sec, usec);
    client.set_read_timeout(sec, usec);
    client.set_write_timeout(sec, usec);
    httplib::Request req;
    req.method = method;
    req.path = endpoint_.base_path + path;
    req.body = body;
    if (!body.empty()) req.set_header("Content-Type", "application/json");
    if (!token.empty()) req.set_header("Authorization", "Bearer " + token);
    req.set_header("Accept", "application/json");
    const httplib::Result result = client.send(req);
    const std::string what = method + " " + options_.url + path;
    if (!result) {
      throw RequestFailed(what + ": cannot reach the lagpilot API (" +
                          httplib::to_string(result.error()) +
                          " error); is `lagpilot run` listening there? (--url)");
    }
    Answer a;
    a.status = result->status;
    a.body = result->body;
    a.json = nlohmann::json::parse(a.body, nullptr, false);
    if (a.status < 200 || a.status > 299) {
      std::string message = what + ": " + describe_error(a);
      if ((a.status == 401 || a.status == 403) && mutation && token.empty()) {
        message += std::string("\n  no token was sent: pass --token-file or set $") + kTokenEnv;
      }
      throw RequestFailed(message);
    }
    return a;
  }

  // A successful answer whose body must be a JSON object (for the human-readable output).
  static const nlohmann::json& object(const Answer& a) {
    if (!a.json.is_object()) {
      throw RequestFailed("the server's answer is not a JSON object: " + a.body.substr(0, 200));
    }
    return a.json;
  }

 private:
  const CtlOptions& options_;
  Endpoint endpoint_;
};

// ---- Human-readable output ------------------------------------------------------------------

// A value inside a JSON document by keys; nullptr when any step is missing or not an object.
const nlohmann::json* lookup(const nlohmann::json& j, std::initializer_list<const char*> keys) {
  const nlohmann::json* at = &j;
  for (const char* k : keys) {
    if (!at->is_object()) return nullptr;
    const auto it = at->find(k);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

double number_or_nan(const nlohmann::json* v) {
  return v && v->is_number() ? v->get<double>() : std::nan("");
}

// A number with `digits` decimals, or "-" when it is missing (before the first tick).
std::string number(const nlohmann::json* v, int digits = 0) {
  const double x = number_or_nan(v);
  if (std::isnan(x)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

std::string text(const nlohmann::json* v) {
  if (!v || v->is_null()) return "-";
  return v->is_string() ? v->get<std::string>() : v->dump();
}

// Seconds as "12.3 ms" / "1.20 s".
std::string latency(const nlohmann::json* v) {
  const double x = number_or_nan(v);
  if (std::isnan(x)) return "-";
  char buf[64];
  if (x < 1) {
    std::snprintf(buf, sizeof buf, "%.1f ms", x * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s", x);
  }
  return buf;
}

// The reason of a decision and the notes of the guards that changed it.
std::string decision_reason(const nlohmann::json& d) {
  std::string reason = text(lookup(d, {"reason"}));
  const nlohmann::json* guards = lookup(d, {"guards"});
  if (guards && guards->is_array() && !guards->empty()) {
    std::string notes;
    for (const auto& g : *guards) notes += (notes.empty() ? "" : "; ") + text(&g);
    reason += " [guards: " + notes + "]";
  }
  return reason;
}

std::string partition_name(const nlohmann::json& p) {
  if (p.is_number()) return "p" + number(&p);
  const std::string topic = text(lookup(p, {"topic"}));
  return (topic == "-" ? "" : topic + "/") + number(lookup(p, {"partition"}));
}

void print_status(const nlohmann::json& s, const std::string& url) {
  std::ostream& out = std::cout;
  const auto row = [&out](const char* label, const std::string& value) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%-10s", label);
    out << buf << value << "\n";
  };
  out << "lagpilot at " << url << ": t=" << number(lookup(s, {"time"}), 1) << " s, "
      << number(lookup(s, {"ticks"})) << " ticks\n";
  row("workers", "current " + number(lookup(s, {"workers", "current"})) + ", desired " +
                     number(lookup(s, {"workers", "desired"})) + " (policy proposed " +
                     number(lookup(s, {"workers", "proposed"})) + "), busy " +
                     number(lookup(s, {"workers", "busy"}), 1) + ", bounds " +
                     number(lookup(s, {"workers", "min"})) + ".." +
                     number(lookup(s, {"workers", "max"})) + " (hard " +
                     number(lookup(s, {"workers", "hard_min"})) + ".." +
                     number(lookup(s, {"workers", "hard_max"})) + ")");
  const nlohmann::json* params = lookup(s, {"policy", "params"});
  row("policy",
      text(lookup(s, {"policy", "name"})) +
          (params && params->is_object() && !params->empty() ? " " + params->dump() : ""));
  const nlohmann::json* last = lookup(s, {"last_decision"});
  if (last && last->is_object()) {
    row("decision", "t=" + number(lookup(*last, {"time"}), 1) + " s, " +
                        text(lookup(*last, {"source"})) + ": " +
                        number(lookup(*last, {"previous_workers"})) + " -> " +
                        number(lookup(*last, {"workers"})) + ", " + decision_reason(*last));
  } else {
    row("decision", "none yet (no control tick)");
  }
  std::string lag = number(lookup(s, {"lag", "total"})) + " total";
  const nlohmann::json* parts = lookup(s, {"lag", "partitions"});
  if (parts && parts->is_array() && !parts->empty()) {
    constexpr std::size_t kMaxShown = 32;
    std::string list;
    std::size_t shown = 0;
    for (const auto& p : *parts) {
      if (shown++ == kMaxShown) {
        list += ", ... " + std::to_string(parts->size() - kMaxShown) + " more";
        break;
      }
      list += (list.empty() ? "" : ", ") + partition_name(p) + " " + number(lookup(p, {"lag"}));
    }
    lag += ": " + list;
  }
  row("lag", lag);
  const double slope = number_or_nan(lookup(s, {"rates", "lag_slope_messages_per_second"}));
  row("rates", "in " + number(lookup(s, {"rates", "arrival_messages_per_second"}), 1) +
                   "/s, done " + number(lookup(s, {"rates", "processed_messages_per_second"}), 1) +
                   "/s, lag slope " + (slope > 0 ? "+" : "") +
                   number(lookup(s, {"rates", "lag_slope_messages_per_second"}), 1) + "/s");
  row("latency", "p50 " + latency(lookup(s, {"latency_seconds", "p50"})) + ", p99 " +
                     latency(lookup(s, {"latency_seconds", "p99"})) + ", record age p99 " +
                     latency(lookup(s, {"latency_seconds", "record_age_p99"})));
  row("queue",
      number(lookup(s, {"queue", "depth"})) + " / " + number(lookup(s, {"queue", "capacity"})));
  const nlohmann::json* op = lookup(s, {"operator_paused"});
  std::string paused = op && op->is_boolean() && op->get<bool>() ? "yes, by an operator" : "no";
  const nlohmann::json* paused_parts = lookup(s, {"runtime", "paused_partitions"});
  if (paused_parts && paused_parts->is_array() && !paused_parts->empty()) {
    std::string list;
    for (const auto& p : *paused_parts) list += (list.empty() ? "" : ", ") + partition_name(p);
    paused += "; partitions paused: " + list;
  }
  row("paused", paused);
  const nlohmann::json* deliveries = lookup(s, {"runtime", "deliveries"});
  if (deliveries && deliveries->is_object()) {
    const auto n = [&](const char* key) { return number(lookup(*deliveries, {key})); };
    std::string line = "ok " + n("ok") + ", retried " + n("retry") + ", dead-lettered " +
                       n("dead_letter") + ", dropped " + n("dropped") + "; pushbacks " +
                       n("pushbacks") + "; in retry now " + n("in_retry");
    const double oldest = number_or_nan(lookup(*deliveries, {"oldest_retry_seconds"}));
    if (oldest > 0) line += " (oldest failing for " + format_duration(oldest) + ")";
    row("delivery", line);
  }
  const nlohmann::json* pin = lookup(s, {"override"});
  if (pin && pin->is_object()) {
    const std::string reason = text(lookup(*pin, {"reason"}));
    row("override", number(lookup(*pin, {"workers"})) + " workers, " +
                        format_duration(number_or_nan(lookup(*pin, {"expires_in_seconds"}))) +
                        " left" + (reason.empty() || reason == "-" ? "" : " (" + reason + ")"));
  } else {
    row("override", "none");
  }
}

void print_decisions(const nlohmann::json& answer) {
  const nlohmann::json* list = lookup(answer, {"decisions"});
  if (!list || !list->is_array()) throw RequestFailed("the answer has no \"decisions\" list");
  if (list->empty()) {
    std::cout << "no decisions yet\n";
    return;
  }
  std::printf("%10s  %-8s  %-10s  %8s  %-8s  %s\n", "TIME(s)", "SOURCE", "POLICY", "PROPOSED",
              "WORKERS", "REASON");
  for (const auto& d : *list) {
    const std::string source = text(lookup(d, {"source"}));
    const std::string from = number(lookup(d, {"previous_workers"}));
    const std::string to = number(lookup(d, {"workers"}));
    // Operator notes (source "api") change no size: their "proposed" is not a proposal.
    const std::string proposed = source == "api" ? "-" : number(lookup(d, {"policy_workers"}));
    const std::string size = from == to ? to : from + "->" + to;
    std::printf("%10s  %-8s  %-10s  %8s  %-8s  %s\n", number(lookup(d, {"time"}), 1).c_str(),
                source.c_str(), text(lookup(d, {"policy"})).c_str(), proposed.c_str(), size.c_str(),
                decision_reason(d).c_str());
  }
  std::fflush(stdout);
}

// ---- Commands -------------------------------------------------------------------------------

// The body of PUT /v1/policy from FILE: {"name", "params"} itself, or a config file's "policy"
// object. Sets `config_form` when it came from a config file.
nlohmann::json policy_body(const std::string& path, bool& config_form) {
  nlohmann::json root;
  try {
    root = read_json_file(path);  // syntax errors name path:line:column
  } catch (const std::exception& e) {
    throw BadInput(e.what());
  }
  const std::string expected =
      "expected {\"name\": ..., \"params\": {...}} or a config file with a \"policy\" object";
  if (!root.is_object()) throw BadInput(path + ": " + expected);
  config_form = root.contains("policy");
  const nlohmann::json body = config_form ? root["policy"] : root;
  if (!body.is_object()) throw BadInput(path + ": policy: must be a JSON object");
  if (!body.contains("name")) {
    throw BadInput(path + ": " + (config_form ? "policy.name" : "name") + ": missing; " + expected);
  }
  return body;
}

std::string json_body(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int run_ctl(const std::string& command, const CtlOptions& o) {
  ApiClient api(o);
  const auto print_raw = [](const Answer& a) {
    std::cout << a.body << (a.body.empty() || a.body.back() != '\n' ? "\n" : "") << std::flush;
  };
  if (command == "status") {
    const Answer a = api.send("GET", "/v1/status");
    if (o.json) {
      print_raw(a);
    } else {
      print_status(ApiClient::object(a), o.url);
    }
  } else if (command == "decisions") {
    const Answer a = api.send("GET", "/v1/decisions?limit=" + std::to_string(o.limit));
    if (o.json) {
      print_raw(a);
    } else {
      print_decisions(ApiClient::object(a));
    }
  } else if (command == "override") {
    nlohmann::json body = {{"workers", o.workers}};
    if (o.ttl_given) {
      try {
        body["ttl_seconds"] = parse_duration("--ttl", o.ttl);
      } catch (const ConfigError& e) {
        throw BadInput(e.what());
      }
    }
    if (!o.reason.empty()) body["reason"] = o.reason;
    const Answer a = api.send("PUT", "/v1/override", json_body(body), true);
    if (o.json) {
      print_raw(a);
    } else {
      const nlohmann::json& j = ApiClient::object(a);
      std::cout << "override: " << number(lookup(j, {"override", "workers"})) << " workers for "
                << format_duration(number_or_nan(lookup(j, {"override", "expires_in_seconds"})))
                << " (until t=" << number(lookup(j, {"override", "expires_at"}), 1)
                << " s), from the " << text(lookup(j, {"effective"})) << "\n";
    }
  } else if (command == "clear") {
    const Answer a = api.send("DELETE", "/v1/override", "", true);
    if (o.json) {
      print_raw(a);
    } else {
      const nlohmann::json* cleared = lookup(ApiClient::object(a), {"cleared"});
      std::cout << (cleared && cleared->is_boolean() && cleared->get<bool>()
                        ? "override cleared: the policy decides again from the next tick\n"
                        : "no override was active\n");
    }
  } else if (command == "bounds") {
    const nlohmann::json body = {{"min", o.min_workers}, {"max", o.max_workers}};
    const Answer a = api.send("PUT", "/v1/bounds", json_body(body), true);
    if (o.json) {
      print_raw(a);
    } else {
      const nlohmann::json& j = ApiClient::object(a);
      std::cout << "bounds: " << number(lookup(j, {"bounds", "min"})) << ".."
                << number(lookup(j, {"bounds", "max"})) << " workers (hard limits "
                << number(lookup(j, {"bounds", "hard_min"})) << ".."
                << number(lookup(j, {"bounds", "hard_max"})) << "), from the "
                << text(lookup(j, {"effective"})) << "\n";
    }
  } else if (command == "policy") {
    bool config_form = false;
    const nlohmann::json body = policy_body(o.policy_file, config_form);
    Answer a;
    try {
      a = api.send("PUT", "/v1/policy", json_body(body), true);
    } catch (const RequestFailed& e) {
      // Say where in the file a field the server names sits ("params.kp" -> policy.params.kp).
      std::string message = e.what();
      const auto at = message.find("(field: ");
      if (at != std::string::npos) {
        const auto end = message.find(')', at);
        const std::string field = message.substr(at + 8, end - at - 8);
        message += "\n  in " + o.policy_file + " at " + (config_form ? "policy." : "") + field;
      }
      throw RequestFailed(message);
    }
    if (o.json) {
      print_raw(a);
    } else {
      const nlohmann::json& j = ApiClient::object(a);
      std::cout << "policy: " << text(lookup(j, {"policy", "name"})) << " "
                << text(lookup(j, {"policy", "params"})) << ", from the "
                << text(lookup(j, {"effective"})) << "\n";
    }
  } else if (command == "pause" || command == "resume") {
    const std::string body = o.reason.empty() ? "" : json_body({{"reason", o.reason}});
    const Answer a = api.send("POST", "/v1/" + command, body, true);
    if (o.json) {
      print_raw(a);
    } else if (command == "pause") {
      std::cout << "consumption paused: partitions stop fetching; workers finish what they hold\n";
    } else {
      std::cout << "consumption resumed\n";
    }
  } else {
    throw BadInput("unknown ctl command \"" + command + "\"");
  }
  return 0;
}

}  // namespace

CommandMain add_ctl_command(CLI::App& app) {
  auto o = std::make_shared<CtlOptions>();
  app.require_subcommand(1);
  // Options of `ctl` itself are accepted after the command too (`ctl status --json`).
  app.fallthrough();
  app.add_option("--url", o->url, "Base URL of the lagpilot API (lagpilot run --listen)")
      ->capture_default_str();
  app.add_option("--token-file", o->token_file,
                 std::string("File whose first line is the API bearer token (else $") + kTokenEnv +
                     "); needed by the commands that change something");
  app.add_flag("--json", o->json, "Print the server's JSON answer as is");
  app.add_option("--timeout", o->timeout_seconds, "Seconds to wait for the server")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.footer(
      "Exit status: 0 ok; 1 the server is unreachable or refused (its error message goes to\n"
      "stderr); 2 bad input (arguments, duration, URL, token or policy file).\n"
      "Durations: 90s, 10m, 2h, 1d, 1h30m, or plain seconds.\n"
      "The options of `lagpilot ctl` (--url, --token-file, --json, --timeout) may also follow\n"
      "the command: lagpilot ctl status --json --url http://127.0.0.1:9464");

  std::vector<std::pair<std::string, CLI::App*>> commands;
  const auto sub = [&](const char* name, const char* help) {
    CLI::App* s = app.add_subcommand(name, help);
    commands.emplace_back(name, s);
    return s;
  };
  sub("status", "Workers, policy, last decision, lag, rates, latency, queue, pause, override");
  sub("decisions", "The most recent entries of the decision log, oldest first")
      ->add_option("--limit", o->limit, "How many entries")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI::App* override_cmd =
      sub("override", "Pin the pool to N workers until the TTL ends or `ctl clear`");
  override_cmd->add_option("N", o->workers, "Workers (within the hard limits)")->required();
  override_cmd->add_option("--ttl", o->ttl, "How long the pin lasts (server default 10m)")
      ->each([o](const std::string&) { o->ttl_given = true; });
  override_cmd->add_option("--reason", o->reason, "Why (kept in the decision log)");
  sub("clear", "End the override: the policy decides again");
  CLI::App* bounds_cmd = sub("bounds", "Set the soft bounds MIN..MAX (within the hard limits)");
  bounds_cmd->add_option("MIN", o->min_workers, "Minimum workers")->required();
  bounds_cmd->add_option("MAX", o->max_workers, "Maximum workers")->required();
  sub("policy",
      "Swap or retune the policy from FILE: {\"name\": ..., \"params\": {...}} or a config file")
      ->add_option("FILE", o->policy_file, "Policy or config JSON file")
      ->required();
  sub("pause", "Pause consumption (workers finish what they hold)")
      ->add_option("--reason", o->reason, "Why (kept in the decision log)");
  sub("resume", "Resume consumption")
      ->add_option("--reason", o->reason, "Why (kept in the decision log)");

  return [o, commands]() -> int {
    std::string command;
    for (const auto& [name, s] : commands) {
      if (s->parsed()) command = name;
    }
    try {
      return run_ctl(command, *o);
    } catch (const BadInput& e) {
      std::cerr << "lagpilot ctl " << command << ": " << e.what() << "\n";
      return kExitBadInput;
    } catch (const RequestFailed& e) {
      std::cerr << "lagpilot ctl " << command << ": " << e.what() << "\n";
      return kExitFailed;
    }
  };
}

}  // namespace lagpilot::cli
