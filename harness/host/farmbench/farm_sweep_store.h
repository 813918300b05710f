// The farm sweep's rows in the results database (schema: harness/host/store/database.cpp, migration
// 5
// -> 6): farm_sweep_cells(sweep_uuid, cell_index, attempt) records every hand-out of a cell to a
// board and how it ended, so a moved or re-measured cell can be traced; and the annotation of a
// batch measured while its board throttled or rebooted.
#pragma once

#include <set>
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

// Every cell key with an ok aggregate (what --resume leaves alone).
std::set<std::string> ok_aggregate_keys(k3store::Connection& c);

// The queue shared by controllers running one command on one database (--shared-queue): a cell
// is measured by the controller whose claim on it stands. claim_cell takes the cell unless another
// live controller holds it or it is done (a claim whose holder process is gone -- same host -- is
// taken over); finish_claim marks it done; drop_claim gives it back (left unmeasured here).
bool claim_cell(k3store::Connection& c, const std::string& queue_key, int cell_index,
                const std::string& sweep_uuid, std::string* holder = nullptr);
void finish_claim(k3store::Connection& c, const std::string& queue_key, int cell_index,
                  const std::string& sweep_uuid);
void drop_claim(k3store::Connection& c, const std::string& queue_key, int cell_index,
                const std::string& sweep_uuid);

}  // namespace k3farmbench
