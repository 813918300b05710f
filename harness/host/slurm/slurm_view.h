// Slurm's side of `k3tune farm list` and `farm release` for a farm with scheduler = "slurm": each
// board's node state, drain reason (who set it, when) and the jobs (and users) holding it; and
// resuming the nodes k3tune drained.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/slurm/slurm_client.h"

namespace k3slurm {

// Board -> {"state", "reason", "reason_user", "reason_at", "jobs": ["<id> <user>", ...]}; every
// board gets {"error": "..."} when Slurm cannot be asked (the list still shows k3tune's state).
std::map<std::string, nlohmann::json> board_views(const std::vector<std::string>& boards,
                                                  const SlurmClient& slurm);

// Whether sinfo shows the node drained (or draining) with a reason k3tune gave ("k3tune: ...").
bool drained_by_k3tune(const nlohmann::json& view);

// Resumes `board` in Slurm (scontrol update State=RESUME). Throws as SlurmClient does.
void resume_board(const std::string& board, const SlurmClient& slurm);

}  // namespace k3slurm
