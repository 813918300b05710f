// One k3tune command run as one Slurm job on a farm that Slurm schedules: for the farm commands
// that take a single board and have no share to split (`table verify --farm`). The job runs the
// same command on the board Slurm allocated (K3TUNE_SLURM_WORKER=1: the command's board is the
// allocation) into its own database, merged into the run's when it ends; its output and exit
// status are the command's. Like bench and tune on Slurm, it is checked against the cluster first
// (bad input submits nothing) and a Slurm controller that stops answering is a fault.
#pragma once

#include <string>
#include <vector>

#include "harness/host/slurm/slurm_client.h"
#include "harness/host/slurm/slurm_jobs.h"

namespace k3slurm {

struct SlurmCommandRequest {
  std::string farm_file, root, k3tune, targets_file, db_path;
  std::vector<std::string> boards;        // the boards the job may get (one: the table's board)
  std::string subcommand;                 // "table verify"
  std::vector<std::string> args;          // its arguments
  bool json = false, quiet = false;       // --json, -q as the caller gave them
  std::string reservation;                // overrides the farm file's
  double poll_s = 1;
};

struct SlurmCommandOutcome {
  SlurmTask task;
  std::string output;  // the command's stdout
  std::string errors;  // and its stderr
  int exit_code = 1;   // the command's (1 when it did not end on its own)
  std::string fault;   // Slurm stopped answering
  std::string job_dir;
};

SlurmCommandOutcome run_as_slurm_job(const SlurmCommandRequest& rq, const SlurmClient& slurm);

}  // namespace k3slurm
