#include "cli/duration_flag.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "policies/config_reader.h"

namespace lagpilot::cli {

double parse_duration(const std::string& flag, const std::string& text, DurationFloor floor) {
  const auto bad = [&](const std::string& why) {
    return ConfigError(flag, "invalid duration \"" + text + "\": " + why +
                                 " (examples: 90s, 500ms, 10m, 2h, 1h30m, or plain seconds)");
  };
  if (text.empty()) throw bad("empty");
  struct Unit {
    std::string_view name;
    int rank;  // units must come largest first: strictly increasing rank
    double seconds;
  };
  static constexpr Unit kUnits[] = {{"d", 0, 86400}, {"h", 1, 3600}, {"m", 2, 60},
                                    {"min", 2, 60},  {"s", 3, 1},    {"ms", 4, 1e-3}};
  const auto is_digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  const auto is_letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
  double total = 0;
  std::size_t pos = 0;
  int last_rank = -1;
  while (pos < text.size()) {
    const std::size_t start = pos;
    bool digits = false;
    while (pos < text.size() && (is_digit(text[pos]) || text[pos] == '.')) {
      digits = digits || text[pos] != '.';
      ++pos;
    }
    if (!digits) throw bad("expected a number at position " + std::to_string(start + 1));
    const std::string amount = text.substr(start, pos - start);
    if (amount.find('.') != amount.rfind('.')) throw bad("malformed number \"" + amount + "\"");
    const double value = std::strtod(amount.c_str(), nullptr);
    if (pos == text.size()) {
      if (last_rank >= 0) throw bad("the last number has no unit");
      total = value;  // a plain number: seconds
      break;
    }
    const std::size_t unit_start = pos;
    while (pos < text.size() && is_letter(text[pos])) ++pos;
    const std::string_view name = std::string_view(text).substr(unit_start, pos - unit_start);
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (u.name == name) unit = &u;
    }
    if (unit == nullptr) {
      throw bad("unknown unit \"" + std::string(name.empty() ? text.substr(pos, 1) : name) +
                "\" (use d, h, m, s or ms)");
    }
    if (unit->rank <= last_rank) throw bad("units must each appear once, largest first");
    last_rank = unit->rank;
    total += value * unit->seconds;
  }
  if (!std::isfinite(total)) throw bad("too large");
  if (floor == DurationFloor::kPositive && total <= 0) throw bad("must be more than 0 seconds");
  return total;
}

}  // namespace lagpilot::cli
