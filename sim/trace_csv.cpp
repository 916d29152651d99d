#include "sim/trace_csv.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace lagpilot::sim::trace_io {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
// Largest |epoch seconds| whose nanoseconds (plus a fraction) still fit in int64_t.
constexpr int64_t kMaxEpochSeconds = 9'223'372'035;
// A trace longer than this is refused (a typo in one timestamp would otherwise allocate GBs).
constexpr std::size_t kMaxBins = 100'000'000;
// ... and so is one whose gaps dwarf its rows: a file of 3 rows with one mistyped timestamp
// would still ask for up to kMaxBins bins (800 MB of zeros). A trace of n rows (or events) may
// span max(kFreeBins, n * kMaxBinsPerRow) bins, capped at kMaxBins.
constexpr std::size_t kFreeBins = 1'000'000;
constexpr std::size_t kMaxBinsPerRow = 1'000;

std::size_t max_bins_for(std::size_t rows) {
  return std::min(kMaxBins, std::max(kFreeBins, rows * kMaxBinsPerRow));
}

// Why a trace of `rows` rows (or events) may not span `bins` bins.
std::string too_many_bins(std::size_t rows, uint64_t bins) {
  const std::size_t limit = max_bins_for(rows);
  if (limit == kMaxBins) {
    return "traces longer than " + std::to_string(kMaxBins) + " bins are refused";
  }
  return "a trace of " + std::to_string(rows) + " rows may span at most " + std::to_string(limit) +
         " bins, this one " + std::to_string(bins) +
         " (mostly empty gaps: is a timestamp mistyped?)";
}

double to_seconds(int64_t nanos) {
  return static_cast<double>(nanos) / 1e9;
}

std::string in_quotes(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '\'';
  out.append(s);
  out += '\'';
  return out;
}

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// ---------------------------------------------------------------------------------------------
// Timestamps

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  // Howard Hinnant's days_from_civil: days since 1970-01-01 in the proleptic Gregorian calendar.
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

unsigned days_in_month(int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

// Reads exactly `n` digits at s[pos]; false if any is not a digit.
bool fixed_digits(std::string_view s, std::size_t pos, std::size_t n, unsigned& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (!is_digit(s[i])) return false;
    out = out * 10 + static_cast<unsigned>(s[i] - '0');
  }
  return true;
}

// Reads `.digits` at s[pos] (if present) into nanoseconds; digits past the 9th are ignored.
// Returns the position after it, or npos if the dot has no digits.
std::size_t fraction_nanos(std::string_view s, std::size_t pos, int64_t& nanos) {
  nanos = 0;
  if (pos >= s.size() || s[pos] != '.') return pos;
  ++pos;
  const std::size_t begin = pos;
  int64_t scale = kNanosPerSecond;
  while (pos < s.size() && is_digit(s[pos])) {
    if (scale > 1) {
      scale /= 10;
      nanos += (s[pos] - '0') * scale;
    }
    ++pos;
  }
  return pos == begin ? std::string_view::npos : pos;
}

constexpr const char* kTimestampForms = "expected epoch seconds or YYYY-MM-DD HH:MM:SS[.fraction]";

// Parses `YYYY-MM-DD[( |T)HH:MM:SS[.fraction]][Z]` (UTC). nullptr on success, else the reason.
const char* parse_date_time(std::string_view s, int64_t& nanos) {
  unsigned year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!fixed_digits(s, 0, 4, year) || s.size() < 10 || s[4] != '-' ||
      !fixed_digits(s, 5, 2, month) || s[7] != '-' || !fixed_digits(s, 8, 2, day)) {
    return kTimestampForms;
  }
  std::size_t pos = 10;
  int64_t fraction = 0;
  if (pos < s.size() && (s[pos] == ' ' || s[pos] == 'T')) {
    if (!fixed_digits(s, pos + 1, 2, hour) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !fixed_digits(s, pos + 4, 2, minute) || pos + 6 >= s.size() || s[pos + 6] != ':' ||
        !fixed_digits(s, pos + 7, 2, second)) {
      return kTimestampForms;
    }
    pos = fraction_nanos(s, pos + 9, fraction);
    if (pos == std::string_view::npos) return kTimestampForms;
  }
  if (pos < s.size() && s[pos] == 'Z') ++pos;
  if (pos != s.size()) return kTimestampForms;
  if (month < 1 || month > 12) return "month out of range";
  if (day < 1 || day > days_in_month(year, month)) return "day out of range for the month";
  if (hour > 23) return "hour out of range";
  if (minute > 59) return "minute out of range";
  if (second > 59) return "second out of range";
  const int64_t seconds = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 +
                          static_cast<int64_t>(second);
  if (seconds > kMaxEpochSeconds || seconds < -kMaxEpochSeconds) {
    return "out of range (years 1678 to 2261)";
  }
  nanos = seconds * kNanosPerSecond + fraction;
  return nullptr;
}

// Parses epoch seconds: `[-]digits[.digits]`, or a floating-point literal with an exponent.
const char* parse_epoch(std::string_view s, int64_t& nanos) {
  std::size_t pos = 0;
  const bool negative = !s.empty() && s[0] == '-';
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) ++pos;
  const std::size_t digits_begin = pos;
  int64_t seconds = 0;
  while (pos < s.size() && is_digit(s[pos])) {
    if (seconds > kMaxEpochSeconds) return "out of range (years 1678 to 2261)";
    seconds = seconds * 10 + (s[pos] - '0');
    ++pos;
  }
  const bool has_digits = pos > digits_begin;
  int64_t fraction = 0;
  std::size_t end = fraction_nanos(s, pos, fraction);
  if (end == std::string_view::npos && has_digits) end = pos + 1;  // "123." is fine
  if (has_digits && end == s.size()) {
    if (seconds > kMaxEpochSeconds) return "out of range (years 1678 to 2261)";
    nanos = seconds * kNanosPerSecond + fraction;
    if (negative) nanos = -nanos;
    return nullptr;
  }
  // Exponent notation (1.648143909e9): rare, read as a double (microsecond precision).
  if (s.find_first_of("eE") != std::string_view::npos) {
    double value = 0;
    const char* first = s.data() + (s[0] == '+' ? 1 : 0);
    const auto [ptr, ec] = std::from_chars(first, s.data() + s.size(), value);
    if (ec == std::errc() && ptr == s.data() + s.size() && std::isfinite(value)) {
      if (std::fabs(value) > static_cast<double>(kMaxEpochSeconds)) {
        return "out of range (years 1678 to 2261)";
      }
      nanos = std::llround(value * 1e9);
      return nullptr;
    }
  }
  return kTimestampForms;
}

const char* parse_timestamp(std::string_view s, int64_t& nanos) {
  if (s.size() >= 5 && is_digit(s[0]) && is_digit(s[1]) && is_digit(s[2]) && is_digit(s[3]) &&
      s[4] == '-') {
    return parse_date_time(s, nanos);
  }
  return parse_epoch(s, nanos);
}

// ---------------------------------------------------------------------------------------------
// Values

ValueError parse_value(std::string_view s, double& value) {
  if (s.empty()) return ValueError::kEmpty;
  const char* first = s.data();
  const char* last = s.data() + s.size();
  if (*first == '+') ++first;
  const auto [ptr, ec] = std::from_chars(first, last, value);
  if (ptr != last || first == last) return ValueError::kNotNumber;
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves `value` alone here: underflow (1e-400) reads as 0, overflow is infinite.
    if (s.find("e-") == std::string_view::npos && s.find("E-") == std::string_view::npos) {
      return ValueError::kInfinite;
    }
    value = 0;
    return ValueError::kNone;
  }
  if (ec != std::errc()) return ValueError::kNotNumber;
  if (std::isnan(value)) {
    value = std::numeric_limits<double>::quiet_NaN();  // "-nan" as well
    return ValueError::kNone;
  }
  if (std::isinf(value)) return ValueError::kInfinite;
  if (value < 0) return ValueError::kNegative;
  return ValueError::kNone;
}

// ---------------------------------------------------------------------------------------------
// Lines and fields

std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string_view trim_field(std::string_view s) {
  s = trim_spaces(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"')
    s = trim_spaces(s.substr(1, s.size() - 2));
  return s;
}

void split_fields(std::string_view line, std::vector<std::string_view>& fields) {
  fields.clear();
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      fields.push_back(trim_field(line.substr(start)));
      return;
    }
    fields.push_back(trim_field(line.substr(start, comma - start)));
    start = comma + 1;
  }
}

std::string read_whole_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr)
    throw TraceError(path, 0, std::string("cannot open: ") + std::strerror(errno));
  std::string data;
  char buffer[1 << 16];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) data.append(buffer, n);
  const bool failed = std::ferror(file) != 0;
  const int error = errno;
  std::fclose(file);
  if (failed) throw TraceError(path, 0, std::string("cannot read: ") + std::strerror(error));
  return data;
}

bool blank(std::string_view line) {
  return trim_spaces(line).empty();
}

// ---------------------------------------------------------------------------------------------
// Series: the rows of one metric, validated (sorted times, numeric values >= 0 or NaN).

SeriesLayout two_column_layout(const CsvFile& file, const std::string& what) {
  if (file.columns() != 2) {
    file.fail(file.first_line(), what + " needs 2 columns (timestamp,value), found " +
                                     std::to_string(file.columns()) + file.header_text());
  }
  SeriesLayout layout;
  layout.time_column = file.find_time_column() == 1 ? 1 : 0;
  layout.value_column = 1 - layout.time_column;
  return layout;
}

SeriesLayout prometheus_layout(const CsvFile& file, const std::string& metric) {
  SeriesLayout layout;
  layout.metric = metric;
  if (!file.has_header()) {
    if (file.columns() != 3) {
      file.fail(file.first_line(),
                "a Prometheus export without a header needs 3 columns "
                "(timestamp,__name__,value), found " +
                    std::to_string(file.columns()));
    }
    layout.time_column = 0;
    layout.name_column = 1;
    layout.value_column = 2;
    return layout;
  }
  layout.name_column = file.find_column({"__name__"});
  if (layout.name_column == kNoColumn || file.columns() < 3) {
    file.fail(file.first_line(),
              "a Prometheus export needs timestamp, __name__ and value columns; the header is" +
                  file.header_text());
  }
  layout.time_column = file.find_time_column();
  if (layout.time_column == kNoColumn) layout.time_column = layout.name_column == 0 ? 1 : 0;
  layout.value_column = file.find_column({"value"});
  if (layout.value_column == kNoColumn) {
    layout.value_column = file.columns() - 1;
    while (layout.value_column == layout.name_column || layout.value_column == layout.time_column) {
      --layout.value_column;
    }
  }
  return layout;
}

Series read_series(const CsvFile& file, const SeriesLayout& layout) {
  Series series;
  if (layout.name_column == kNoColumn && layout.value_column != kNoColumn && file.has_header()) {
    series.name = file.names()[layout.value_column];
  }
  const bool select_by_name = layout.name_column != kNoColumn;
  bool have_name = select_by_name && !layout.metric.empty();
  if (have_name) series.name = layout.metric;
  std::size_t name_line = 0;             // first line of the selected metric
  std::vector<std::string> other_names;  // for "metric not found" (a few are enough)
  const std::string& path = file.path();

  file.for_each_row(
      [&](const std::vector<std::string_view>& fields, std::size_t line) {
        if (select_by_name) {
          const std::string_view name = fields[layout.name_column];
          if (!have_name) {
            series.name = std::string(name);
            have_name = true;
            name_line = line;
          } else if (name != series.name) {
            if (layout.metric.empty()) {
              throw TraceError(path, line,
                               "the file holds several metrics (" + in_quotes(series.name) +
                                   " from line " + std::to_string(name_line) + ", " +
                                   in_quotes(name) + " here); choose one with the metric option");
            }
            if (other_names.size() < 10 &&
                std::find(other_names.begin(), other_names.end(), name) == other_names.end()) {
              other_names.emplace_back(name);
            }
            ++series.skipped_rows;
            return;
          }
        }
        const std::string_view time_text = fields[layout.time_column];
        int64_t nanos = 0;
        if (time_text.empty()) throw TraceError(path, line, "timestamp is empty");
        if (const char* reason = parse_timestamp(time_text, nanos)) {
          throw TraceError(path, line, "bad timestamp " + in_quotes(time_text) + ": " + reason);
        }
        if (!series.times.empty()) {
          const int64_t previous = series.times.back();
          if (nanos < previous) {
            throw TraceError(
                path, line,
                "timestamp " + in_quotes(time_text) + " is earlier than the one on line " +
                    std::to_string(series.lines.back()) + "; rows must be sorted by time");
          }
          if (nanos == previous && !layout.allow_equal_times) {
            throw TraceError(path, line,
                             "duplicate timestamp " + in_quotes(time_text) + " (also on line " +
                                 std::to_string(series.lines.back()) + ")");
          }
        }
        double value = 0;
        if (layout.value_column != kNoColumn) {
          const std::string_view text = fields[layout.value_column];
          switch (parse_value(text, value)) {
            case ValueError::kNone:
              break;
            case ValueError::kEmpty:
              throw TraceError(path, line, "value is empty");
            case ValueError::kNotNumber:
              throw TraceError(path, line, "value " + in_quotes(text) + " is not a number");
            case ValueError::kInfinite:
              throw TraceError(path, line, "value " + in_quotes(text) + " is infinite");
            case ValueError::kNegative:
              throw TraceError(path, line,
                               "negative value " + in_quotes(text) +
                                   " (counts, rates, lag and "
                                   "workers must be >= 0)");
          }
          if (std::isnan(value)) ++series.nan_values;
          series.values.push_back(value);
        }
        series.times.push_back(nanos);
        series.lines.push_back(line);
      },
      series.blank_lines);

  if (series.times.empty()) {
    std::string names;
    for (const std::string& n : other_names) names += (names.empty() ? "" : ", ") + in_quotes(n);
    throw TraceError(
        path, 0,
        "metric " + in_quotes(layout.metric) + " not found (the file holds " + names + ")");
  }
  return series;
}

}  // namespace lagpilot::sim::trace_io
