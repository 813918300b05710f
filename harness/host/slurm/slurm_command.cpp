#include "harness/host/slurm/slurm_command.h"

#include <filesystem>

#include <fmt/format.h>

#include "harness/host/bench/user_error.h"
#include "harness/host/farm/farm.h"
#include "harness/host/slurm/slurm_validate.h"

namespace k3slurm {

SlurmCommandOutcome run_as_slurm_job(const SlurmCommandRequest& rq, const SlurmClient& slurm) {
  const auto cfg = load_farm(rq.farm_file, rq.root, rq.boards, {}).farm;  // names an unknown board
  const auto options = validate_slurm_farm(cfg, rq.boards, rq.reservation, slurm);
  std::filesystem::create_directories(std::filesystem::absolute(rq.db_path).parent_path());
  std::vector<std::string> identity{rq.farm_file, rq.subcommand};
  identity.insert(identity.end(), rq.args.begin(), rq.args.end());
  SlurmJobs jobs({.root = rq.root,
                  .k3tune = rq.k3tune,
                  .targets_file = rq.targets_file,
                  .db_path = rq.db_path,
                  .subcommand = rq.subcommand,
                  .args = rq.args,
                  .job_options = options,
                  .job_name = "k3tune-" + rq.subcommand.substr(rq.subcommand.rfind(' ') + 1),
                  .total_key = "",
                  .json = rq.json,
                  .quiet = rq.quiet,
                  .poll_s = rq.poll_s,
                  .silence_s = cfg.scheduler.timeout_s},
                 slurm, job_directory(rq.db_path, identity, false));
  SlurmCommandOutcome out;
  out.job_dir = jobs.dir().string();
  try {
    jobs.submit({""}, 1);
  } catch (const SlurmUnreachable& e) {
    out.fault = fmt::format("Slurm did not take the job ({}); nothing ran", e.what());
    return out;
  }
  const bool answered = jobs.wait();
  out.task = jobs.tasks().front();
  out.output = jobs.output(out.task);
  out.errors = jobs.errors(out.task);
  jobs.merge();
  if (!answered) {
    out.task.state = TaskState::kLeft;
    out.fault = jobs.fault() + jobs.left_text();
    return out;
  }
  const auto status = jobs.exit_status(out.task);
  out.exit_code = status.value_or(1);
  out.task.state = status ? TaskState::kFinished : TaskState::kFailed;
  if (!status) {
    jobs.outcome(out.task, true);  // its last stderr line
    out.fault =
        fmt::format("Slurm job {} ended without an exit status: {}", out.task.id, out.task.error);
  }
  return out;
}

}  // namespace k3slurm
