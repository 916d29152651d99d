#include "controller/config_advice.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "policies/config_reader.h"
#include "policies/number_text.h"

namespace lagpilot {
namespace {

constexpr int64_t kFetchMaxBytesLimit = 50LL * 1024 * 1024;  // 50 MB (librdkafka's default)
constexpr int64_t kMaxPollRecordsLimit = 500;
constexpr double kMillisecondHandlingSeconds = 0.010;  // "handling takes milliseconds": p99 below
constexpr int64_t kHeavyPreprocessingPollIntervalMs = 300'000;
constexpr int64_t kDefaultPollIntervalMs = 300'000;  // librdkafka's max.poll.interval.ms
constexpr double kHighWatermark = 0.8;
constexpr double kLowWatermark = 0.2;

// 1234567 -> "1,234,567".
std::string with_commas(int64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  const std::size_t first = digits[0] == '-' ? 1 : 0;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > first && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string ms_text(double seconds) {
  const double ms = seconds * 1e3;
  if (ms >= 10) return with_commas(std::llround(ms)) + " ms";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2g ms", ms);
  return buf;
}

// What the rules read, gathered once.
struct Inputs {
  const AppConfig& config;
  const nlohmann::json& calibration;  // a record or null
  const std::string& calibration_prefix;
  std::optional<int64_t> property(const std::string& name) const {
    const auto& props = config.runtime.kafka.properties;
    const auto it = props.find(name);
    if (it == props.end()) return std::nullopt;
    std::size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(it->second, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != it->second.size()) {
      throw ConfigError("kafka.properties." + name,
                        "must be an integer, got \"" + it->second + "\"");
    }
    return v;
  }
  // The calibration's worst step p99 handler time, seconds; nullopt without a calibration.
  std::optional<double> worst_p99() const {
    if (!calibration.is_object()) return std::nullopt;
    double worst = -1;
    for (const auto& step : calibration.at("steps")) {
      worst = std::max(worst, step.at("latency_p99_seconds").get<double>());
    }
    if (worst < 0) return std::nullopt;
    return worst;
  }
  // Records one handler call takes: lagpilot hands the handler one message at a time.
  int64_t records_per_call() const { return 1; }
};

using Rule = std::function<void(const Inputs&, std::vector<AdviceFinding>&)>;

struct RuleEntry {
  AdviceRule rule;
  Rule check;
};

void fetch_max_bytes(const Inputs& in, std::vector<AdviceFinding>& out) {
  const auto v = in.property("fetch.max.bytes");
  if (!v || *v <= kFetchMaxBytesLimit) return;
  out.push_back({"fetch_max_bytes", "kafka.properties.fetch.max.bytes",
                 "fetch.max.bytes is " + with_commas(*v) +
                     " bytes, above 50 MB: one fetch may hold more than the pool can queue, and "
                     "pausing at the high watermark discards prefetched data"});
}

void max_poll_records(const Inputs& in, std::vector<AdviceFinding>& out) {
  const auto v = in.property("max.poll.records");
  if (!v || *v <= kMaxPollRecordsLimit) return;
  const auto p99 = in.worst_p99();
  if (p99 && *p99 < kMillisecondHandlingSeconds) return;
  out.push_back({"max_poll_records", "kafka.properties.max.poll.records",
                 "max.poll.records is " + with_commas(*v) + ", above 500, and " +
                     (p99 ? "the calibration's worst p99 handler time is " + ms_text(*p99) +
                                " (not milliseconds)"
                          : std::string("no calibration shows that handling takes milliseconds")) +
                     ": a poll's records then take longer than a consumer may go between polls "
                     "(librdkafka has no such property either: `lagpilot run` refuses it)"});
}

void max_poll_interval(const Inputs& in, std::vector<AdviceFinding>& out) {
  const int64_t v = in.property("max.poll.interval.ms").value_or(kDefaultPollIntervalMs);
  const auto p99 = in.worst_p99();
  const double worst_ms = p99 ? *p99 * 1e3 * static_cast<double>(in.records_per_call())
                              : static_cast<double>(kHeavyPreprocessingPollIntervalMs);
  if (static_cast<double>(v) >= worst_ms) return;
  out.push_back(
      {"max_poll_interval", "kafka.properties.max.poll.interval.ms",
       "max.poll.interval.ms is " + with_commas(v) + ", below " +
           (p99 ? "the worst observed batch time, " + ms_text(*p99) +
                      " (the calibration's worst "
                      "step p99 handler time)"
                : std::string("300,000 ms, the practice's value for heavy preprocessing (pass "
                              "--calibration to check against the observed batch time)")) +
           ": a consumer that takes longer than this between polls is removed from its group"});
}

void revoke_timeout(const Inputs& in, std::vector<AdviceFinding>& out) {
  const int64_t interval = in.property("max.poll.interval.ms").value_or(kDefaultPollIntervalMs);
  const double revoke = in.config.runtime.kafka.revoke_timeout_seconds;
  if (revoke * 1e3 < static_cast<double>(interval)) return;
  char buf[96];
  std::snprintf(buf, sizeof buf, "%g s", revoke);
  out.push_back({"revoke_timeout", "kafka.revoke_timeout_seconds",
                 std::string("revoke_timeout_seconds is ") + buf +
                     ", not below max.poll.interval.ms (" + with_commas(interval) +
                     " ms): a slow revocation could get this consumer removed from its group"});
}

void watermarks(const Inputs& in, std::vector<AdviceFinding>& out) {
  const WorkerPoolOptions& pool = in.config.runtime.pool;
  const auto off = [](double a, double b) { return std::fabs(a - b) > 1e-9; };
  char buf[160];
  if (off(pool.high_watermark, kHighWatermark)) {
    std::snprintf(buf, sizeof buf, "high_watermark is %g, not 0.8", pool.high_watermark);
    out.push_back({"watermarks", "pool.high_watermark",
                   std::string(buf) + ": the practice pauses fetching at 80 % of the buffer (a "
                                      "higher mark leaves no room for a fetch in flight, a lower "
                                      "one pauses while the buffer still has room)"});
  }
  if (off(pool.low_watermark, kLowWatermark)) {
    std::snprintf(buf, sizeof buf, "low_watermark is %g, not 0.2", pool.low_watermark);
    out.push_back({"watermarks", "pool.low_watermark",
                   std::string(buf) + ": the practice resumes at 20 % of the buffer (a higher "
                                      "mark pauses and resumes in quick turns, a lower one lets "
                                      "the workers run dry before the next fetch arrives)"});
  }
}

void burst_headroom(const Inputs& in, std::vector<AdviceFinding>& out) {
  if (!in.calibration.is_object() || !in.calibration.contains("headroom")) return;
  const double h = in.calibration.at("headroom").get<double>();
  if (h >= PacingConfig::kMinHeadroom - 1e-12 && h <= PacingConfig::kMaxHeadroom + 1e-12) return;
  char buf[96];
  std::snprintf(buf, sizeof buf, "%g %%", h * 100);
  out.push_back({"burst_headroom", in.calibration_prefix + "headroom",
                 std::string("the calibration's burst headroom is ") + buf +
                     ", outside 20 to 30 %: " +
                     (h < PacingConfig::kMinHeadroom
                          ? "its rate limit leaves too little spare capacity to drain a burst"
                          : "its rate limit wastes capacity the consumer has") +
                     " (calibrate again with --headroom 0.25)",
                 true});
}

void shared_traffic(const Inputs& in, std::vector<AdviceFinding>& out) {
  const std::string& share = in.config.traffic.training_and_online_share;
  if (share == "none") return;
  out.push_back(
      {"shared_traffic", "traffic.training_and_online_share",
       share == "cluster"
           ? std::string("training and online traffic share one Kafka cluster: a training job's "
                         "bulk reads and backfills compete with the online consumers for the "
                         "brokers' disks and network; give training its own cluster")
           : std::string("training and online traffic share topics: the online consumers' lag "
                         "then includes the training data, and neither can be paced, retained "
                         "or scaled on its own; give each its own topics (and cluster)")});
}

const std::vector<RuleEntry>& rule_entries() {
  static const std::vector<RuleEntry> rules = {
      {{"fetch_max_bytes", "kafka.properties fetch.max.bytes above 50 MB"}, fetch_max_bytes},
      {{"max_poll_records",
        "kafka.properties max.poll.records above 500, unless the calibration shows handling "
        "takes milliseconds (worst step p99 < 10 ms)"},
       max_poll_records},
      {{"max_poll_interval",
        "max.poll.interval.ms below the worst observed batch time (the calibration's worst "
        "step p99; without one 300,000 ms, for heavy preprocessing)"},
       max_poll_interval},
      {{"revoke_timeout", "kafka.revoke_timeout_seconds not below max.poll.interval.ms"},
       revoke_timeout},
      {{"watermarks", "pool.high_watermark / pool.low_watermark other than 0.8 / 0.2"}, watermarks},
      {{"burst_headroom", "the calibration's burst headroom outside 20 to 30 %"}, burst_headroom},
      {{"shared_traffic",
        "traffic.training_and_online_share \"cluster\" or \"topic\": training and online "
        "traffic on one cluster or topic"},
       shared_traffic},
  };
  return rules;
}

void require_number(const nlohmann::json& object, const std::string& key, const std::string& path,
                    double min) {
  const auto it = object.find(key);
  if (it == object.end())
    throw ConfigError(path + key, "missing (a number >= " + text::num(min) + ")");
  if (!it->is_number() || !(it->get<double>() >= min)) {
    throw ConfigError(path + key, "must be a number >= " + text::num(min) + ", got " + it->dump());
  }
}

}  // namespace

const std::vector<AdviceRule>& advice_rules() {
  static const std::vector<AdviceRule> rules = [] {
    std::vector<AdviceRule> r;
    for (const RuleEntry& e : rule_entries()) r.push_back(e.rule);
    return r;
  }();
  return rules;
}

std::vector<AdviceFinding> advise(const AppConfig& config, const CalibrationInput& calibration) {
  const Inputs in{config, calibration.record, calibration.prefix};
  std::vector<AdviceFinding> findings;
  for (const RuleEntry& e : rule_entries()) e.check(in, findings);
  return findings;
}

CalibrationInput calibration_record(const nlohmann::json& document) {
  if (!document.is_object()) throw ConfigError("", "must be a JSON object (a calibration record)");
  std::string prefix;
  const nlohmann::json* record = &document;
  if (!document.contains("steps")) {
    const auto it = document.find("calibration");
    if (it == document.end() || it->is_null()) {
      throw ConfigError("steps",
                        "missing: not a calibration (`lagpilot calibrate --json`) nor a "
                        "config with a \"calibration\" section");
    }
    if (!it->is_object()) throw ConfigError("calibration", "must be a JSON object");
    record = &*it;
    prefix = "calibration.";
  }
  const auto steps = record->find("steps");
  if (steps == record->end()) throw ConfigError(prefix + "steps", "missing");
  if (!steps->is_array()) throw ConfigError(prefix + "steps", "must be an array");
  for (std::size_t i = 0; i < steps->size(); ++i) {
    const std::string path = prefix + "steps[" + std::to_string(i) + "].";
    const nlohmann::json& step = (*steps)[i];
    if (!step.is_object()) throw ConfigError(path.substr(0, path.size() - 1), "must be an object");
    require_number(step, "workers", path, 1);
    require_number(step, "latency_p99_seconds", path, 0);
  }
  if (record->contains("headroom")) require_number(*record, "headroom", prefix, 0);
  if (record->contains("sustained_rate")) require_number(*record, "sustained_rate", prefix, 0);
  if (record->contains("fit") && !(*record)["fit"].is_object()) {
    throw ConfigError(prefix + "fit", "must be a JSON object");
  }
  return CalibrationInput{*record, prefix};
}

std::string format_finding(const AdviceFinding& f) {
  return f.path + ": " + f.message + " [" + f.check + "]";
}

}  // namespace lagpilot
