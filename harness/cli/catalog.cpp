#include "catalog.h"

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "app_context.h"

namespace k3tune {
namespace {

KeyInfo key_info(const nlohmann::json& j) {
  KeyInfo k;
  k.name = j.at("name").get<std::string>();
  k.type = j.at("type").get<std::string>();
  if (j.contains("default")) k.default_value = j["default"].get<std::string>();
  if (j.contains("range")) {
    k.min = j["range"][0].get<std::int64_t>();
    k.max = j["range"][1].get<std::int64_t>();
  }
  if (j.contains("choices")) k.choices = j["choices"].get<std::vector<std::string>>();
  return k;
}

std::string names_of(const std::vector<KeyInfo>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k.name;
  return out;
}

}  // namespace

Catalog::Catalog(const nlohmann::json& list_ops) {
  for (const auto& o : list_ops) {
    OpSpec op;
    op.name = o.at("name").get<std::string>();
    for (const auto& k : o.value("shape_keys", nlohmann::json::array()))
      op.shape_keys.push_back(key_info(k));
    for (const auto& k : o.value("params", nlohmann::json::array()))
      op.params.push_back(key_info(k));
    ops_.push_back(std::move(op));
  }
}

Catalog Catalog::from_target(const k3targets::Target& target) {
  if (!target.missing().empty()) {
    throw UserError(fmt::format("target {}: missing {}", target.name(), target.missing().front()));
  }
  const auto r = target.run(
      {"--list-ops", "--json"},
      k3targets::ProcessOptions::with_timeout(std::max(60.0, target.config().timeout_s)));
  if (!r.ok()) {
    throw UserError(fmt::format("target {}: the runner cannot list its ops: {}", target.name(),
                                r.failure_reason(target.config().timeout_s)));
  }
  try {
    return Catalog(nlohmann::json::parse(r.out));
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("target {}: the runner's --list-ops output is not valid: {}",
                                target.name(), e.what()));
  }
}

const OpSpec& Catalog::op(const std::string& name, const std::string& where) const {
  for (const auto& o : ops_)
    if (o.name == name) return o;
  std::string known;
  for (const auto& o : ops_) known += (known.empty() ? "" : ", ") + o.name;
  throw UserError(fmt::format("{}: unknown op '{}' (known: {})", where, name, known));
}

nlohmann::json Catalog::normalise(const OpSpec& op, const std::map<std::string, std::string>& given,
                                  bool shape, const std::string& where) const {
  const auto& keys = shape ? op.shape_keys : op.params;
  const char* what = shape ? "shape" : "parameter";
  for (const auto& [k, v] : given) {
    bool known = false;
    for (const auto& key : keys) known = known || key.name == k;
    if (!known) {
      throw UserError(fmt::format("{}: unknown {} '{}' for op {} (known: {})", where, what, k,
                                  op.name, names_of(keys)));
    }
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& key : keys) {
    auto it = given.find(key.name);
    if (it == given.end() && !key.default_value) {
      throw UserError(fmt::format("{}: op {} needs {} '{}'", where, op.name, what, key.name));
    }
    const std::string v = it != given.end() ? it->second : *key.default_value;
    if (key.type == "int") {
      std::int64_t x = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
      if (ec != std::errc() || p != v.data() + v.size()) {
        throw UserError(fmt::format("{}: {}={} is not an integer", where, key.name, v));
      }
      if (x < key.min || x > key.max) {
        throw UserError(
            fmt::format("{}: {}={} is outside [{}, {}]", where, key.name, x, key.min, key.max));
      }
      out[key.name] = x;
    } else if (key.type == "float") {
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(x)) {
        throw UserError(fmt::format("{}: {}={} is not a number", where, key.name, v));
      }
      out[key.name] = x;
    } else {
      bool ok = false;
      for (const auto& c : key.choices) ok = ok || c == v;
      if (!ok)
        throw UserError(fmt::format("{}: {}={} is not one of {}", where, key.name, v,
                                    fmt::join(key.choices, "|")));
      out[key.name] = v;
    }
  }
  return out;
}

std::map<std::string, std::string> parse_kv(const std::string& text, const std::string& where) {
  std::map<std::string, std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      throw UserError(fmt::format("{}: '{}' is not key=value", where, item));
    }
    if (!out.emplace(item.substr(0, eq), item.substr(eq + 1)).second) {
      throw UserError(fmt::format("{}: key '{}' given twice", where, item.substr(0, eq)));
    }
    pos = end + 1;
  }
  return out;
}

std::string to_kv(const nlohmann::json& object) {
  std::string out;
  for (const auto& [k, v] : object.items()) {
    std::string value;
    if (v.is_string())
      value = v.get<std::string>();
    else if (v.is_number_integer())
      value = std::to_string(v.get<std::int64_t>());
    else
      value = fmt::format("{}", v.get<double>());
    out += (out.empty() ? "" : ",") + k + "=" + value;
  }
  return out;
}

}  // namespace k3tune
