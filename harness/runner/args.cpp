#include "args.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "errors.h"

namespace k3bench {

namespace {
const char* type_name(KeySpec::Type t) {
  switch (t) {
    case KeySpec::Type::kInt: return "int";
    case KeySpec::Type::kFloat: return "float";
    case KeySpec::Type::kEnum: return "enum";
  }
  return "?";
}

std::optional<std::int64_t> parse_int(const std::string& s) {
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(const std::string& s) {
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}
}  // namespace

nlohmann::json KeySpec::to_json() const {
  nlohmann::json j = {{"name", name}, {"type", type_name(type)}, {"help", help}};
  j["required"] = !default_value.has_value();
  if (default_value) j["default"] = *default_value;
  if (type == Type::kInt) j["range"] = {min, max};
  if (type == Type::kEnum) j["choices"] = choices;
  return j;
}

KeySpec int_key(std::string name, std::string help, std::optional<std::string> default_value,
                std::int64_t min, std::int64_t max) {
  KeySpec s;
  s.name = std::move(name);
  s.type = KeySpec::Type::kInt;
  s.help = std::move(help);
  s.default_value = std::move(default_value);
  s.min = min;
  s.max = max;
  return s;
}

KeySpec float_key(std::string name, std::string help, std::optional<std::string> default_value) {
  KeySpec s;
  s.name = std::move(name);
  s.type = KeySpec::Type::kFloat;
  s.help = std::move(help);
  s.default_value = std::move(default_value);
  return s;
}

KeySpec enum_key(std::string name, std::string help, std::string default_value,
                 std::vector<std::string> choices) {
  KeySpec s;
  s.name = std::move(name);
  s.type = KeySpec::Type::kEnum;
  s.help = std::move(help);
  s.default_value = std::move(default_value);
  s.choices = std::move(choices);
  return s;
}

std::map<std::string, std::string> parse_kv_list(const std::string& text, const std::string& what) {
  std::map<std::string, std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      throw UsageError(fmt::format("{}: '{}' is not key=value", what, item));
    }
    const std::string key = item.substr(0, eq);
    if (!out.emplace(key, item.substr(eq + 1)).second) {
      throw UsageError(fmt::format("{}: key '{}' given twice", what, key));
    }
    pos = end + 1;
  }
  return out;
}

KeyValues::KeyValues(const std::vector<KeySpec>& specs, const std::map<std::string, std::string>& given,
                     const std::string& what, bool is_shape)
    : specs_(specs) {
  for (const auto& [key, value] : given) {
    bool known = false;
    for (const auto& s : specs) known = known || s.name == key;
    if (!known) {
      std::string names;
      for (const auto& s : specs) names += (names.empty() ? "" : ", ") + s.name;
      throw UsageError(fmt::format("{}: unknown key '{}' (known: {})", what, key, names));
    }
  }
  for (const auto& s : specs) {
    auto it = given.find(s.name);
    std::string value;
    if (it != given.end()) {
      value = it->second;
    } else if (s.default_value) {
      value = *s.default_value;
    } else {
      throw UsageError(fmt::format("{}: missing required key '{}' ({})", what, s.name, s.help));
    }
    switch (s.type) {
      case KeySpec::Type::kInt: {
        auto v = parse_int(value);
        if (!v) throw UsageError(fmt::format("{}: {}='{}' is not an integer", what, s.name, value));
        if (*v < s.min || *v > s.max) {
          const std::string msg =
              fmt::format("{}: {}={} is outside the allowed range [{}, {}]", what, s.name, *v, s.min, s.max);
          if (is_shape) throw UnsupportedShape(msg);
          throw UsageError(msg);
        }
        break;
      }
      case KeySpec::Type::kFloat:
        if (!parse_double(value)) throw UsageError(fmt::format("{}: {}='{}' is not a number", what, s.name, value));
        break;
      case KeySpec::Type::kEnum: {
        bool ok = false;
        for (const auto& c : s.choices) ok = ok || c == value;
        if (!ok) {
          throw UsageError(fmt::format("{}: {}='{}' is not one of: {}", what, s.name, value,
                                       fmt::join(s.choices, ", ")));
        }
        break;
      }
    }
    values_[s.name] = value;
  }
}

const KeySpec& KeyValues::spec(const std::string& name) const {
  for (const auto& s : specs_)
    if (s.name == name) return s;
  throw std::logic_error("KeyValues: undeclared key " + name);
}

std::int64_t KeyValues::integer(const std::string& name) const {
  spec(name);
  return *parse_int(values_.at(name));
}
double KeyValues::number(const std::string& name) const {
  spec(name);
  return *parse_double(values_.at(name));
}
const std::string& KeyValues::text(const std::string& name) const {
  spec(name);
  return values_.at(name);
}

nlohmann::json KeyValues::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& s : specs_) {
    const auto& v = values_.at(s.name);
    if (s.type == KeySpec::Type::kInt) j[s.name] = *parse_int(v);
    else if (s.type == KeySpec::Type::kFloat) j[s.name] = *parse_double(v);
    else j[s.name] = v;
  }
  return j;
}

}  // namespace k3bench
