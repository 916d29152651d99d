#pragma once
// The practice's numbers as checks: `lagpilot advise` prints their findings, and the start-up
// warnings of lagpilot::Service (so `lagpilot run`) are the same findings, from the same list.
//
// Each rule (kAdviceRules in config_advice.cpp, in this order) looks at the config and, when
// one is given, a calibration record (what `lagpilot calibrate --json` prints, also kept in the
// "calibration" section of a config that calibrate wrote):
//   fetch_max_bytes      kafka.properties fetch.max.bytes above 50 MB (52,428,800 bytes)
//   max_poll_records     kafka.properties max.poll.records above 500, unless the calibration
//                        shows that handling takes milliseconds (worst step p99 < 10 ms)
//   max_poll_interval    kafka.properties max.poll.interval.ms (default 300,000) below the worst
//                        observed batch time: the calibration's worst step p99 handler time
//                        times the records one handler call takes, or, without a calibration,
//                        300,000 ms (heavy preprocessing)
//   revoke_timeout       kafka.revoke_timeout_seconds not below max.poll.interval.ms
//   watermarks           pool.high_watermark / pool.low_watermark other than 0.8 / 0.2
//   burst_headroom       the calibration's headroom outside 20 to 30 % (the config's own
//                        pacing.headroom cannot be: loading refuses it)
//   shared_traffic       traffic.training_and_online_share is "cluster" or "topic"
//
// Thread-safety: plain functions on values; any thread.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/app_config.h"

namespace lagpilot {

struct AdviceFinding {
  std::string check;    // the rule's name ("fetch_max_bytes")
  std::string path;     // JSON path of the setting at fault ("kafka.properties.fetch.max.bytes")
  std::string message;  // what is off and why the practice says otherwise
  bool in_calibration = false;  // `path` is in the calibration document, not in the config
};

// A calibration record and where it sits in its document ("" or "calibration.").
struct CalibrationInput {
  nlohmann::json record = nullptr;  // null: no calibration
  std::string prefix;
};

struct AdviceRule {
  const char* name;
  const char* summary;  // one line, for --help and the docs
};

// The rules, in the order advise() applies them.
const std::vector<AdviceRule>& advice_rules();

// Every finding of every rule, in rule order. `calibration` comes from calibration_record() (or
// is empty). Throws ConfigError naming the JSON path of a kafka property that is not a number.
std::vector<AdviceFinding> advise(const AppConfig& config,
                                  const CalibrationInput& calibration = {});

// The calibration record in `document`: the document itself when it has "steps", else its
// "calibration" object (a config written by `lagpilot calibrate --write-config`). Checks the
// fields the rules read; throws ConfigError naming the JSON path ("steps[2].latency_p99_seconds:
// must be a number >= 0").
CalibrationInput calibration_record(const nlohmann::json& document);

// "path: message [check]", the line advise and the start-up warnings print.
std::string format_finding(const AdviceFinding& finding);

}  // namespace lagpilot
