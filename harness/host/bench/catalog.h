// The runner's op catalog (`k3bench --list-ops --json`) on k3tune's side: validates ops, shape
// keys and parameters before anything is written, fills defaults, and gives every value its
// declared type, so one configuration has exactly one canonical form (and one cell key). The specs
// and the rules are the runner's own (harness/common/params), read back from what it publishes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/common/params/param_spec.h"
#include "harness/host/targets/target.h"

namespace k3bench {

struct OpSpec {
  std::string name, description;
  std::vector<k3params::ParamSpec> shape_keys, params;
  const k3params::ParamSpec* param(const std::string& name) const;  // null when not declared
};

class Catalog {
 public:
  explicit Catalog(const nlohmann::json& list_ops);
  // Runs the target's runner with --list-ops --json (UserError when it cannot).
  static Catalog from_target(const k3targets::Target& target);

  // UserError naming `where` and the known ops when unknown.
  const OpSpec& op(const std::string& name, const std::string& where) const;
  const std::vector<OpSpec>& ops() const { return ops_; }
  // Typed JSON object of all keys (defaults filled). UserError on unknown, missing or bad values.
  nlohmann::json normalise(const OpSpec& op, const std::map<std::string, std::string>& given,
                           bool shape, const std::string& where) const;

 private:
  std::vector<OpSpec> ops_;
};

// "k=v,k=v" -> map (UserError naming `where` on malformed items or duplicates).
std::map<std::string, std::string> parse_kv(const std::string& text, const std::string& where);
// Typed JSON object -> "k=v,k=v" for the runner command line.
inline std::string to_kv(const nlohmann::json& object) {
  return k3params::to_kv(object);
}

}  // namespace k3bench
