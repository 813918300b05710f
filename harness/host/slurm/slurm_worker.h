// The k3tune inside a Slurm job (started by the job script slurm_jobs submits, with
// K3TUNE_SLURM_WORKER=1): it works on the one board Slurm allocated (SLURM_JOB_NODELIST, a node
// named as an inventory board) with the built-in farm code, in the job's own database
// (apps/scheduler/slurm_scheduler.h). A board fault k3tune finds there (probe failed, reboot, host
// key changed, repeated timeouts) drains the node with the reason, so Slurm gives the board to
// nobody until an operator resumes it (`k3tune farm release --board B`); the work left goes back
// to the controller, which submits it again.
#pragma once

#include <string>

#include "harness/host/farm/inventory.h"
#include "harness/host/slurm/slurm_client.h"

namespace k3slurm {

// True when this process runs as a job of a Slurm farm bench.
bool inside_slurm_job();

// The inventory board Slurm allocated to this job. Throws k3bench::UserError when the job holds
// no node, several, or one the inventory does not name.
std::string allocated_board(const k3farm::FarmConfig& farm);

// Drains `board` with drain_reason(fault, reason). Draining needs Slurm operator rights: without
// them a line on stderr says so and the work still goes back to the controller.
void drain_faulty_board(const SlurmClient& slurm, const std::string& board,
                        const std::string& fault, const std::string& reason);

// "k3tune: <fault>: <reason>": the drain reason sinfo shows for a board k3tune took out.
std::string drain_reason(const std::string& fault, const std::string& reason);

}  // namespace k3slurm
