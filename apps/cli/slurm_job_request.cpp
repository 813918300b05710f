#include "apps/cli/slurm_job_request.h"

#include <iostream>

namespace k3cli {

k3slurm::SlurmCommandRequest slurm_job_request(const AppContext& ctx, const std::string& farm_file,
                                               const std::string& subcommand,
                                               std::vector<std::string> args,
                                               std::vector<std::string> boards,
                                               const std::string& reservation) {
  k3slurm::SlurmCommandRequest rq;
  rq.farm_file = farm_file;
  rq.root = ctx.root;
  rq.k3tune = k3slurm::running_executable();
  rq.targets_file = ctx.targets_file;
  rq.db_path = ctx.db_path();
  rq.subcommand = subcommand;
  rq.args = std::move(args);
  rq.boards = std::move(boards);
  rq.reservation = reservation;
  if (ctx.json) rq.global_flags.push_back("--json");
  if (ctx.quiet) rq.global_flags.push_back("-q");
  return rq;
}

void run_and_relay(const k3slurm::SlurmCommandRequest& rq) {
  const auto o = k3slurm::run_as_slurm_job(rq, k3slurm::SlurmClient());
  std::cout << o.output << std::flush;
  std::cerr << o.errors << std::flush;
  if (!o.fault.empty()) {
    std::cerr << "k3tune: " << o.fault << "\n";
    exit_code() = kProblems;
    return;
  }
  exit_code() = o.exit_code;
}

}  // namespace k3cli
