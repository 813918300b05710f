// The k3tune results database: opening (with validation before anything is written), pragmas
// (WAL, busy timeout, foreign keys) and schema migrations through PRAGMA user_version.
//
// Identity of rows is natural, not autoincrement, so merging shard databases is idempotent:
//   builds(build_hash = SHA-256 of the k3bench binary), runs(run_uuid),
//   cells(cell_key = SHA-256 of target, op, shape, params, build hash, measurement settings),
//   processes(run_uuid, cell_key, process_index), samples(+ rep_index), aggregates(run_uuid,
//   cell_key).
#pragma once

#include <memory>
#include <string>

#include "harness/host/store/sqlite.h"

namespace k3store {

constexpr int kApplicationId = 0x4B33544E;  // "K3TN" in the SQLite header (offset 68)
constexpr int kSchemaVersion = 10;

enum class OpenMode {
  kCreateOrUpdate,  // create the file (and its folder) if missing, migrate an older schema
  kReadOnly,        // must exist and be current; nothing is ever written
};

// Validates that `path` is an intact k3tune database (or absent/empty in kCreateOrUpdate mode)
// BEFORE any write, then applies pragmas and migrations in one transaction. Throws StoreError with
// a one-line message naming the file on: not SQLite, another application's database, a newer
// schema, damage found by quick_check.
std::unique_ptr<Connection> open_database(const std::string& path, OpenMode mode);

// The one way a command opens its database for writing: the parent folder created, the file
// validated, WAL and the busy timeout set, the schema migrated (open_database, kCreateOrUpdate).
std::unique_ptr<Connection> open_for_writing(const std::string& path);

}  // namespace k3store
