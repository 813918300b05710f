// `k3tune bench --farm`: the sweep's cells spread over a farm's healthy boards.
//
//   1. The grid is expanded and validated first (the catalog of the first board's runner); bad
//      input changes nothing. --shard i/n keeps its share of the canonical cell list (shard.h).
//   2. One thread per chosen board: lease (lease.h), prepare (deploy once per build hash + probe),
//      record the board's runner as a build. A board another controller holds is waited for (up
//      to `lease_wait_s`, and only while this run has cells left); a board under a quarantine an
//      earlier run recorded is left alone (farm.h). A board that cannot be leased or prepared
//      takes no cells (quarantined, or reported with the lease's reason).
//   3. Each thread takes batches of up to `cells_per_probe` cells from a shared queue and measures
//      them as one interleaved sweep on its board (one run per batch; cell identity = board + op +
//      shape + params + build + settings). Every process is handed to the controller's one
//      database writer as it finishes (database_writer.h: committed in order, in batches, within
//      about 50 ms); a cell is marked done only by writes made after its samples and aggregate.
//   4. After each batch the board is probed again: a reboot quarantines it, throttling marks the
//      batch's processes disturbed (kept, not counted); either way the batch's cells go back to
//      the queue and are measured again. A board fault during a batch (ssh gone, repeated
//      timeouts) quarantines the board; the batch's cells not finished go back to the queue for
//      the other boards. A cell is handed out at most `max_attempts` times.
// With `resume`, a cell already measured on any chosen board (same build and settings) is
// skipped, and a board adopts its own interrupted processes of a cell (sweep.h). With
// `shared_queue`, cells are claimed in the database before a board measures them (see above).
// A failure of the controller itself (the database busy past its timeout, descriptors or
// processes exhausted, an exception from k3tune's code) stops every board thread and throws
// k3farm::ControllerFailure; no board is quarantined for it and committed samples stay. Before any
// board is touched the process's open-file limit is checked against the boards chosen
// (open_files.h): UserError naming RLIMIT_NOFILE when they do not fit.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "harness/host/bench/bench_session.h"
#include "harness/host/farm/farm.h"
#include "harness/host/farmbench/cell_status.h"
#include "harness/host/farmbench/shard.h"
#include "harness/host/store/database_writer.h"

namespace k3farmbench {

struct FarmBenchRequest {
  k3bench::BenchRequest
      bench;         // grid, settings, process plan, timeout, resume (no baseline runner)
  std::string farm;  // farm file, "local", or "" (default choice: farm.h)
  std::vector<std::string> boards;  // by name (empty: all)
  std::vector<std::string> tags;    // every tag required
  Shard shard;
  int cells_per_probe = 8;
  int max_attempts = 3;
  double lease_wait_s = 600;  // how long a board held by another controller is waited for
  // Controllers running this same command on this same database share one queue: each takes a
  // cell only after claiming it there (farm_queue_claims); a cell another live controller claimed
  // or finished is "skipped" here. A job array's jobs balance themselves this way.
  bool shared_queue = false;
  k3farm::TransportFactory transports;  // how boards are reached (empty: the inventory's kinds)
};

struct FarmCellResult {
  std::size_t index = 0;  // in the canonical cell list
  k3bench::CellSpec spec;
  std::string board, run_uuid, cell_key;  // where it was measured last
  CellStatus status = CellStatus::kPending;
  std::string reason;
  int attempts = 0;
  std::vector<std::string> history;  // "b1: moved (board b1: unreachable ...)", ...
  k3store::AggregateRecord aggregate;
  bool has_aggregate = false;
};

struct FarmBenchOutcome {
  std::string sweep_uuid;  // the farm run: leases, quarantines, probes, farm_sweep_cells
  std::string farm_name, farm_source;
  std::vector<std::string> boards;            // chosen
  std::map<std::string, std::string> unused;  // board -> why it took no cells (lease)
  std::map<std::string, k3farm::QuarantineEntry> quarantined;
  std::vector<std::pair<std::string, std::string>> runs;  // (board, run_uuid) per batch
  std::vector<FarmCellResult> cells;                      // this shard's cells, canonical order
  std::size_t total_cells = 0;                            // before sharding
  std::int64_t samples_before = 0, samples_after = 0;
  int processes_run = 0, processes_failed = 0;
  k3store::WriteLatency writes;  // the database writer's figures
  double wall_s = 0;
  int count(CellStatus status) const;
};

FarmBenchOutcome run_farm_bench(const std::string& root, const FarmBenchRequest& request);

}  // namespace k3farmbench
