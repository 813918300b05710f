#include "harness/runner/args.h"

#include <stdexcept>

#include "harness/runner/errors.h"
#include "k3k/table_rules.h"

namespace k3runner {

KeySpec table_key(std::string_view op, std::string name, std::string help, std::optional<std::string> default_value,
                  const std::vector<std::string>& microkernel_choices) {
  const k3k::rules::OpRules* rules = k3k::rules::find_op(op);
  const k3k::rules::ParamRule* rule = rules == nullptr ? nullptr : rules->param(name);
  if (rule == nullptr) throw std::logic_error("table_key: the table rules declare no " + std::string(op) + " " + name);
  if (rule->microkernel) {
    std::vector<std::string> choices = {"auto"};
    choices.insert(choices.end(), microkernel_choices.begin(), microkernel_choices.end());
    return enum_key(std::move(name), std::move(help), default_value.value_or("auto"), std::move(choices));
  }
  if (!rule->words.empty()) {
    return enum_key(std::move(name), std::move(help), default_value.value_or(std::string(rule->words.front())),
                    std::vector<std::string>(rule->words.begin(), rule->words.end()));
  }
  KeySpec k = int_key(std::move(name), std::move(help), std::move(default_value),
                      rule->zero_is_automatic ? 0 : rule->min, rule->max);
  k.multiple_of = rule->multiple_of;
  return k;
}

std::map<std::string, std::string> parse_kv_list(const std::string& text, const std::string& what) {
  try {
    return k3params::parse_kv_list(text, what);
  } catch (const k3params::ParamError& e) {
    throw UsageError(e.what());
  }
}

KeyValues::KeyValues(const std::vector<KeySpec>& specs, const std::map<std::string, std::string>& given,
                     const std::string& what, bool is_shape) {
  try {
    values_ = k3params::normalise(specs, given, what);
  } catch (const k3params::ParamError& e) {
    if (is_shape && e.kind == k3params::ParamError::Kind::kOutOfRange) throw UnsupportedShape(e.what());
    throw UsageError(e.what());
  }
}

const nlohmann::json& KeyValues::at(const std::string& name) const {
  const auto it = values_.find(name);
  if (it == values_.end()) throw std::logic_error("KeyValues: undeclared key " + name);
  return *it;
}

}  // namespace k3runner
