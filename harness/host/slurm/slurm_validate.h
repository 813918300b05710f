// Checks a farm with scheduler = "slurm" against the cluster before anything is submitted: the
// client is on PATH, the partition exists and every chosen board is one of its nodes, and Slurm
// accepts the GRES, constraint, reservation, account and QoS (sbatch --test-only, one key at a
// time, so the error names the farm file's key that Slurm refused).
#pragma once

#include <string>
#include <vector>

#include "harness/host/farm/inventory.h"
#include "harness/host/slurm/slurm_client.h"

namespace k3slurm {

// A farm file and the boards --board/--tag choose (all when neither), in inventory order.
struct ChosenFarm {
  k3farm::FarmConfig farm;
  std::vector<std::string> boards;
};

// Throws k3bench::UserError (one line) for a bad farm file, an unknown board or tag.
ChosenFarm load_farm(const std::string& file, const std::string& root,
                     const std::vector<std::string>& boards, const std::vector<std::string>& tags);

// The sbatch options every job of this farm gets: partition, gres, constraint, reservation
// (`reservation` when not empty, else the farm file's), account, qos; and --exclude for the
// partition's nodes that are not among `boards`.
std::vector<std::string> job_options(const k3farm::SchedulerConfig& s,
                                     const std::string& reservation,
                                     const std::vector<std::string>& partition_nodes,
                                     const std::vector<std::string>& boards);

// Throws k3bench::UserError, one line: "<key> (<file:line>): <what Slurm said>". Returns the
// sbatch options (job_options) for the jobs. SlurmUnreachable passes through (a fault).
std::vector<std::string> validate_slurm_farm(const k3farm::FarmConfig& farm,
                                             const std::vector<std::string>& boards,
                                             const std::string& reservation,
                                             const SlurmClient& slurm);

}  // namespace k3slurm
