// "k=v,k=v" lists for --shape and --params, validated against an op's declared keys.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace k3bench {

// Declaration of one shape key or tunable parameter.
struct KeySpec {
  enum class Type { kInt, kFloat, kEnum };
  std::string name;
  Type type = Type::kInt;
  std::string help;
  std::optional<std::string> default_value;  // no default: required
  std::int64_t min = 1;                       // kInt range (inclusive)
  std::int64_t max = 1 << 30;
  std::vector<std::string> choices;  // kEnum

  nlohmann::json to_json() const;
};

// Declaration helpers (no default: the key is required).
KeySpec int_key(std::string name, std::string help, std::optional<std::string> default_value,
                std::int64_t min, std::int64_t max);
KeySpec float_key(std::string name, std::string help, std::optional<std::string> default_value);
KeySpec enum_key(std::string name, std::string help, std::string default_value,
                 std::vector<std::string> choices);

// Parses "a=1,b=x" (empty string allowed); duplicate or malformed items are usage errors.
std::map<std::string, std::string> parse_kv_list(const std::string& text, const std::string& what);

// Values of one key list after validation against its specs (defaults filled in).
class KeyValues {
 public:
  // Throws UsageError on an unknown key, a missing required key or a malformed value, and
  // UsageError for an out-of-range parameter or UnsupportedShape for an out-of-range shape size.
  KeyValues(const std::vector<KeySpec>& specs, const std::map<std::string, std::string>& given,
            const std::string& what, bool is_shape);

  std::int64_t integer(const std::string& name) const;
  double number(const std::string& name) const;
  const std::string& text(const std::string& name) const;
  nlohmann::json to_json() const;

 private:
  const KeySpec& spec(const std::string& name) const;
  std::vector<KeySpec> specs_;
  std::map<std::string, std::string> values_;
};

}  // namespace k3bench
