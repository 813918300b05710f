// `k3tune bench --farm` on a farm whose boards Slurm schedules ([farm] scheduler = "slurm"):
//
//   1. The farm is checked against the cluster first (slurm_validate.h); bad input submits nothing.
//   2. One job array is submitted (`sbatch --array --requeue --nodes=1` with the farm's partition,
//      GRES, constraint, reservation, account, QoS): one task per chosen board, task i measuring
//      shard i/n of the canonical cell list. Each task runs this k3tune (slurm_worker.h) on the
//      board Slurm allocated, into its own database <job dir>/job-<array>_<task>.db, its JSON
//      outcome in job-<array>_<task>.json. Slurm queues the tasks behind other users' jobs and
//      reservations, and a requeued task resumes its own database.
//   3. The controller polls squeue until its tasks have left the queue, merges every task's
//      database into the run's (`db merge`), and reads which cells each measured. Cells left
//      unmeasured (the task's board was drained for a fault, the task died) are submitted again as
//      a new array (`--cells`), up to `max_attempts` rounds; Slurm keeps drained boards out.
//   4. A Slurm controller that stops answering for [farm] slurm_timeout_s ends the run as a fault:
//      what the tasks committed is merged, the tasks still queued are named, and `--resume` (same
//      command, same database) waits for them, merges them and submits what is left.
// The job directory, the array script and the merge are slurm_jobs.h's, shared with the tuning
// campaign (slurm_tune.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/host/farmbench/farm_sweep.h"
#include "harness/host/slurm/slurm_client.h"
#include "harness/host/slurm/slurm_jobs.h"

namespace k3slurm {

struct SlurmBenchRequest {
  k3farmbench::FarmBenchRequest farm;  // farm file, --board/--tag, bench (database, --resume)
  std::string root, k3tune;            // the source root and this executable, for the jobs
  std::string targets_file;            // --targets given to this k3tune ("" : none)
  // The `bench` subcommand's own arguments as given, without --resume, --reservation, --shard and
  // --cells: every job runs them (with its cells and --resume added).
  std::vector<std::string> bench_args;
  std::string reservation;  // --reservation: overrides the farm file's
  double poll_s = 1;        // squeue polling interval
};

struct SlurmCell {
  std::size_t index = 0;
  std::string label;
  k3farmbench::CellStatus status = k3farmbench::CellStatus::kPending;
  std::string board, reason, task;
  double mean_ns = 0;
};

struct SlurmBenchOutcome {
  std::string farm_name, farm_source, job_dir;
  std::vector<std::string> job_options;  // what every sbatch got
  std::vector<SlurmTask> tasks;
  std::map<std::string, std::string> drained;  // board -> reason k3tune gave Slurm
  // What the tasks reported as the built-in farm does (bench --farm --json): board -> (fault,
  // reason) of each quarantine, and (board, run uuid) of each batch.
  std::map<std::string, std::pair<std::string, std::string>> quarantined;
  std::vector<std::pair<std::string, std::string>> runs;
  std::map<std::size_t, SlurmCell> cells;  // by canonical index
  std::size_t total_cells = 0;
  std::int64_t samples_before = 0, samples_after = 0;
  double wall_s = 0;
  std::string fault;  // Slurm stopped answering: what and which tasks were left
  int count(k3farmbench::CellStatus status) const;
};

SlurmBenchOutcome run_slurm_bench(const SlurmBenchRequest& rq, const SlurmClient& slurm);

}  // namespace k3slurm
