#include "harness/common/params/param_spec.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace k3params {
namespace {

const char* type_name(ParamSpec::Type t) {
  switch (t) {
    case ParamSpec::Type::kInt:
      return "int";
    case ParamSpec::Type::kFloat:
      return "float";
    case ParamSpec::Type::kEnum:
      return "enum";
  }
  return "?";
}

std::optional<std::int64_t> parse_int(std::string_view s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string names_of(const std::vector<ParamSpec>& specs) {
  std::string out;
  for (const auto& s : specs) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

[[noreturn]] void catalog_error(const nlohmann::json& j, const std::string& what) {
  throw ParamError(ParamError::Kind::kCatalog, fmt::format("catalog entry {}: {}", j.dump(), what));
}

}  // namespace

nlohmann::json ParamSpec::to_json() const {
  nlohmann::json j = {{"name", name}, {"type", type_name(type)}, {"help", help}};
  j["required"] = !default_value.has_value();
  if (default_value) j["default"] = *default_value;
  if (type == Type::kInt) j["range"] = {min, max};
  if (type == Type::kInt && multiple_of > 1) j["multiple_of"] = multiple_of;
  if (type == Type::kEnum) j["choices"] = choices;
  return j;
}

ParamSpec ParamSpec::from_json(const nlohmann::json& j) {
  if (!j.is_object()) catalog_error(j, "not an object");
  ParamSpec s;
  try {
    s.name = j.at("name").get<std::string>();
    const std::string type = j.at("type").get<std::string>();
    if (type == "int") {
      s.type = Type::kInt;
    } else if (type == "float") {
      s.type = Type::kFloat;
    } else if (type == "enum") {
      s.type = Type::kEnum;
    } else {
      catalog_error(j, "unknown type '" + type + "'");
    }
    s.help = j.value("help", "");
    if (j.contains("default")) s.default_value = j["default"].get<std::string>();
    if (s.type == Type::kInt) {
      s.min = j.at("range").at(0).get<std::int64_t>();
      s.max = j.at("range").at(1).get<std::int64_t>();
      s.multiple_of = j.value("multiple_of", std::int64_t{1});
      if (s.multiple_of < 1) catalog_error(j, "multiple_of must be at least 1");
    }
    if (s.type == Type::kEnum) s.choices = j.at("choices").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    catalog_error(j, e.what());
  }
  return s;
}

namespace {

ParamSpec named_param(std::string name, ParamSpec::Type type, std::string help,
                      std::optional<std::string> default_value) {
  ParamSpec s;
  s.name = std::move(name);
  s.type = type;
  s.help = std::move(help);
  s.default_value = std::move(default_value);
  return s;
}

}  // namespace

ParamSpec int_param(std::string name, std::string help, std::optional<std::string> default_value,
                    std::int64_t min, std::int64_t max) {
  ParamSpec s = named_param(std::move(name), ParamSpec::Type::kInt, std::move(help),
                            std::move(default_value));
  s.min = min;
  s.max = max;
  return s;
}

ParamSpec float_param(std::string name, std::string help,
                      std::optional<std::string> default_value) {
  ParamSpec s = named_param(std::move(name), ParamSpec::Type::kFloat, std::move(help),
                            std::move(default_value));
  return s;
}

ParamSpec enum_param(std::string name, std::string help, std::string default_value,
                     std::vector<std::string> choices) {
  ParamSpec s = named_param(std::move(name), ParamSpec::Type::kEnum, std::move(help),
                            std::move(default_value));
  s.choices = std::move(choices);
  return s;
}

TextValues parse_kv_list(std::string_view text, std::string_view where) {
  TextValues out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(pos, end - pos);
    const auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size()) {
      throw ParamError(ParamError::Kind::kSyntax,
                       fmt::format("{}: '{}' is not key=value", where, item));
    }
    if (!out.emplace(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))).second) {
      throw ParamError(ParamError::Kind::kSyntax,
                       fmt::format("{}: key '{}' given twice", where, item.substr(0, eq)));
    }
    pos = end + 1;
  }
  return out;
}

nlohmann::json normalise(const std::vector<ParamSpec>& specs, const TextValues& given,
                         std::string_view where) {
  for (const auto& [key, value] : given) {
    bool known = false;
    for (const auto& s : specs) known = known || s.name == key;
    if (!known) {
      throw ParamError(
          ParamError::Kind::kUnknownKey,
          fmt::format("{}: unknown key '{}' (known: {})", where, key, names_of(specs)));
    }
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& s : specs) {
    const auto it = given.find(s.name);
    if (it == given.end() && !s.default_value) {
      throw ParamError(ParamError::Kind::kMissing,
                       fmt::format("{}: missing required key '{}' ({})", where, s.name, s.help));
    }
    const std::string& v = it != given.end() ? it->second : *s.default_value;
    switch (s.type) {
      case ParamSpec::Type::kInt: {
        const auto x = parse_int(v);
        if (!x) {
          throw ParamError(ParamError::Kind::kMalformed,
                           fmt::format("{}: {}='{}' is not an integer", where, s.name, v));
        }
        if (*x < s.min || *x > s.max) {
          throw ParamError(ParamError::Kind::kOutOfRange,
                           fmt::format("{}: {}={} is outside the allowed range [{}, {}]", where,
                                       s.name, *x, s.min, s.max));
        }
        if (*x != 0 && *x % s.multiple_of != 0) {
          throw ParamError(
              ParamError::Kind::kOutOfRange,
              fmt::format("{}: {}={} is not a multiple of {}", where, s.name, *x, s.multiple_of));
        }
        out[s.name] = *x;
        break;
      }
      case ParamSpec::Type::kFloat: {
        const auto x = parse_double(v);
        if (!x) {
          throw ParamError(ParamError::Kind::kMalformed,
                           fmt::format("{}: {}='{}' is not a number", where, s.name, v));
        }
        out[s.name] = *x;
        break;
      }
      case ParamSpec::Type::kEnum: {
        bool ok = false;
        for (const auto& c : s.choices) ok = ok || c == v;
        if (!ok) {
          throw ParamError(ParamError::Kind::kMalformed,
                           fmt::format("{}: {}='{}' is not one of: {}", where, s.name, v,
                                       fmt::join(s.choices, ", ")));
        }
        out[s.name] = v;
        break;
      }
    }
  }
  return out;
}

std::string value_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
  return fmt::format("{}", v.get<double>());
}

std::string to_kv(const nlohmann::json& object) {
  std::string out;
  for (const auto& [k, v] : object.items())
    out += (out.empty() ? "" : ",") + k + "=" + value_text(v);
  return out;
}

}  // namespace k3params
