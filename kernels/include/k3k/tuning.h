// Tuning tables at run time: what `k3tune tune` measured on a board, loaded by the kernel library.
//
// A table (JSON, schema "k3tune.tuning-table/2", published as
// configs/schema/tuning-table.schema.json) names a board fingerprint, a kernel ABI version and, per
// (op, shape class), the parameters that were fastest there; optionally, per (op, path), a rule
// fitted on those entries for other shapes. Loading validates it strictly against this build and
// the running machine; on any problem one warning line says what and where, and the built-in
// defaults stay in force: a bad table never crashes and never applies an out-of-range value or a
// table made for another board.
//
// Loading is done once (k3k::load_tuning_table, or K3_TUNING_TABLE at the first lookup) and is
// forbidden while kernels that consult the table run on other threads: load_tuning_table refuses
// (returns a problem, changes nothing) while an "auto" call is in flight. Lookups after loading are
// lock-free reads of an immutable table.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "k3k/dispatch.h"
#include "k3k/table_rules.h"

namespace k3k {

// The table contract (versions, ranges, shape classes, the missing-shape rule): k3k/table_rules.h.
using rules::kKernelAbiVersion;
using rules::kTuningTableSchema;

// What a table must have been measured on. Unknown facts are std::nullopt (no marchid on x86, no
// VLEN without RVV) and must be unknown in the table too.
struct BoardFingerprint {
  std::optional<std::string> marchid;  // "0x8000000058000001"-style, lower case
  std::optional<int> vlen_bits;
  int cpus = 1;
  std::string tcm_backend = "off";  // real | emulated | off
  int tcm_blocks = 0;
  std::int64_t tcm_block_bytes = 0;
};
// The running machine (CPUs this process may use, /proc/cpuinfo marchid, VLEN, the TCM backend
// k3k::tcm::open would choose and its geometry).
BoardFingerprint running_board();

using TuningValue = std::variant<std::int64_t, std::string>;

struct TuningEntry {
  std::string id;  // e.g. "linear_decode/rvv/k2048/n2048"
  std::string op;
  KernelPath path = KernelPath::kGeneric;
  std::map<std::string, std::int64_t> shape_class;  // k, n, m_bucket, head_dim, ..., ctx_bucket
  std::map<std::string, TuningValue> params;        // each within the range the kernel accepts
  bool hp = false;                                  // fp16 accumulation (.hp kernels)
  // A leaf of the op's rule (the table's "rules"), not a measured class: shape_class is empty and
  // id is "<op>/<path>/rule/<node>".
  bool from_rule = false;
};

// A table's rule for an (op, path): a decision tree over the shape class (rules::shape_class),
// fitted by the tuner on the measured entries, for shapes no entry has. A split node sends a
// class whose `key` is below `below` to `then_node`, else to `else_node` (children always come
// after their parent, so every walk ends); a leaf holds a whole configuration. Integer compares
// only: the tuner's prediction and the loader's are the same by construction.
struct TuningRule {
  struct Node {
    std::string key;  // split: a class key of the op; empty for a leaf
    std::int64_t below = 0;
    std::size_t then_node = 0, else_node = 0;
    std::size_t leaf = 0;  // leaf: index into leaves
  };
  std::string op;
  KernelPath path = KernelPath::kGeneric;
  std::vector<Node> nodes;
  std::vector<TuningEntry> leaves;
};
// One decision of a rule's walk, for `k3tune table explain`.
struct RuleStep {
  std::string key;
  std::int64_t value = 0, below = 0;
  bool took_below = false;
};

struct TcmDecodeGate {
  std::string use = "threshold";  // never | always | threshold
  std::optional<std::int64_t> k_min, b_min_bytes;
};

// gates/decode_path: which layer linear_decode takes for an N x K weight (pack_linear_auto packs
// the weights for it). use never: rvv; always: ime2; threshold: ime2 iff K >= k_min and
// N*K >= w_min (rules::decode_path_takes_ime2).
struct DecodePathGate {
  std::string use = "threshold";  // never | always | threshold
  std::int64_t k_min = 1, w_min = 0;
  bool takes_ime2(std::int64_t n, std::int64_t k) const {
    return rules::decode_path_takes_ime2(use, k_min, w_min, n, k);
  }
};

class TuningTable {
 public:
  // Parses and validates `text` for `board`. Returns null and sets `problem` (one line, naming the
  // field) on any problem. Never throws for bad input. With `board` null, the table's fingerprint
  // is checked for form only, not matched (`k3tune table validate`: the loader's verdict on a
  // table made for another machine).
  static std::unique_ptr<TuningTable> parse(std::string_view text, const BoardFingerprint* board,
                                            std::string& problem);
  static std::unique_ptr<TuningTable> parse(std::string_view text, const BoardFingerprint& board,
                                            std::string& problem) {
    return parse(text, &board, problem);
  }

  // The entry for op and path at this shape (keys as k3bench's shape keys: m, k, n, seq, ctx,
  // head_dim, q_heads, kv_heads): the entry of its shape class, else the leaf the op's rule gives
  // the class (when the table has a rule for the op and path), else rules::nearest_class (the
  // missing-shape rule), else null (the kernel defaults apply). Decided once per shape, not per
  // call.
  const TuningEntry* find(std::string_view op, KernelPath path,
                          const std::map<std::string, std::int64_t>& shape) const;
  // The leaf the (op, path) rule gives `shape`'s class, or null (no rule, or a class without the
  // keys it splits on). `steps`, when given, receives the decisions taken.
  const TuningEntry* apply_rule(std::string_view op, KernelPath path,
                                const std::map<std::string, std::int64_t>& shape,
                                std::vector<RuleStep>* steps = nullptr) const;
  const std::vector<TuningEntry>& entries() const { return entries_; }
  const std::vector<TuningRule>& rules() const { return rules_; }
  const std::optional<TcmDecodeGate>& tcm_decode_gate() const { return tcm_gate_; }
  const std::optional<DecodePathGate>& decode_path_gate() const { return decode_path_gate_; }

 private:
  std::vector<TuningEntry> entries_;
  std::vector<TuningRule> rules_;                          // at most one per (op, path)
  std::unordered_map<std::string, std::size_t> by_class_;  // op/path/class key -> entry
  std::optional<TcmDecodeGate> tcm_gate_;
  std::optional<DecodePathGate> decode_path_gate_;
};

// The shape class of `shape` for `op` (rules::shape_class).
inline std::map<std::string, std::int64_t> tuning_shape_class(
    std::string_view op, const std::map<std::string, std::int64_t>& shape) {
  return rules::shape_class(op, shape);
}

struct TableLoad {
  bool loaded = false;
  std::string source;   // file path, or "" when none was asked for
  std::string problem;  // why it was refused (empty when loaded or none asked for)
  std::size_t entries = 0;
};

// Loads `path` as the process's table (replacing any earlier one), validated for running_board().
// On a problem: one warning line on stderr ("k3k: tuning table <path>: ..."), the previous table
// (or none) stays, and the result says why. Refused while an "auto" call is running.
TableLoad load_tuning_table(const std::string& path);
// Drops the process's table (defaults everywhere). Same restriction as loading.
void clear_tuning_table();
// The process's table, or null. The first call with no table loaded yet reads K3_TUNING_TABLE.
const TuningTable* active_tuning_table();
// What happened at the last load (including the K3_TUNING_TABLE one).
TableLoad last_table_load();

// Held by "auto" entry points while they run (loading is refused meanwhile).
class TuningTableUse {
 public:
  TuningTableUse();
  ~TuningTableUse();
  TuningTableUse(const TuningTableUse&) = delete;
  TuningTableUse& operator=(const TuningTableUse&) = delete;
  const TuningTable* table() const { return table_; }

 private:
  const TuningTable* table_;
};

}  // namespace k3k
