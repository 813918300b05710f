// The request for one k3tune command run as one Slurm job (k3slurm::run_as_slurm_job), filled
// from this invocation: the same root, k3tune, targets file, database and global flags.
#pragma once

#include <string>
#include <vector>

#include "apps/cli/app_context.h"
#include "harness/host/slurm/slurm_command.h"

namespace k3cli {

k3slurm::SlurmCommandRequest slurm_job_request(const AppContext& ctx, const std::string& farm_file,
                                               const std::string& subcommand,
                                               std::vector<std::string> args,
                                               std::vector<std::string> boards,
                                               const std::string& reservation);

// Runs it, prints its output as the command's own and sets the exit code to the job's (1 with a
// line on stderr when Slurm stopped answering or the job did not end on its own).
void run_and_relay(const k3slurm::SlurmCommandRequest& rq);

}  // namespace k3cli
