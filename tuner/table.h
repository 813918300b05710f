// Tuning tables: the JSON document `k3tune tune` writes for the runtime (configs/schema/
// tuning-table.schema.json is the contract), its validation against that schema (valijson) and
// the table's own invariants, and the readable forms behind `k3tune table show | validate | diff`.
//
// The table contract itself (format and ABI versions, shape classes, parameter ranges, the rule
// for a shape the table lacks) is k3k/table_rules.h, shared with the loader; this module writes,
// shows and validates tables by it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/shape_rules.h"
#include "tuner/target_facts.h"
#include "tuner/tuning.h"

namespace k3tuner {

// The shape class of an op's shape on a path as JSON ({"path": ..., keys of
// k3k::rules::shape_class}).
nlohmann::json shape_class(const std::string& op, const std::string& path,
                           const nlohmann::json& shape);
std::string entry_id(const std::string& op, const nlohmann::json& shape_class);

struct TableEntry {
  std::string op;
  nlohmann::json shape;
  std::string session;
  const TuneResult* result = nullptr;
  const SearchSpace* space = nullptr;
  std::string unit;
  std::string path;  // the layer measured (the chosen one when the space tunes the path)
};

struct TableSource {
  std::string objective;  // time | instructions | synthetic
  bool proxy = false, forced_emulated = false;
  std::vector<std::string> run_uuids;
  std::string command, target, build_hash, board_name, model;
};

// The entries' measured landscapes per (op, path), what a rule is fitted on: every measured,
// unrejected configuration of each entry's session (on the entry's layer) with its mean.
struct RuleGroup {
  std::string op, path;
  std::vector<ShapeLandscape> shapes;
  std::map<std::string, nlohmann::json> params_of;  // configuration key -> its table parameters
};
std::vector<RuleGroup> rule_groups(const std::vector<TableEntry>& entries);
// A rule is fitted for a group of at least this many shapes in at least two classes.
inline constexpr std::size_t kMinRuleShapes = 3;

// The table; "rules" holds a fitted rule (shape_rules.h) for every group rule_groups finds big
// enough.
nlohmann::json make_table(const TargetFacts& target, const TableSource& source,
                          const std::vector<TableEntry>& entries,
                          const nlohmann::json& gates = nlohmann::json::object());

// `table validate`: the JSON Schema's messages (with their JSON pointer; at most kMaxProblemLines
// printed, all counted) and the kernel library loader's verdict on the table, checked for its own
// board (k3k::TuningTable::parse with no running board): the first problem that makes a kernel
// refuse the table, or none. Valid when both are empty.
inline constexpr std::size_t kMaxProblemLines = 20;
struct TableCheck {
  std::vector<std::string> problems;  // schema messages, the first kMaxProblemLines
  std::size_t schema_problems = 0;    // all of them
  std::string loader;                 // the loader's one-line refusal, empty when it loads
  bool valid() const { return schema_problems == 0 && loader.empty(); }
  // What `table validate` prints: the schema lines, a count of the rest, "loader: ...".
  std::vector<std::string> lines() const;
};
TableCheck validate_table(const nlohmann::json& table, const std::string& schema_file);

// `table show`: one line per entry (op, class, parameters, speed-up with CI), gates, board.
std::string show_table(const nlohmann::json& table);
// `table diff A B`: entries added, removed, and changed (parameters, evidence), and board changes.
std::string diff_tables(const nlohmann::json& a, const nlohmann::json& b);

// `table explain`: what the kernel library's loader gives `op` at `shape` on layer `path` (every
// path the table has for the op when empty), and why: the entry of the shape's own class, the
// leaf of the op's fitted rule (with the decisions that led there), the nearest class by the
// missing-shape rule (with its distance), or the kernel defaults. The loader
// itself decides (k3k::TuningTable::find); this only says which rule it applied. Throws UserError
// on a table the loader refuses, an unknown op or path, or a shape key the op does not have.
struct ShapeExplanation {
  std::string path;                    // the layer asked about
  nlohmann::json shape_class;          // the shape's own class
  std::string how;                     // "entry" | "rule" | "nearest" | "defaults"
  std::string entry_id;                // the entry used ("" for the defaults)
  nlohmann::json params;               // its parameters (empty for the defaults)
  double distance = 0;                 // nearest: sum of |log2 ratio| over the class keys
  std::vector<std::string> decisions;  // rule: each split taken, e.g. "n 5000 >= 3072"
  nlohmann::json to_json() const;
};
std::vector<ShapeExplanation> explain_shape(const nlohmann::json& table, const std::string& op,
                                            const std::string& path,
                                            const std::map<std::string, std::int64_t>& shape);

// Reads and parses a table file (UserError naming the file on I/O or JSON errors).
nlohmann::json read_table(const std::string& path);

}  // namespace k3tuner
