// The tuning tables the tuner wrote (schema: database.cpp, migration 3 -> 4): one row per
// distinct table text, with the sessions behind its entries. The reports list a session's tables;
// `k3tune publish` shows every table's versions over time.
#pragma once

#include <string>
#include <vector>

#include "harness/host/store/sqlite.h"

namespace k3store {

struct TuningTableRecord {
  std::string table_id;       // SHA-256 of table_json
  std::string created_at;     // set on insert
  std::string sessions_json;  // JSON list of session ids
  std::string path;           // where it was written ("" when not recorded)
  std::string table_json;
};

// The first row of a table text stays (the same table written again changes nothing).
void insert_tuning_table(Connection& c, const TuningTableRecord& r);
// The tables drawing on `session_id`, oldest first.
std::vector<TuningTableRecord> tables_of_session(Connection& c, const std::string& session_id);
// Every table, oldest first.
std::vector<TuningTableRecord> all_tuning_tables(Connection& c);

}  // namespace k3store
