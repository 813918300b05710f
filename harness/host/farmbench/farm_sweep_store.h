// The farm sweep's rows in the results database (schema: harness/host/store/database.cpp, migration 5
// -> 6): farm_sweep_cells(sweep_uuid, cell_index, attempt) records every hand-out of a cell to a
// board and how it ended, so a moved or re-measured cell can be traced; and the annotation of a
// batch measured while its board throttled or rebooted.
#pragma once

#include <string>

#include "harness/host/store/sqlite.h"

namespace k3farmbench {

struct SweepCellRow {
  std::string sweep_uuid;
  int cell_index = 0;
  int attempt = 0;
  std::string board, run_uuid, cell_key;
  std::string outcome;  // measured | failed | skipped | moved | disturbed | unmeasured
  std::string reason;
  std::string shard;  // "i/n"
};
void insert_sweep_cell(k3store::Connection& c, const SweepCellRow& row);

// Every process of `run_uuid` is marked disturbed and its aggregates failed with `reason` (the
// samples stay; a re-measurement replaces the figures). Returns the processes marked.
int mark_run_disturbed(k3store::Connection& c, const std::string& run_uuid,
                       const std::string& reason);

// Whether the cell has an ok aggregate written by `run_uuid`.
bool run_measured_cell(k3store::Connection& c, const std::string& run_uuid,
                       const std::string& cell_key);

std::int64_t sample_count(k3store::Connection& c);

}  // namespace k3farmbench
