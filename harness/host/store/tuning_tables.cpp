#include "harness/host/store/tuning_tables.h"

#include <fmt/format.h>

#include "harness/host/store/results.h"

namespace k3store {
namespace {

constexpr const char* kTableColumns =
    "t.table_id, t.created_at, t.sessions_json, t.path, t.table_json";

TuningTableRecord read_tuning_table(const Statement& s) {
  return {s.text(0), s.text(1), s.text(2), s.text(3), s.text(4)};
}

std::vector<TuningTableRecord> read_tuning_tables(Statement& s) {
  return read_rows(s, read_tuning_table);
}

}  // namespace

void insert_tuning_table(Connection& c, const TuningTableRecord& r) {
  c.run(
      "INSERT OR IGNORE INTO tuning_tables(table_id, created_at, sessions_json, path, table_json)"
      " VALUES (?1,?2,?3,?4,?5)",
      r.table_id, now_utc(), r.sessions_json, r.path, r.table_json);
}

std::vector<TuningTableRecord> tables_of_session(Connection& c, const std::string& session_id) {
  // A table can draw on several sessions (sessions_json).
  auto s = c.query(
      fmt::format(
          "SELECT {} FROM tuning_tables t WHERE EXISTS (SELECT 1 FROM json_each(t.sessions_json) s"
          " WHERE s.value = ?1) ORDER BY t.created_at",
          kTableColumns),
      session_id);
  return read_tuning_tables(s);
}

std::vector<TuningTableRecord> all_tuning_tables(Connection& c) {
  auto s = c.prepare(
      fmt::format("SELECT {} FROM tuning_tables t ORDER BY t.created_at, t.rowid", kTableColumns));
  return read_tuning_tables(s);
}

}  // namespace k3store
