// The tuning-table contract, in one place: the table format and kernel ABI versions, the ops a
// table may tune with their shape-class keys, every tunable parameter's type and range with the
// rules that tie parameters together, microkernel contract names, the shape class of a shape and
// the rule for a shape no entry covers.
//
// Everything that reads or writes tables uses these rules and no copy of them: the loader
// (k3k::TuningTable), k3bench's parameter catalog (`k3bench --list-ops --json` ranges of the
// tunable parameters), the tuner (shape classes, entry ids, the version it writes), the search
// space checks and `k3tune table validate`. The library is the standard library alone, so it sits
// below all of them (target k3::table_rules).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace k3k::rules {

// Bump when a tunable parameter's meaning or accepted range changes, or a weight or KV-cache layout
// changes: a table written for another ABI is refused (kernels/README.md, "Kernel ABI").
// 2: K in the KV cache is stored in transposed key blocks (k3k/kv_cache.h), which changes what the
//    attention parameters were tuned against.
// 3: the packed W4B64 layouts hold each row's (beta, scale) pair as fp16, interleaved
// (k3k/w4b64.h):
//    a weight tile is 11% fewer bytes, which moves every Linear and TCM parameter's optimum.
inline constexpr int kKernelAbiVersion = 3;
// 2: tables may carry "rules" (a decision tree per op and path for shapes without an entry).
// A /1 table (no rules) is still read.
inline constexpr std::string_view kTuningTableSchema = "k3tune.tuning-table/2";
inline constexpr std::string_view kTuningTableSchemaWithoutRules = "k3tune.tuning-table/1";

// Every layer's packed row tile is a multiple of this many rows (generic and ime2: 32; rvv: a
// multiple of 16), so a TCM slab of such a multiple can hold whole tiles of any layer.
inline constexpr std::int64_t kRowTileQuantum = 16;

using Value = std::variant<std::int64_t, std::string>;

struct ParamRule {
  std::string_view name;
  std::int64_t min = 0, max = 0;        // integers, inclusive
  std::int64_t multiple_of = 1;         // integers: 0 excepted where zero_is_automatic
  bool zero_is_automatic = false;       // 0 means "the kernel chooses" and is always accepted
  std::vector<std::string_view> words;  // non-empty: a word parameter with exactly these values
  // A microkernel contract name: "auto", or "<op>-...-<layer>" in [a-z0-9_.-]{1,64} (see
  // microkernel_name_problem); the loader also checks it against the layer's own list when that
  // layer is compiled in.
  bool microkernel = false;
  // When the same configuration gives this other parameter a nonzero value, this one (when
  // nonzero) must be a multiple of it (slab_rows and weight_rows: whole packed tiles per slab).
  std::string_view multiple_of_param;
};

struct OpRules {
  std::string_view op;
  std::vector<ParamRule> params;
  std::vector<std::string_view> class_keys;  // exactly the keys an entry's class has (besides path)
  const ParamRule* param(std::string_view name) const;
};

// The ops a table may tune, and the rules of one (null: no table may tune it).
const std::vector<OpRules>& tunable_ops();
const OpRules* find_op(std::string_view op);

// Problems are one line without the location or the value, so the caller words both its own way
// ("…/params/tile_n: 5000 is outside [1, 4096]"; a table's text is escaped by the loader before it
// is printed). Empty: the value is accepted.
std::string int_problem(const ParamRule& rule, std::int64_t value);  // "is outside [1, 4096]"
std::string word_problem(const ParamRule& rule,
                         std::string_view value);  // "is not one of off, on, auto"
// `name` for `op` on `layer` ("generic", "rvv", "ime2"): "auto", or a contract name of that op and
// layer (prefix "<op>-", suffix "-<layer>", characters [a-z0-9_.-], at most 64).
std::string microkernel_name_problem(std::string_view op, std::string_view layer,
                                     std::string_view name);
// The rules that tie parameters of one configuration together (multiple_of_param; for
// linear_decode, accumulate=fp16 only on ime2). `params` holds the configuration's values.
struct TogetherProblem {
  std::string param;  // the parameter the problem is reported at
  std::string why;    // the whole message, value included (values here are integers or words)
  explicit operator bool() const { return !why.empty(); }
};
TogetherProblem together_problem(const OpRules& op, std::string_view layer,
                                 const std::map<std::string, Value>& params);

// Shape classes: the key an entry is stored and looked up by. Integer shape keys exactly; prefill
// M as m_bucket and attention seq/ctx as ctx_bucket, each the next power of two (at most 2^40).
std::int64_t power_of_two_at_least(std::int64_t x);
std::map<std::string, std::int64_t> shape_class(std::string_view op,
                                                const std::map<std::string, std::int64_t>& shape);
// A class value the key cannot take (values in [1, 2^40]; k a multiple of 64, the W4B64 block;
// buckets powers of two). Empty: accepted.
std::string class_value_problem(std::string_view key, std::int64_t value);
// "op/path/k2048/n2048": an entry's id, and the key the loader indexes classes by.
std::string entry_id(std::string_view op, std::string_view layer,
                     const std::map<std::string, std::int64_t>& cls);

// The rule for a shape without its own entry: the entry of the same op and path whose class has
// the same keys and the smallest sum of |log2 ratio| over them (ties: the smaller sum of values);
// none such: the kernel defaults. Parameters are never interpolated. Returns the index into
// `classes` of the entry to use, or nullopt.
inline constexpr std::string_view kMissingShapeRule =
    "the nearest class of the same op and path (smallest sum of |log2| ratios over the same keys, "
    "ties to the "
    "smaller shape), else the kernel defaults; never interpolated";
std::optional<std::size_t> nearest_class(
    const std::map<std::string, std::int64_t>& wanted,
    const std::vector<const std::map<std::string, std::int64_t>*>& classes);

// Rules (a table's "rules"): a split's threshold is a class value, and a rule is small.
inline constexpr std::int64_t kRuleThresholdMax = std::int64_t{1} << 40;
inline constexpr std::size_t kRuleNodesMax = 4096;

// Gates (a table's "gates" object): the ranges their thresholds may take, and the decode_path
// rule itself, so the tuner fits exactly the rule the loader applies.
inline constexpr std::int64_t kGateKMinMax = std::int64_t{1} << 30;      // k_min in [1, 2^30]
inline constexpr std::int64_t kGateBytesMinMax = std::int64_t{1} << 40;  // b_min_bytes in [0, 2^40]
inline constexpr std::int64_t kGateWeightsMinMax = std::int64_t{1} << 50;  // w_min in [0, 2^50]
// decode_path: linear_decode on the ime2 layer (true) or the rvv layer for an N x K weight. `use`
// is never (rvv), always (ime2) or threshold: ime2 iff K >= k_min and N*K >= w_min. Decode cost
// is a per-weight term plus per-row terms (row tiles, epilogue), spread over K weights, and
// per-call ones (activation staging, block terms), spread over N*K: the layers pay these
// differently, so K and the weight count are what the choice turns on (docs/tuning-and-tables.md).
bool decode_path_takes_ime2(std::string_view use, std::int64_t k_min, std::int64_t w_min,
                            std::int64_t n, std::int64_t k);

}  // namespace k3k::rules
