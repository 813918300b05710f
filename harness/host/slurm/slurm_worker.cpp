#include "harness/host/slurm/slurm_worker.h"

#include <cstdlib>

#include <fmt/format.h>

#include "harness/host/bench/user_error.h"

namespace k3slurm {

bool inside_slurm_job() {
  const char* w = std::getenv("K3TUNE_SLURM_WORKER");
  return w != nullptr && std::string(w) == "1";
}

std::string allocated_board(const k3farm::FarmConfig& farm) {
  const char* list = std::getenv("SLURM_JOB_NODELIST");
  const std::string node = list ? list : "";
  if (node.empty() || node.find_first_of(",[") != std::string::npos)
    throw k3bench::UserError(fmt::format(
        "K3TUNE_SLURM_WORKER: the job must hold exactly one node (SLURM_JOB_NODELIST='{}')", node));
  if (farm.find(node) == nullptr)
    throw k3bench::UserError(
        fmt::format("SLURM_JOB_NODELIST: node '{}' is not a board of farm {} ({})", node, farm.name,
                    farm.source));
  return node;
}

std::string drain_reason(const std::string& fault, const std::string& reason) {
  return reason_text(fmt::format("k3tune: {}: {}", fault, reason));
}

void drain_faulty_board(const SlurmClient& slurm, const std::string& board,
                        const std::string& fault, const std::string& reason) {
  try {
    slurm.drain(board, drain_reason(fault, reason));
  } catch (const std::runtime_error& e) {
    fmt::print(stderr, "k3tune: board {} is faulty but could not be drained: {}\n", board,
               e.what());
  }
}

}  // namespace k3slurm
