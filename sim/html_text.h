#pragma once
// Numbers, durations and parameters as the HTML reports print them: short, grouped by
// thousands in tables, with SI suffixes on chart axes.
//
// Thread-safety: pure functions; any thread.

#include <nlohmann/json.hpp>
#include <string>

namespace lagpilot::sim::html {

// 1234567 -> "1,234,567" (integers), 0.01234 -> "0.0123", 123.4 -> "123".
std::string grouped(double v);

// Axis tick label with an SI suffix: 1500 -> "1.5k", 2000000 -> "2M", 0.25 -> "0.25".
std::string si(double v);

// Seconds as a short human duration: 45 -> "45s", 5400 -> "1h30m", 86400 -> "1d".
std::string human_duration(double seconds);

// Policy parameters for display: floats rounded to 6 significant digits, compact JSON.
std::string params_text(const nlohmann::json& params);

}  // namespace lagpilot::sim::html
