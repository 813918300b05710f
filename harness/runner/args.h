// The runner's side of the shared parameter codec (harness/common/params): an op's declared shape keys
// and parameters, and the validated values of one command line, with k3bench's exit-code mapping
// (malformed input is a usage error; a shape size outside its range is an unsupported shape).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/common/params/param_spec.h"

namespace k3runner {

using KeySpec = k3params::ParamSpec;

// Declaration helpers (no default: the key is required).
inline KeySpec int_key(std::string name, std::string help, std::optional<std::string> default_value,
                       std::int64_t min, std::int64_t max) {
  return k3params::int_param(std::move(name), std::move(help), std::move(default_value), min, max);
}
inline KeySpec float_key(std::string name, std::string help, std::optional<std::string> default_value) {
  return k3params::float_param(std::move(name), std::move(help), std::move(default_value));
}
inline KeySpec enum_key(std::string name, std::string help, std::string default_value,
                        std::vector<std::string> choices) {
  return k3params::enum_param(std::move(name), std::move(help), std::move(default_value), std::move(choices));
}

// A parameter a tuning table may set: its type, range, multiple and words come from the table
// rules (k3k/table_rules.h), so `--list-ops`, the loader and the tuner's space checks agree. A
// microkernel parameter's choices are "auto" and the given compiled names (which must follow the
// rules' naming). Throws std::logic_error when the rules do not declare the parameter.
KeySpec table_key(std::string_view op, std::string name, std::string help, std::optional<std::string> default_value,
                  const std::vector<std::string>& microkernel_choices = {});

// Parses "a=1,b=x" (empty string allowed); duplicate or malformed items are usage errors.
std::map<std::string, std::string> parse_kv_list(const std::string& text, const std::string& what);

// Values of one key list after validation against its specs (defaults filled in).
class KeyValues {
 public:
  // Throws UsageError on an unknown key, a missing required key or a malformed value, and
  // UsageError for an out-of-range parameter or UnsupportedShape for an out-of-range shape size.
  KeyValues(const std::vector<KeySpec>& specs, const std::map<std::string, std::string>& given,
            const std::string& what, bool is_shape);

  std::int64_t integer(const std::string& name) const { return at(name).get<std::int64_t>(); }
  double number(const std::string& name) const { return at(name).get<double>(); }
  const std::string& text(const std::string& name) const { return at(name).get_ref<const std::string&>(); }
  const nlohmann::json& to_json() const { return values_; }

 private:
  const nlohmann::json& at(const std::string& name) const;
  nlohmann::json values_;
};

}  // namespace k3runner
