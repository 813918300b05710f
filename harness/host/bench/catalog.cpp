#include "harness/host/bench/catalog.h"

#include <fmt/format.h>

#include "harness/host/bench/user_error.h"

namespace k3bench {

const k3params::ParamSpec* OpSpec::param(const std::string& key) const {
  for (const auto& p : params)
    if (p.name == key) return &p;
  return nullptr;
}

Catalog::Catalog(const nlohmann::json& list_ops) {
  for (const auto& o : list_ops) {
    OpSpec op;
    op.name = o.at("name").get<std::string>();
    op.description = o.value("description", "");
    for (const auto& k : o.value("shape_keys", nlohmann::json::array()))
      op.shape_keys.push_back(k3params::ParamSpec::from_json(k));
    for (const auto& k : o.value("params", nlohmann::json::array()))
      op.params.push_back(k3params::ParamSpec::from_json(k));
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
  } catch (const std::exception& e) {  // json::exception or a malformed spec (ParamError)
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
  try {
    return k3params::normalise(
        shape ? op.shape_keys : op.params, given,
        fmt::format("{} ({} of op {})", where, shape ? "shape" : "params", op.name));
  } catch (const k3params::ParamError& e) {
    throw UserError(e.what());
  }
}

std::map<std::string, std::string> parse_kv(const std::string& text, const std::string& where) {
  try {
    return k3params::parse_kv_list(text, where);
  } catch (const k3params::ParamError& e) {
    throw UserError(e.what());
  }
}

}  // namespace k3bench
