// A search space (configs/spaces/*.toml): the knobs of one op with their values or ranges and
// defaults, derived quantities, constraints written as expressions over knobs, shape and target
// facts, and where timing the knobs means something. Enumerating it for a shape on a target gives
// the valid configurations; the space size before and after the constraints is what
// `k3tune tune --explain` prints.
//
//   [space]
//   op = "linear_decode"
//   meaningful_on = ["local", "ssh"]         # place kinds (local, ssh, qemu) where timing means something
//   [knobs.workers]  range = [1, "cpus"]     # bounds are expressions over facts
//   [knobs.tile_n]   values = [32, 64, 128]  default = 64
//   [knobs.tcm]      values = ["off", "on"]  default = "off"  emulated = "tcm_emulated"
//   [knobs.slab_rows] values = [0, 64, 128]  when = "tcm == tcm_on"   # else held at its default
//   [knobs.accumulate] values = ["int32", "fp16"]  needs = "allow-hp"  # others only with the flag
//   [derived] slab_bytes = "slab_rows * (k / 2 + k / 8)"
//   [constraints] rules = ["tcm_workers <= workers", "tcm == tcm_off || 2 * slab_bytes <= tcm_block_bytes"]
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/bench/catalog.h"
#include "tuner/expression.h"

namespace k3tuner {

// One configuration: knob name -> value (JSON integer or string).
using Config = nlohmann::json;
// Canonical text of a configuration ("k=v,..." in key order): its identity.
std::string config_key(const Config& config);

struct Knob {
  std::string name;
  bool measurement = false;                 // a measurement setting (path), not an op parameter
  std::vector<nlohmann::json> values;       // listed values (empty: a range)
  std::string range_lo, range_hi;           // range bounds (expressions) when values is empty
  bool pow2 = false;                        // range: powers of two only
  nlohmann::json default_value;             // value, or an expression string for ranges
  std::string when;                         // active only when this holds; else at its default
  std::string needs;                        // a flag without which only the default is a candidate
  std::string emulated;                     // a fact that, when nonzero, makes non-default values emulated
  int line = 0;
};

struct SpaceCounts {
  std::uint64_t product = 0;       // the cartesian product of the knobs' values (saturates at 2^64-1)
  bool enumerated = false;         // false: product over kMaxEnumerated, the counts below not taken
  std::uint64_t distinct = 0;      // after holding inactive knobs (`when`) at their defaults
  std::uint64_t valid = 0;         // after the constraints
  std::uint64_t excluded_by_flags = 0;  // values left out for a missing flag (e.g. --allow-hp)
};

// The most combinations a search enumerates (a space's product is counted without enumerating;
// beyond this, tuning refuses with a one-line error and --explain prints the product alone).
inline constexpr std::uint64_t kMaxEnumerated = 1'000'000;

class SearchSpace {
 public:
  // Parses a space file; UserError "file:line: key: what" on any problem.
  static SearchSpace load(const std::string& file);
  // The space file for an op in a directory (configs/spaces/<op>.toml).
  static SearchSpace for_op(const std::string& dir, const std::string& op);

  const std::string& op() const { return op_; }
  const std::string& file() const { return file_; }
  const std::vector<Knob>& knobs() const { return knobs_; }
  const std::vector<std::string>& meaningful_on() const { return meaningful_on_; }

  // Every op-parameter knob and value must be one the runner accepts (its --list-ops catalog), and
  // every name an expression uses must be a knob, a fact or a choice constant: UserError otherwise.
  void check(const k3bench::OpSpec& op, const Variables& fact_names) const;

  // The knob values for these facts (ranges expanded; UserError when a bound does not evaluate, or
  // when the product is over kMaxEnumerated).
  std::vector<std::vector<nlohmann::json>> values(const Variables& facts) const;
  // How many values each knob has, and their product, counted without expanding anything.
  std::vector<std::uint64_t> value_counts(const Variables& facts) const;
  std::uint64_t product(const Variables& facts) const;
  // The counts --explain prints: the product always, the rest when it can be enumerated.
  SpaceCounts count(const Variables& facts, const std::set<std::string>& flags) const;
  Config defaults(const Variables& facts) const;
  // The valid configurations for these facts and flags, in a fixed order (knobs in file order,
  // first knob slowest), the defaults first when valid.
  std::vector<Config> enumerate(const Variables& facts, const std::set<std::string>& flags,
                                SpaceCounts* counts = nullptr) const;
  // Facts plus the configuration's knobs (enum knobs as their index) and derived quantities.
  Variables bind(const Config& config, const Variables& facts) const;
  // Whether the configuration uses a value that is emulated on these facts (e.g. TCM blocks that
  // are ordinary memory): timing it says nothing about a board.
  std::vector<std::string> emulated_knobs(const Config& config, const Variables& facts) const;
  // Derived quantities (name, expression, in order) and constraint rules (expression, line).
  const std::vector<std::pair<std::string, std::string>>& derived() const { return derived_; }
  const std::vector<std::pair<std::string, int>>& rules() const { return rules_; }

 private:
  std::string op_, file_;
  std::vector<std::string> meaningful_on_;
  std::vector<Knob> knobs_;
  std::vector<std::pair<std::string, std::string>> derived_;  // name, expression (in order)
  std::vector<std::pair<std::string, int>> rules_;            // expression, line

  std::pair<std::int64_t, std::int64_t> range_bounds(const Knob& knob, const Variables& facts) const;
  void refuse_over_cap(const Variables& facts) const;
};

}  // namespace k3tuner
