#include "args.h"

#include <stdexcept>

#include "errors.h"

namespace k3bench {

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

}  // namespace k3bench
