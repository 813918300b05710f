// The farm sweep's rows in the results database (schema: database.cpp, migrations 5 -> 6 and
// 7 -> 8): farm_sweep_cells(sweep_uuid, cell_index, attempt) records every hand-out of a cell to a
// board and how it ended, so a moved or re-measured cell can be traced; the annotation of a batch
// measured while its board throttled or rebooted; and the claims of the queue that controllers
// running one command on one database share (farm_queue_claims, --shared-queue).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "harness/host/store/sqlite.h"

namespace k3store {

struct SweepCellRow {
  std::string sweep_uuid;
  int cell_index = 0;
  int attempt = 0;
  std::string board, run_uuid, cell_key;
  std::string outcome;  // measured | failed | skipped | moved | disturbed | unmeasured
  std::string reason;
  std::string shard;  // "i/n"
};
void insert_sweep_cell(Connection& c, const SweepCellRow& row);

// Every process of `run_uuid` is marked disturbed and its aggregates failed with `reason` (the
// samples stay; a re-measurement replaces the figures). Returns the processes marked.
int mark_run_disturbed(Connection& c, const std::string& run_uuid, const std::string& reason);

// Whether the cell has an ok aggregate written by `run_uuid`.
bool run_measured_cell(Connection& c, const std::string& run_uuid, const std::string& cell_key);

// Every cell key with an ok aggregate (what --resume leaves alone).
std::set<std::string> ok_aggregate_keys(Connection& c);

// A controller's claim on a cell of a shared queue.
struct QueueClaimRow {
  std::string queue_key;  // SHA-256 of the farm and the command's canonical cell list
  int cell_index = 0;
  std::string sweep_uuid, holder_host;
  std::int64_t holder_pid = 0;
  std::string holder_start;  // "<boot_id>:<start ticks>" of the holder process (pid reuse guard)
  std::string state;         // taken | done
};
struct ClaimOutcome {
  bool taken = false;
  // Another sweep's claim found on the cell (taken over or not).
  std::optional<QueueClaimRow> other;
};
// Takes the cell for `mine` (state 'taken') in one transaction, unless another sweep's claim on it
// stands: `may_take_over` judges that claim (one that is done, or whose holder lives, stands).
// A claim of mine.sweep_uuid is mine already.
ClaimOutcome claim_queue_cell(Connection& c, const QueueClaimRow& mine,
                              const std::function<bool(const QueueClaimRow&)>& may_take_over);
void finish_claim(Connection& c, const std::string& queue_key, int cell_index,
                  const std::string& sweep_uuid);
void drop_claim(Connection& c, const std::string& queue_key, int cell_index,
                const std::string& sweep_uuid);

}  // namespace k3store
