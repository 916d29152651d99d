#include "sim/html_text.h"

#include <cmath>
#include <cstdlib>

#include "policies/number_text.h"
#include "sim/html_report.h"

namespace lagpilot::sim {
namespace html {
namespace {

nlohmann::json rounded_for_display(nlohmann::json j) {
  if (j.is_number_float()) return std::strtod(text::general(j.get<double>(), 6).c_str(), nullptr);
  if (j.is_object() || j.is_array()) {
    for (auto& v : j) v = rounded_for_display(std::move(v));
  }
  return j;
}

}  // namespace

std::string grouped(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "n/a" : (v > 0 ? "inf" : "-inf");
  const double a = std::fabs(v);
  if (a != 0.0 && a < 100 && v != std::floor(v)) return text::general(v, 3);
  if (a >= 1e15) return text::scientific(v, 3);
  return text::thousands(v);
}

std::string si(double v) {
  const double a = std::fabs(v);
  const char* suffix = "";
  double scaled = v;
  if (a >= 1e12) {
    scaled = v / 1e12, suffix = "T";
  } else if (a >= 1e9) {
    scaled = v / 1e9, suffix = "G";
  } else if (a >= 1e6) {
    scaled = v / 1e6, suffix = "M";
  } else if (a >= 1e3) {
    scaled = v / 1e3, suffix = "k";
  }
  std::string s = text::general(scaled, 3);
  if (s == "-0") s = "0";
  return s + suffix;
}

std::string human_duration(double seconds) {
  if (!std::isfinite(seconds)) return "?";
  const bool negative = seconds < 0;
  double s = std::fabs(seconds);
  if (s < 1.0 && s > 0) return text::general(seconds, 3) + "s";
  auto whole = static_cast<long long>(std::llround(s));
  const long long d = whole / 86400, h = whole % 86400 / 3600, m = whole % 3600 / 60,
                  sec = whole % 60;
  std::string out = negative ? "-" : "";
  if (d > 0) out += std::to_string(d) + "d";
  if (h > 0) out += std::to_string(h) + "h";
  if (m > 0 && d == 0) out += std::to_string(m) + "m";
  if (sec > 0 && d == 0 && h == 0) out += std::to_string(sec) + "s";
  if (out.size() == (negative ? 1u : 0u)) out += '0';
  return out;
}

std::string params_text(const nlohmann::json& params) {
  return rounded_for_display(params).dump();
}

}  // namespace html

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}
}  // namespace lagpilot::sim
