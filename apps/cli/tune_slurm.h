// `k3tune tune --farm F` where F's boards are scheduled by Slurm: the controller side
// (k3slurm::run_slurm_tune), printed like the built-in campaign's outcome plus the jobs.
#pragma once

#include <string>

#include "apps/cli/app_context.h"
#include "apps/cli/measuring_place.h"

namespace k3cli {

// What a tuning campaign on a Slurm farm takes beyond the built-in one.
struct SlurmShareArgs {
  std::string reservation;  // --reservation: the jobs run in this Slurm reservation
  std::string shard;        // --shard i/n (a job's share, set by the controller)
  std::string sessions;     // --sessions a,b (a later round's share, set by the controller)
  bool resume = false;      // --resume: wait for the jobs an interrupted Slurm campaign left
};

// Submits the campaign as Slurm jobs, waits, merges, writes the table through its last job;
// prints the outcome and sets the exit code (1: Slurm stopped answering, 3: no table).
void tune_on_slurm(const AppContext& ctx, const PlaceArgs& place, const SlurmShareArgs& share);

}  // namespace k3cli
