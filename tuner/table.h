// Tuning tables: the JSON document `k3tune tune` writes for the runtime (configs/schema/
// tuning-table.schema.json is the contract), its validation against that schema (valijson) and
// the table's own invariants, and the readable forms behind `k3tune table show | validate | diff`.
//
// Shape class (the key the runtime looks an entry up by): op + path + exact N and K; prefill also
// m_bucket, the smallest power of two >= M; attention ops head_dim, q_heads, kv_heads exactly and
// ctx_bucket (power of two >= the context). A shape the table lacks: for prefill, the same
// (op, path, n, k) with the nearest m_bucket (ties to the smaller); otherwise the built-in
// defaults -- parameters are never interpolated.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "target_facts.h"
#include "tuning.h"

namespace k3tuner {

inline constexpr const char* kTableSchemaId = "k3tune.tuning-table/1";
// The kernel library's parameter contract this tuner writes for (k3k::kKernelAbiVersion).
inline constexpr int kKernelAbi = 1;

// The shape class of an op's shape on a path (see above).
nlohmann::json shape_class(const std::string& op, const std::string& path, const nlohmann::json& shape);
std::string entry_id(const std::string& op, const nlohmann::json& shape_class);
std::int64_t power_of_two_at_least(std::int64_t x);

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

nlohmann::json make_table(const TargetFacts& target, const TableSource& source, const std::vector<TableEntry>& entries,
                          const nlohmann::json& gates = nlohmann::json::object());

// Problems with a table: schema violations (with their JSON pointer) and broken invariants
// (duplicate ids, a class that does not match its id, an unknown kernel ABI). Empty: valid.
std::vector<std::string> validate_table(const nlohmann::json& table, const std::string& schema_file);

// `table show`: one line per entry (op, class, parameters, speed-up with CI), gates, board.
std::string show_table(const nlohmann::json& table);
// `table diff A B`: entries added, removed, and changed (parameters, evidence), and board changes.
std::string diff_tables(const nlohmann::json& a, const nlohmann::json& b);

// Reads and parses a table file (UserError naming the file on I/O or JSON errors).
nlohmann::json read_table(const std::string& path);

}  // namespace k3tuner
