// `k3tune bench --farm F` when F's boards are scheduled by Slurm ([farm] scheduler = "slurm"):
// the controller side (submit, wait, merge: slurm_bench.h) or, inside one of its jobs, the worker
// side (measure on the allocated board: slurm_worker.h), with their output.
#pragma once

#include <string>

#include "apps/cli/app_context.h"
#include "harness/host/farmbench/farm_sweep.h"

namespace k3cli {

// Runs the bench on Slurm when the farm asks for it and returns true; false for a built-in farm
// (then `reservation` must be empty: UserError naming --reservation).
bool bench_on_slurm(const AppContext& ctx, const k3farmbench::FarmBenchRequest& request,
                    const std::string& reservation);

// An A/B bench on a board (--baseline-runner/--baseline-build with --farm): on a Slurm farm, and
// not inside one of its jobs, the whole command runs as one Slurm job on a board of --board/--tag
// (both runners in the same rounds there), its output and exit code the command's; returns true.
// False for a built-in farm (UserError for --reservation there) or inside the job.
bool ab_bench_on_slurm(const AppContext& ctx, const k3farmbench::FarmBenchRequest& request,
                       const std::string& reservation);

}  // namespace k3cli
