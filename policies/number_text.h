#pragma once
// Number formatting for decision reasons and config errors. Policies write numbers into their
// reasons every tick (when Observation::explain is set), and the simulator runs millions of
// ticks, so these avoid snprintf: std::to_chars writes exactly printf's text in the "C" locale,
// and the common cases (whole numbers, fixed with 0..2 decimals) skip even that.
//
// Pure functions; any thread.

#include <string>

namespace lagpilot::text {

// printf("%.6g", v). Whole numbers below 10^6 print as plain integers, as %.6g does.
std::string num(double v);

// printf("%.<significant>g", v).
std::string general(double v, int significant);

// printf("%.<precision>f", v), or printf("%+.<precision>f", v) when `plus`.
std::string fixed(double v, int precision, bool plus = false);

// printf("%+.<precision>f", v).
inline std::string signed_fixed(double v, int precision) {
  return fixed(v, precision, true);
}

// printf("%.<precision>e", v).
std::string scientific(double v, int precision);

// printf("%.0f", v) with its digits grouped by thousands: 1234567.8 -> "1,234,568"; a negative
// number that rounds to zero prints as "0".
std::string thousands(double v);

// A number for a table cell, short and without an exponent where one is not needed: whole
// numbers and |v| >= 100 as integers (printf "%.0f"), |v| >= 10^7 as "%.3e", anything else
// with `significant` digits ("%.<significant>g").
std::string human(double v, int significant);

}  // namespace lagpilot::text
