#include "policies/config_reader.h"

#include <cmath>

#include "policies/number_text.h"

namespace lagpilot {
namespace {

std::string type_name(const nlohmann::json& v) {
  return v.type_name();
}

using text::num;

}  // namespace

std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

JsonObjectReader::JsonObjectReader(const nlohmann::json& object, std::string path)
    : object_(object), path_(std::move(path)) {
  if (!object_.is_object()) {
    throw ConfigError(path_, "must be a JSON object, got " + type_name(object_));
  }
}

std::string JsonObjectReader::path_of(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

bool JsonObjectReader::has(const std::string& key) const {
  return object_.contains(key);
}

const nlohmann::json* JsonObjectReader::find(const std::string& key) {
  seen_.insert(key);
  auto it = object_.find(key);
  return it == object_.end() ? nullptr : &*it;
}

const nlohmann::json* JsonObjectReader::raw(const std::string& key) {
  return find(key);
}

void JsonObjectReader::read(const std::string& key, double& out, double min, double max) {
  const nlohmann::json* v = find(key);
  if (!v) return;
  if (!v->is_number()) {
    throw ConfigError(path_of(key), "must be a number, got " + type_name(*v));
  }
  const double value = v->get<double>();
  if (!std::isfinite(value) || value < min || value > max) {
    std::string range;
    if (std::isfinite(min) && std::isfinite(max)) {
      range = "must be between " + num(min) + " and " + num(max);
    } else if (std::isfinite(min)) {
      range = "must be >= " + num(min);
    } else {
      range = "must be <= " + num(max);
    }
    throw ConfigError(path_of(key), range + ", got " + num(value));
  }
  out = value;
}

void JsonObjectReader::read(const std::string& key, int64_t& out, int64_t min, int64_t max) {
  const nlohmann::json* v = find(key);
  if (!v) return;
  const bool integral_float =
      v->is_number_float() && std::floor(v->get<double>()) == v->get<double>();
  if (!v->is_number_integer() && !integral_float) {
    throw ConfigError(path_of(key),
                      "must be an integer, got " + (v->is_number() ? v->dump() : type_name(*v)));
  }
  // Integral floats such as 1e30 do not fit int64_t: casting them would be undefined.
  if (integral_float && std::fabs(v->get<double>()) >= 9.2e18) {
    throw ConfigError(path_of(key), "must be between " + std::to_string(min) + " and " +
                                        std::to_string(max) + ", got " + v->dump());
  }
  const int64_t value = v->is_number_unsigned() && v->get<uint64_t>() > INT64_MAX ? INT64_MAX
                        : v->is_number_float() ? static_cast<int64_t>(v->get<double>())
                                               : v->get<int64_t>();
  if (value < min || value > max) {
    throw ConfigError(path_of(key), "must be between " + std::to_string(min) + " and " +
                                        std::to_string(max) + ", got " + v->dump());
  }
  out = value;
}

void JsonObjectReader::read(const std::string& key, int& out, int min, int max) {
  int64_t wide = out;
  read(key, wide, min, max);
  out = static_cast<int>(wide);
}

void JsonObjectReader::read(const std::string& key, bool& out) {
  const nlohmann::json* v = find(key);
  if (!v) return;
  if (!v->is_boolean()) {
    throw ConfigError(path_of(key), "must be true or false, got " + type_name(*v));
  }
  out = v->get<bool>();
}

void JsonObjectReader::read(const std::string& key, std::string& out) {
  const nlohmann::json* v = find(key);
  if (!v) return;
  if (!v->is_string()) {
    throw ConfigError(path_of(key), "must be a string, got " + type_name(*v));
  }
  out = v->get<std::string>();
}

void JsonObjectReader::read_enum(const std::string& key, std::string& out,
                                 const std::vector<std::string>& allowed) {
  std::string value = out;
  read(key, value);
  for (const auto& a : allowed) {
    if (a == value) {
      out = value;
      return;
    }
  }
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  throw ConfigError(path_of(key), "must be one of " + list + ", got \"" + value + "\"");
}

JsonObjectReader JsonObjectReader::child(const std::string& key) {
  const nlohmann::json* v = find(key);
  if (!v) return JsonObjectReader(nlohmann::json::object(), path_of(key));
  return JsonObjectReader(*v, path_of(key));
}

void JsonObjectReader::finish() const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (!seen_.count(it.key())) {
      throw ConfigError(path_of(it.key()), "unknown key");
    }
  }
}

}  // namespace lagpilot
