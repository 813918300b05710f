// Database maintenance behind `k3tune db`: export (CSV/JSON), merge of shard databases, the
// integrity check with the row counts it reports, and a consistent copy of a live database. Each
// lives in its own file; this header is their shared interface.
#pragma once

#include <cstdint>
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

// Rows of the measurement tables (what `db check` reports beside its problems).
struct RowCounts {
  std::int64_t builds = 0, runs = 0, cells = 0, processes = 0, samples = 0, aggregates = 0;
};
RowCounts result_row_counts(Connection& c);

// A consistent copy of the database (its WAL included) at `out_path`, which must not exist: what
// the next Slurm jobs start from while this one keeps writing.
void snapshot_database(Connection& c, const std::string& out_path);

}  // namespace k3store
