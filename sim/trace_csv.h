#pragma once
// The CSV side of the trace readers: a trace file in memory split into lines and fields (LF,
// CRLF or CR; a byte-order mark; blank lines counted), timestamps (epoch seconds or
// `YYYY-MM-DD HH:MM:SS[.fraction]`, UTC) and values read without locale or allocation, and the
// rows of one metric collected into a validated Series. Every error is a TraceError that names
// the file and the line.
//
// Internal to the trace readers (sim/trace_reader.h is the interface). Thread-safety: plain
// values and pure functions.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/trace_reader.h"

namespace lagpilot::sim::trace_io {

constexpr std::size_t kNoColumn = static_cast<std::size_t>(-1);

enum class ValueError { kNone, kEmpty, kNotNumber, kInfinite, kNegative };

double to_seconds(int64_t nanos);

std::size_t max_bins_for(std::size_t rows);

// Why a trace of `rows` rows (or events) may not span `bins` bins.
std::string too_many_bins(std::size_t rows, uint64_t bins);

std::string in_quotes(std::string_view s);

std::string lowercase(std::string_view s);

const char* parse_timestamp(std::string_view s, int64_t& nanos);

ValueError parse_value(std::string_view s, double& value);

void split_fields(std::string_view line, std::vector<std::string_view>& fields);

bool blank(std::string_view line);

std::string read_whole_file(const std::string& path);

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

SeriesLayout two_column_layout(const CsvFile& file, const std::string& what);

SeriesLayout prometheus_layout(const CsvFile& file, const std::string& metric);

Series read_series(const CsvFile& file, const SeriesLayout& layout);

}  // namespace lagpilot::sim::trace_io
