// Database maintenance behind `k3tune db`: export (CSV/JSON), merge of shard databases, and the
// integrity check. Each lives in its own file; this header is their shared interface.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "harness/host/store/sqlite.h"

namespace k3store {

// Tables `db export` knows; "aggregates" is joined with its cell (target, op, shape, params,
// build).
const std::vector<std::string>& exportable_tables();
// format: "csv" or "json". Throws StoreError on an unknown table or format.
void export_table(Connection& c, const std::string& table, const std::string& format,
                  std::ostream& out);

// Merges shards into dest (created if missing). Every shard is validated before dest is touched;
// all inserts happen in one transaction; rows already present (same natural key) are skipped, so
// merging the same shard twice changes nothing. Returns rows added per table.
std::map<std::string, long long> merge_databases(const std::string& dest,
                                                 const std::vector<std::string>& shards);

// Integrity check: SQLite integrity_check, foreign_key_check, and k3tune invariants (samples per
// successful process = the run's repetitions, aggregate process counts). Empty when healthy.
std::vector<std::string> check_database(Connection& c);

}  // namespace k3store
