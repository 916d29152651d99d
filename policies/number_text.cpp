#include "policies/number_text.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace lagpilot::text {
namespace {

// Writes the decimal digits of `n` backwards, ending at `end`; returns the first character.
char* write_digits_backwards(uint64_t n, char* end) {
  do {
    *--end = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n != 0);
  return end;
}

// printf's %.<precision>f / e / g through std::to_chars. Text longer than 48 - 1
// characters (only a huge %f) is cut there, as snprintf into 48 bytes would.
std::string to_chars_text(double v, std::chars_format format, int precision, bool plus) {
  char buf[48];
  char* first = buf;
  if (plus && !std::signbit(v)) *first++ = '+';
  const auto [end, error] = std::to_chars(first, buf + sizeof buf - 1, v, format, precision);
  if (error == std::errc()) return std::string(buf, end);
  const char* printf_format = format == std::chars_format::fixed        ? (plus ? "%+.*f" : "%.*f")
                              : format == std::chars_format::scientific ? (plus ? "%+.*e" : "%.*e")
                                                                        : (plus ? "%+.*g" : "%.*g");
  std::snprintf(buf, sizeof buf, printf_format, precision, v);
  return buf;
}

}  // namespace

std::string general(double v, int significant) {
  return to_chars_text(v, std::chars_format::general, significant, false);
}

std::string scientific(double v, int precision) {
  return to_chars_text(v, std::chars_format::scientific, precision, false);
}

std::string human(double v, int significant) {
  if (std::fabs(v) >= 1e7) return scientific(v, 3);
  if (std::fabs(v) >= 100 || v == std::floor(v)) return fixed(v, 0);
  return general(v, significant);
}

std::string thousands(double v) {
  const std::string digits = fixed(std::fabs(v), 0);
  std::string out;
  if (v < 0 && digits != "0") out += '-';
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string num(double v) {
  if (std::fabs(v) < 1e6 && v == std::trunc(v)) {
    char buf[16];
    char* first = write_digits_backwards(static_cast<uint64_t>(std::fabs(v)), buf + sizeof buf);
    if (std::signbit(v)) *--first = '-';  // "-0" for -0.0, as printf
    return std::string(first, buf + sizeof buf);
  }
  return general(v, 6);
}

// The common case (precision 0..2, |v| < 10^13) avoids to_chars: |v| * 10^precision is split
// exactly into hi + lo (lo = fma(|v|, scale, -hi), the rounding error of the product), rounded
// to the nearest integer with ties to even on that exact value, as printf does, and written out
// with the decimal point put back.
std::string fixed(double v, int precision, bool plus) {
  static constexpr double kScale[] = {1.0, 10.0, 100.0};
  const double a = std::fabs(v);
  if (precision < 0 || precision > 2 || !(a < 1e13)) {  // also NaN
    return to_chars_text(v, std::chars_format::fixed, precision, plus);
  }
  const double scale = kScale[precision];
  const double hi = a * scale;  // < 10^15 < 2^52: the grid of hi holds 0.5
  const double lo = std::fma(a, scale, -hi);
  uint64_t n = static_cast<uint64_t>(hi);
  const double fraction = hi - static_cast<double>(n);  // exact
  if (fraction > 0.5 || (fraction == 0.5 && (lo > 0.0 || (lo == 0.0 && n % 2 != 0)))) ++n;
  char buf[32];
  char* first = buf + sizeof buf;
  for (int i = 0; i < precision; ++i) {
    *--first = static_cast<char>('0' + n % 10);
    n /= 10;
  }
  if (precision > 0) *--first = '.';
  first = write_digits_backwards(n, first);
  if (std::signbit(v)) {
    *--first = '-';  // also for -0.0 and for negatives that round to zero, as printf
  } else if (plus) {
    *--first = '+';
  }
  return std::string(first, buf + sizeof buf);
}

}  // namespace lagpilot::text
