// Shape keys and tunable parameters of the runner's ops: their declaration (type, range or
// choices, default), the "k=v,k=v" text form used on command lines, and normalisation of given
// values into one canonical typed JSON object (defaults filled, every value checked), so that one
// configuration has exactly one form -- on the runner's side and on k3tune's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace k3params {

struct ParamSpec {
  enum class Type { kInt, kFloat, kEnum };
  std::string name;
  Type type = Type::kInt;
  std::string help;
  std::optional<std::string> default_value;  // none: the key is required
  std::int64_t min = 1;                      // kInt range, inclusive
  std::int64_t max = 1 << 30;
  std::int64_t multiple_of = 1;              // kInt: nonzero values must be multiples of this
  std::vector<std::string> choices;  // kEnum

  // The catalog form published by `k3bench --list-ops --json`:
  //   {"name", "type": "int"|"float"|"enum", "help", "required", "default"?, "range"?: [min, max],
  //    "multiple_of"?: n (nonzero values; absent: 1), "choices"?: [...]}
  nlohmann::json to_json() const;
  // Throws ParamError (kind kCatalog) when `j` is not in that form.
  static ParamSpec from_json(const nlohmann::json& j);
};

ParamSpec int_param(std::string name, std::string help, std::optional<std::string> default_value,
                    std::int64_t min, std::int64_t max);
ParamSpec float_param(std::string name, std::string help, std::optional<std::string> default_value);
ParamSpec enum_param(std::string name, std::string help, std::string default_value,
                     std::vector<std::string> choices);

// Every message is one line that starts with the `where` given by the caller (an option name,
// "file:line", ...). The kind lets each side map it to its own exit code.
struct ParamError : std::invalid_argument {
  enum class Kind {
    kSyntax,      // not "k=v,k=v", or a key given twice
    kUnknownKey,  // a key the spec list does not declare
    kMissing,     // a required key without a value
    kMalformed,   // not an integer / number / one of the choices
    kOutOfRange,  // an integer outside [min, max]
    kCatalog,     // a catalog entry that is not a ParamSpec
  };
  ParamError(Kind kind, const std::string& message) : std::invalid_argument(message), kind(kind) {}
  Kind kind;
};

using TextValues = std::map<std::string, std::string>;

// "a=1,b=x" -> {a: "1", b: "x"}; the empty string is the empty map.
TextValues parse_kv_list(std::string_view text, std::string_view where);

// Typed JSON object with one entry per spec (given value or default), every value checked.
nlohmann::json normalise(const std::vector<ParamSpec>& specs, const TextValues& given,
                         std::string_view where);

// Typed JSON object -> "k=v,k=v" (keys in the object's order; floats in their shortest exact form,
// so the text parses back to the same values).
std::string to_kv(const nlohmann::json& object);
// One value in that form ("2", "0.25", "rowmajor").
std::string value_text(const nlohmann::json& value);

}  // namespace k3params
