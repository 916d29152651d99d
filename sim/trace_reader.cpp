#include "sim/trace_reader.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace lagpilot::sim {

TraceError::TraceError(const std::string& path, std::size_t line, const std::string& what)
    : std::runtime_error(line == 0 ? path + ": " + what
                                   : path + ":" + std::to_string(line) + ": " + what),
      path_(path),
      line_(line) {}

namespace {

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
constexpr std::size_t kNoColumn = static_cast<std::size_t>(-1);

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

std::string format_number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
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

enum class ValueError { kNone, kEmpty, kNotNumber, kInfinite, kNegative };

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

// Splits text into lines at LF, CRLF or CR; a final newline does not start an extra line.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : text_(text) {}
  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    const std::size_t begin = pos_;
    std::size_t end = begin;
    while (end < text_.size() && text_[end] != '\n' && text_[end] != '\r') ++end;
    line = text_.substr(begin, end - begin);
    if (end < text_.size()) {
      const bool crlf = text_[end] == '\r' && end + 1 < text_.size() && text_[end + 1] == '\n';
      end += crlf ? 2 : 1;
    }
    pos_ = end;
    ++number_;
    return true;
  }
  std::size_t number() const { return number_; }  // 1-based number of the last line returned

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t number_ = 0;
};

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

// One CSV file in memory: its header (if any) and a row iterator that checks column counts.
// Not copyable or movable: body_ points into text_.
class CsvFile {
 public:
  // `path` names the file in errors; `text` is its contents.
  CsvFile(std::string path, std::string text) : path_(std::move(path)), text_(std::move(text)) {
    std::string_view body = text_;
    if (body.starts_with("\xEF\xBB\xBF")) body.remove_prefix(3);
    body_ = body;
    LineReader lines(body_);
    std::string_view line;
    while (lines.next(line)) {
      if (blank(line)) continue;
      first_line_ = lines.number();
      std::vector<std::string_view> fields;
      split_fields(line, fields);
      columns_ = fields.size();
      int64_t ignored = 0;
      has_header_ = parse_timestamp(fields[0], ignored) != nullptr;
      for (std::string_view f : fields) first_fields_.emplace_back(f);
      if (has_header_) names_ = first_fields_;
      return;
    }
    fail(1, "file is empty");
  }
  CsvFile(const CsvFile&) = delete;
  CsvFile& operator=(const CsvFile&) = delete;

  const std::string& path() const { return path_; }
  bool has_header() const { return has_header_; }
  const std::vector<std::string>& names() const { return names_; }  // empty without a header
  const std::vector<std::string>& first_fields() const { return first_fields_; }
  std::size_t columns() const { return columns_; }
  std::size_t first_line() const { return first_line_; }  // the header, or the first row

  [[noreturn]] void fail(std::size_t line, const std::string& what) const {
    throw TraceError(path_, line, what);
  }

  // Header names joined for messages: "(timestamp,value)" or "".
  std::string header_text() const {
    if (!has_header_) return "";
    std::string out = " (";
    for (std::size_t i = 0; i < names_.size(); ++i) out += (i ? "," : "") + names_[i];
    return out + ")";
  }

  // Calls row(fields, line_number) for every data row; counts blank lines.
  template <class RowFn>
  void for_each_row(RowFn&& row, std::size_t& blank_lines) const {
    LineReader lines(body_);
    std::string_view line;
    std::vector<std::string_view> fields;
    std::size_t rows = 0;
    while (lines.next(line)) {
      if (has_header_ && lines.number() == first_line_) continue;
      if (blank(line)) {
        ++blank_lines;
        continue;
      }
      split_fields(line, fields);
      if (fields.size() != columns_) {
        fail(lines.number(), "expected " + std::to_string(columns_) + " columns" + header_text() +
                                 " but found " + std::to_string(fields.size()));
      }
      ++rows;
      row(fields, lines.number());
    }
    if (rows == 0) fail(first_line_, "header but no data rows");
  }

  // Index of the first header column named (case-insensitively) like one of `wanted`, in the
  // order of `wanted`; kNoColumn if none (or no header).
  std::size_t find_column(std::initializer_list<std::string_view> wanted) const {
    for (std::string_view w : wanted) {
      for (std::size_t i = 0; i < names_.size(); ++i) {
        if (lowercase(names_[i]) == w) return i;
      }
    }
    return kNoColumn;
  }
  std::size_t find_time_column() const {
    return find_column(
        {"timestamp", "time", "ts", "datetime", "date", "period", "second", "seconds", "t"});
  }

 private:
  std::string path_;
  std::string text_;
  std::string_view body_;
  bool has_header_ = false;
  std::vector<std::string> names_;
  std::vector<std::string> first_fields_;
  std::size_t columns_ = 0;
  std::size_t first_line_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Series: the rows of one metric, validated (sorted times, numeric values >= 0 or NaN).

struct SeriesLayout {
  std::size_t time_column = 0;
  std::size_t value_column = kNoColumn;  // kNoColumn: an event file (times only)
  std::size_t name_column = kNoColumn;   // Prometheus __name__
  std::string metric;                    // with name_column: keep this one ("" = the only one)
  bool allow_equal_times = false;
};

struct Series {
  std::string name;  // the metric (Prometheus) or the value column's header name
  std::vector<int64_t> times;
  std::vector<double> values;  // NaN kept
  std::vector<std::size_t> lines;
  std::size_t skipped_rows = 0;
  std::size_t blank_lines = 0;
  std::size_t nan_values = 0;
};

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
                                   " from line " + std::to_string(name_line) + ", " + in_quotes(name) +
                                   " here); choose one with the metric option");
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
        path, 0, "metric " + in_quotes(layout.metric) + " not found (the file holds " + names + ")");
  }
  return series;
}

// The bin width of a sampled series: the median step between consecutive rows.
int64_t median_step(const CsvFile& file, const Series& series) {
  if (series.times.size() < 2) {
    file.fail(0, "at least two rows are needed to detect the bin width (found " +
                     std::to_string(series.times.size()) + ")");
  }
  std::vector<int64_t> steps(series.times.size() - 1);
  for (std::size_t i = 1; i < series.times.size(); ++i) {
    steps[i - 1] = series.times[i] - series.times[i - 1];
  }
  const auto middle = steps.begin() + static_cast<std::ptrdiff_t>((steps.size() - 1) / 2);
  std::nth_element(steps.begin(), middle, steps.end());
  return *middle;
}

// Grid position of each row: round((t - t0) / step). Two rows in one bin are an error.
std::vector<std::size_t> grid_indices(const CsvFile& file, const Series& series, int64_t step) {
  std::vector<std::size_t> index(series.times.size());
  const int64_t t0 = series.times.front();
  const std::size_t max_bins = max_bins_for(series.times.size());
  for (std::size_t i = 0; i < series.times.size(); ++i) {
    const int64_t offset = series.times[i] - t0;
    const int64_t bins = offset / step + (offset % step >= step - step / 2 ? 1 : 0);
    if (static_cast<uint64_t>(bins) >= max_bins) {
      file.fail(series.lines[i],
                "timestamp is " + std::to_string(bins) + " bins after the first row; " +
                    too_many_bins(series.times.size(), static_cast<uint64_t>(bins) + 1));
    }
    index[i] = static_cast<std::size_t>(bins);
    if (i > 0 && index[i] == index[i - 1]) {
      file.fail(series.lines[i], "timestamp falls into the same " +
                                     format_number(to_seconds(step)) + " s bin as line " +
                                     std::to_string(series.lines[i - 1]) +
                                     " (irregular timestamps; the bin width is the median step)");
    }
  }
  return index;
}

// Replaces each NaN value by linear interpolation (in grid position) between the nearest
// non-NaN values; at the ends, by the nearest non-NaN value. False if every value is NaN.
bool interpolate_nans(std::vector<double>& values, const std::vector<std::size_t>& position) {
  std::size_t previous = kNoColumn;  // last non-NaN row
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isnan(values[i])) {
      previous = i;
      continue;
    }
    std::size_t next = i + 1;
    while (next < values.size() && std::isnan(values[next])) ++next;
    if (previous == kNoColumn && next == values.size()) return false;
    for (std::size_t j = i; j < next; ++j) {
      if (previous == kNoColumn) {
        values[j] = values[next];
      } else if (next == values.size()) {
        values[j] = values[previous];
      } else {
        const double w = static_cast<double>(position[j] - position[previous]) /
                         static_cast<double>(position[next] - position[previous]);
        values[j] = values[previous] + w * (values[next] - values[previous]);
      }
    }
    i = next - 1;
  }
  return true;
}

// rate / prometheus: one bin per row, zero-rate bins for gaps; `counts` divides by the width.
Trace binned_trace(const CsvFile& file, Series series, bool counts, TraceLoadStats& stats) {
  const int64_t step = median_step(file, series);
  const std::vector<std::size_t> index = grid_indices(file, series, step);
  if (!interpolate_nans(series.values, index)) {
    file.fail(0, "all " + std::to_string(series.values.size()) + " values are NaN");
  }
  Trace trace;
  trace.source = file.path();
  trace.start_epoch = to_seconds(series.times.front());
  trace.bin_seconds = to_seconds(step);
  trace.rates.assign(index.back() + 1, 0.0);
  const double divisor = counts ? trace.bin_seconds : 1.0;
  for (std::size_t i = 0; i < index.size(); ++i) {
    const double rate = series.values[i] / divisor;
    // A huge count in a tiny bin (1e308 in 1 ns; a fuzz-contract finding) has no finite rate.
    if (!std::isfinite(rate)) {
      file.fail(series.lines[i], "value " + format_number(series.values[i]) + " in a " +
                                     format_number(trace.bin_seconds) +
                                     " s bin is not a finite rate (messages/s)");
    }
    trace.rates[index[i]] = rate;
  }
  stats.gap_bins = trace.rates.size() - index.size();
  return trace;
}

int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0 && (a < 0) != (b < 0)) ? 1 : 0);
}

Trace event_trace(const CsvFile& file, const Series& series, double bin_seconds) {
  const double bin_nanos_real = std::round(bin_seconds * 1e9);
  if (!(bin_nanos_real >= 1) || bin_nanos_real > 1e18) {
    file.fail(0,
              "event_bin_seconds must be between 1e-9 and 1e9, got " + format_number(bin_seconds));
  }
  const auto bin_nanos = static_cast<int64_t>(bin_nanos_real);
  // Nanosecond times reach about 292 years either side of 1970; the first bin must start
  // inside that range too (a 1684 timestamp once overflowed here).
  if (series.times.front() < std::numeric_limits<int64_t>::min() + bin_nanos) {
    file.fail(series.lines.front(), "timestamp too far in the past to bin");
  }
  const int64_t start = floor_div(series.times.front(), bin_nanos) * bin_nanos;
  // Times are sorted, so back - start >= 0, and as unsigned it cannot overflow.
  const auto offset = [start](int64_t t) {
    return static_cast<uint64_t>(t) - static_cast<uint64_t>(start);
  };
  const uint64_t last_bin = offset(series.times.back()) / static_cast<uint64_t>(bin_nanos);
  if (last_bin >= max_bins_for(series.times.size())) {
    file.fail(series.lines.back(),
              "the events span " + std::to_string(last_bin + 1) + " bins of " +
                  format_number(bin_seconds) + " s; " +
                  too_many_bins(series.times.size(), last_bin + 1));
  }
  Trace trace;
  trace.source = file.path();
  trace.start_epoch = to_seconds(start);
  trace.bin_seconds = to_seconds(bin_nanos);
  trace.rates.assign(static_cast<std::size_t>(last_bin) + 1, 0.0);
  for (int64_t t : series.times)
    trace.rates[static_cast<std::size_t>(offset(t) / static_cast<uint64_t>(bin_nanos))] += 1;
  for (double& r : trace.rates) r /= trace.bin_seconds;
  return trace;
}

// ---------------------------------------------------------------------------------------------
// Lag reconstruction

// A companion recording as a step function: each sample holds until the next one, the last one
// for one median step. integral() must be called with non-decreasing intervals.
class StepFunction {
 public:
  StepFunction(const CsvFile& file, const Series& series) {
    const int64_t step = median_step(file, series);
    for (std::size_t i = 0; i < series.times.size(); ++i) {
      if (std::isnan(series.values[i])) continue;
      times_.push_back(series.times[i]);
      values_.push_back(series.values[i]);
    }
    if (times_.empty())
      file.fail(0, "all " + std::to_string(series.values.size()) + " values are NaN");
    end_ = times_.back() + step;
  }
  int64_t begin() const { return times_.front(); }
  int64_t end() const { return end_; }

  // Integral over [a, b) in value * seconds; [a, b) must lie within [begin(), end()].
  double integral(int64_t a, int64_t b) {
    while (cursor_ + 1 < times_.size() && times_[cursor_ + 1] <= a) ++cursor_;
    double sum = 0;
    int64_t from = a;
    for (std::size_t j = cursor_; from < b; ++j) {
      const int64_t until = j + 1 < times_.size() ? std::min(times_[j + 1], b) : b;
      sum += values_[j] * to_seconds(until - from);
      from = until;
    }
    return sum;
  }

 private:
  std::vector<int64_t> times_;
  std::vector<double> values_;
  int64_t end_ = 0;
  std::size_t cursor_ = 0;
};

bool contains_any(const std::string& text, std::initializer_list<std::string_view> words) {
  return std::any_of(words.begin(), words.end(),
                     [&](std::string_view w) { return text.find(w) != std::string::npos; });
}

bool looks_like_lag(const std::string& name) {
  return contains_any(lowercase(name), {"lag"});
}

std::string guess_companion_kind(const CsvFile& file, const std::string& name) {
  const std::string n = lowercase(name);
  if (contains_any(n, {"taskmanager", "worker", "replica", "pod", "instance"})) return "workers";
  if (contains_any(n, {"process", "consum", "rate", "throughput"})) return "processed_rate";
  file.fail(0, "cannot tell whether metric " + in_quotes(name) +
                   " is a worker count or a processed rate; set companion_kind to workers or "
                   "processed_rate");
}

// Lag file or companion: a Prometheus export or 2 columns, values as they are.
SeriesLayout gauge_layout(const CsvFile& file, const std::string& metric) {
  const bool prometheus =
      file.has_header() ? file.find_column({"__name__"}) != kNoColumn : file.columns() == 3;
  return prometheus ? prometheus_layout(file, metric)
                    : two_column_layout(file, "a lag or companion recording without __name__");
}

// `companion_text`: the companion's contents, or nullopt to read the file options.companion.
Trace lag_trace(const CsvFile& lag_file, const TraceLoadOptions& options,
                const std::optional<std::string_view>& companion_text, TraceLoadStats& stats) {
  Series lag = read_series(lag_file, gauge_layout(lag_file, options.metric));
  stats.metric = lag.name;
  stats.data_rows = lag.times.size();
  stats.skipped_rows = lag.skipped_rows;
  stats.blank_lines = lag.blank_lines;
  stats.nan_values = lag.nan_values;

  const CsvFile companion_file(options.companion, companion_text
                                                      ? std::string(*companion_text)
                                                      : read_whole_file(options.companion));
  const Series companion = read_series(companion_file, gauge_layout(companion_file, ""));
  stats.companion_nan_values = companion.nan_values;
  stats.companion_kind = options.companion_kind == "auto"
                             ? guess_companion_kind(companion_file, companion.name)
                             : options.companion_kind;
  const bool workers = stats.companion_kind == "workers";
  if (workers && !(options.per_worker_rate > 0 && std::isfinite(options.per_worker_rate))) {
    lag_file.fail(0,
                  "a worker-count companion needs per_worker_rate > 0 (messages/s per worker), "
                  "got " +
                      format_number(options.per_worker_rate));
  }
  StepFunction processed(companion_file, companion);

  // Lag on a regular grid; NaN samples and gaps inside are interpolated, the ends trimmed.
  const int64_t step = median_step(lag_file, lag);
  const std::vector<std::size_t> index = grid_indices(lag_file, lag, step);
  const std::size_t grid_size = index.back() + 1;
  stats.gap_bins = grid_size - index.size();
  std::vector<double> grid(grid_size, std::numeric_limits<double>::quiet_NaN());
  std::vector<std::size_t> position(grid_size);
  for (std::size_t k = 0; k < grid_size; ++k) position[k] = k;
  for (std::size_t i = 0; i < index.size(); ++i) grid[index[i]] = lag.values[i];
  std::size_t first = 0;
  while (first < grid_size && std::isnan(grid[first])) ++first;
  std::size_t last = grid_size;
  while (last > first && std::isnan(grid[last - 1])) --last;
  if (last - first < 2) lag_file.fail(0, "at least two lag samples that are not NaN are needed");
  interpolate_nans(grid, position);  // the ends are trimmed below, so their fill does not matter

  // Keep the intervals [k, k + 1) inside both the lag samples and the companion's span.
  const int64_t t0 = lag.times.front();
  std::size_t begin = first;
  while (begin + 1 < last && t0 + static_cast<int64_t>(begin) * step < processed.begin()) ++begin;
  std::size_t end = last - 1;  // exclusive end of intervals
  while (end > begin && t0 + static_cast<int64_t>(end) * step > processed.end()) --end;
  if (end <= begin || t0 + static_cast<int64_t>(begin) * step < processed.begin()) {
    lag_file.fail(
        0, "the companion " + options.companion + " (epoch " +
               format_number(to_seconds(processed.begin())) + " to " +
               format_number(to_seconds(processed.end())) +
               " s) does not cover any lag interval (epoch " +
               format_number(to_seconds(t0 + static_cast<int64_t>(first) * step)) + " to " +
               format_number(to_seconds(t0 + static_cast<int64_t>(last - 1) * step)) + " s)");
  }
  stats.trimmed_bins = (grid_size - 1) - (end - begin);

  Trace trace;
  trace.source = lag_file.path();
  trace.start_epoch = to_seconds(t0 + static_cast<int64_t>(begin) * step);
  trace.bin_seconds = to_seconds(step);
  trace.rates.reserve(end - begin);
  const double factor = workers ? options.per_worker_rate : 1.0;
  for (std::size_t k = begin; k < end; ++k) {
    const int64_t a = t0 + static_cast<int64_t>(k) * step;
    const double done = processed.integral(a, a + step) * factor;
    double arrived = grid[k + 1] - grid[k] + done;
    if (arrived < 0) {
      arrived = 0;
      ++stats.clamped_bins;
    }
    trace.rates.push_back(arrived / trace.bin_seconds);
    if (!std::isfinite(trace.rates.back())) {  // huge lag values or per_worker_rate
      lag_file.fail(0, "the arrivals reconstructed for the interval at epoch " +
                           format_number(to_seconds(a)) + " s are not a finite rate");
    }
  }
  return trace;
}

// ---------------------------------------------------------------------------------------------

bool valid_format(const std::string& f) {
  return f == "auto" || f == "rate" || f == "prometheus" || f == "events" || f == "lag";
}

std::string resolve_format(const CsvFile& file, const TraceLoadOptions& options) {
  if (options.format != "auto") return options.format;
  if (!options.companion.empty()) return "lag";
  if (file.has_header()) {
    if (file.find_column({"__name__"}) != kNoColumn) return "prometheus";
    return file.columns() == 2 ? "rate" : "events";
  }
  // No header: 2 columns are a rate; 3 with a non-numeric middle field a Prometheus export.
  if (file.columns() == 2) return "rate";
  if (file.columns() == 3) {
    double ignored = 0;
    if (parse_value(file.first_fields()[1], ignored) == ValueError::kNotNumber) return "prometheus";
  }
  return "events";
}

void reject_lag_as_rate(const CsvFile& file, const std::string& name) {
  if (looks_like_lag(name)) {
    file.fail(0, "metric " + in_quotes(name) +
                     " looks like consumer lag, not arrivals: set the companion option (worker "
                     "count or processed rate) to reconstruct arrivals, or an explicit format to "
                     "read the values as they are");
  }
}

// Reads the file `path`, or parses `text` under that name when given (and then the companion
// from `companion_text`, never from disk).
LoadedTrace load_or_parse(const std::string& path, const std::optional<std::string_view>& text,
                          const std::optional<std::string_view>& companion_text,
                          const TraceLoadOptions& options) {
  if (!valid_format(options.format)) {
    throw TraceError(path, 0,
                     "unknown format " + in_quotes(options.format) +
                         " (expected auto, rate, prometheus, events or lag)");
  }
  if (options.companion_kind != "auto" && options.companion_kind != "workers" &&
      options.companion_kind != "processed_rate") {
    throw TraceError(path, 0,
                     "unknown companion_kind " + in_quotes(options.companion_kind) +
                         " (expected auto, workers or processed_rate)");
  }
  if (options.format == "lag" && options.companion.empty()) {
    throw TraceError(path, 0,
                     "format lag needs a companion recording (worker count or processed rate)");
  }
  if (!options.companion.empty() && options.format != "lag" && options.format != "auto") {
    throw TraceError(path, 0, "a companion is only used with format lag, not " + options.format);
  }

  const CsvFile file(path, text ? std::string(*text) : read_whole_file(path));
  LoadedTrace result;
  TraceLoadStats& stats = result.stats;
  stats.format = resolve_format(file, options);
  const bool auto_format = options.format == "auto";
  if (!options.metric.empty() && stats.format != "prometheus" && stats.format != "lag") {
    file.fail(0, "the metric option (" + in_quotes(options.metric) +
                     ") needs a Prometheus export, but the file is read as " + stats.format);
  }

  if (stats.format == "lag") {
    result.trace = lag_trace(file, options, companion_text, stats);
    return result;
  }

  SeriesLayout layout;
  if (stats.format == "prometheus") {
    layout = prometheus_layout(file, options.metric);
  } else if (stats.format == "rate") {
    layout = two_column_layout(file, "the rate format");
  } else {  // events
    layout.time_column = file.find_time_column();
    if (layout.time_column == kNoColumn) layout.time_column = 0;
    layout.allow_equal_times = true;
  }
  Series series = read_series(file, layout);
  stats.metric = series.name;
  stats.data_rows = series.times.size();
  stats.skipped_rows = series.skipped_rows;
  stats.blank_lines = series.blank_lines;
  stats.nan_values = series.nan_values;
  if (auto_format && stats.format != "events") reject_lag_as_rate(file, series.name);

  if (stats.format == "events") {
    result.trace = event_trace(file, series, options.event_bin_seconds);
  } else {
    result.trace = binned_trace(file, std::move(series), stats.format == "rate", stats);
  }
  return result;
}

}  // namespace

LoadedTrace load_trace_with_stats(const std::string& path, const TraceLoadOptions& options) {
  return load_or_parse(path, std::nullopt, std::nullopt, options);
}

Trace load_trace(const std::string& path, const TraceLoadOptions& options) {
  return load_trace_with_stats(path, options).trace;
}

LoadedTrace parse_trace_with_stats(std::string_view text, const std::string& name,
                                   const TraceLoadOptions& options,
                                   std::string_view companion_text) {
  return load_or_parse(name, text, companion_text, options);
}

Trace parse_trace(std::string_view text, const std::string& name, const TraceLoadOptions& options,
                  std::string_view companion_text) {
  return parse_trace_with_stats(text, name, options, companion_text).trace;
}

Trace compress_time(Trace trace, double speedup) {
  if (!(speedup > 0) || !std::isfinite(speedup)) {
    throw std::invalid_argument("compress_time: speedup must be finite and > 0, got " +
                                format_number(speedup));
  }
  trace.bin_seconds /= speedup;
  for (double& r : trace.rates) r *= speedup;
  // (A fuzz-contract finding.) A finite but huge rate (or speedup) overflowed to infinity, and a
  // tiny bin underflowed to 0, both silently.
  const bool overflow = std::any_of(trace.rates.begin(), trace.rates.end(),
                                    [](double r) { return !std::isfinite(r); });
  if (overflow || !(trace.bin_seconds > 0)) {
    throw std::invalid_argument("compress_time: speedup " + format_number(speedup) + " makes " +
                                (overflow ? "a rate of trace " : "the bin width of trace ") +
                                trace.source + (overflow ? " infinite" : " zero"));
  }
  return trace;
}

Trace scale_to_peak(Trace trace, double peak_rate) {
  if (!(peak_rate > 0) || !std::isfinite(peak_rate)) {
    throw std::invalid_argument("scale_to_peak: peak_rate must be finite and > 0, got " +
                                format_number(peak_rate));
  }
  const double current = trace.peak_rate();
  if (!(current > 0)) {
    throw std::invalid_argument("scale_to_peak: trace " + trace.source +
                                " has no rate above 0 to scale");
  }
  const double factor = peak_rate / current;
  if (std::isfinite(factor)) {
    for (double& r : trace.rates) r = r == current ? peak_rate : r * factor;
  } else {
    // A tiny peak (5e-324): factor overflows, and 0 * inf would be NaN. r / current <= 1.
    for (double& r : trace.rates) r = r == current ? peak_rate : r / current * peak_rate;
  }
  return trace;
}

}  // namespace lagpilot::sim
