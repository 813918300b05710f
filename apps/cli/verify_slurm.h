// `k3tune table verify --farm F` where F's boards are scheduled by Slurm: each table is verified
// by one Slurm job (k3slurm::run_as_slurm_job) on the board that made it (or the boards --board
// and --tag name), and the job's output and exit status are the command's.
#pragma once

#include <string>
#include <vector>

#include "apps/cli/app_context.h"
#include "apps/cli/measuring_place.h"

namespace k3cli {

// False (nothing done) unless the farm is scheduled by Slurm and this process is not one of its
// jobs; then the verification ran as jobs, its output is printed and the exit code set. UserError
// for --reservation without a Slurm farm.
bool verify_on_slurm(const AppContext& ctx, const PlaceArgs& place,
                     const std::vector<std::string>& tables, const std::string& reservation);

}  // namespace k3cli
