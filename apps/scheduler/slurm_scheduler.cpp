#include "apps/scheduler/slurm_scheduler.h"

#include "apps/scheduler/slurm_outcomes.h"

#include <fmt/format.h>

#include "harness/host/bench/user_error.h"
#include "harness/host/farm/farm.h"
#include "harness/host/store/database.h"
#include "harness/host/slurm/slurm_bench.h"
#include "harness/host/slurm/slurm_command.h"
#include "harness/host/slurm/slurm_jobs.h"
#include "harness/host/slurm/slurm_tune.h"
#include "harness/host/slurm/slurm_view.h"
#include "harness/host/slurm/slurm_worker.h"

namespace k3scheduler {

SlurmScheduler::SlurmScheduler(k3farm::FarmConfig farm, Caller caller)
    : BuiltinScheduler(std::move(farm), std::move(caller)), worker_(k3slurm::inside_slurm_job()) {}

std::vector<std::string> SlurmScheduler::boards_for_this_process(
    std::vector<std::string> chosen) const {
  // Inside a job the board is the one Slurm allocated, whatever was chosen.
  if (worker_) return {k3slurm::allocated_board(farm())};
  return chosen;
}

std::map<std::string, nlohmann::json> SlurmScheduler::board_views(
    const std::vector<std::string>& boards) const {
  return k3slurm::board_views(boards, slurm_);
}

bool SlurmScheduler::holds_out(const nlohmann::json& view) const {
  return k3slurm::drained_by_k3tune(view);
}

std::string SlurmScheduler::bring_back(const std::string& board, const nlohmann::json& view) const {
  k3slurm::resume_board(board, slurm_);
  return fmt::format("Slurm node resumed (was drained: {})", view.value("reason", std::string()));
}

void SlurmScheduler::board_faulty(const std::string& board, const std::string& fault,
                                  const std::string& reason) const {
  if (worker_) k3slurm::drain_faulty_board(slurm_, board, fault, reason);
}

void SlurmScheduler::power_recover_drained(const std::vector<std::string>& boards,
                                           const std::string& db_path) const {
  std::vector<std::string> with_outlet;
  for (const auto& b : boards)
    if (const auto* cfg = farm().find(b); cfg != nullptr && cfg->pdu) with_outlet.push_back(b);
  if (with_outlet.empty()) return;
  auto views = board_views(with_outlet);
  std::vector<std::string> drained;
  for (const auto& b : with_outlet)
    if (views.count(b) && holds_out(views[b])) drained.push_back(b);
  if (drained.empty()) return;
  auto db = k3store::open_for_writing(db_path);
  k3farm::Farm here(farm(), caller().root, db.get(), k3farm::new_run_uuid());
  for (const auto& b : drained) {
    if (!here.power_recover(b, {}, [this](const std::string& line) { caller().note(line); }))
      continue;
    caller().note(fmt::format("board {}: {}", b, bring_back(b, views[b])));
  }
}

std::unique_ptr<WorkOutcome> SlurmScheduler::run_cells(const k3farmbench::FarmBenchRequest& rq,
                                                       const std::string& reservation) {
  if (worker_) {  // this job's cells on the board it holds
    k3farmbench::FarmBenchRequest here = rq;
    here.boards = boards_for_this_process(rq.boards);
    here.tags.clear();
    return sweep_here(here);
  }
  if (rq.shard.count > 1 || !rq.shard.positions.empty())
    throw k3bench::UserError(
        "--shard: a Slurm farm splits the cells itself (a job array, one task per board)");
  power_recover_drained(choose_boards(farm(), rq.boards, rq.tags), rq.bench.db_path);
  k3slurm::SlurmBenchRequest s;
  s.farm = rq;
  s.root = caller().root;
  s.k3tune = caller().executable;
  s.targets_file = caller().targets_file;
  s.bench_args = k3slurm::subcommand_arguments(caller().argv, "bench", {"--resume"},
                                               {"--reservation", "--shard", "--cells"});
  s.reservation = reservation;
  try {
    return std::make_unique<SlurmCellsWork>(k3slurm::run_slurm_bench(s, slurm_), rq.bench.db_path);
  } catch (const k3slurm::SlurmUnreachable& e) {  // before any job: nothing to merge or resume
    return std::make_unique<NothingSubmitted>(e.what());
  }
}

std::unique_ptr<WorkOutcome> SlurmScheduler::run_sessions(const SessionsRequest& rq) {
  if (worker_) return campaign_here(rq, boards_for_this_process({}));
  if (!rq.shard.empty() || !rq.sessions.empty())
    throw k3bench::UserError(
        "--shard/--sessions: the share of a Slurm tuning campaign's job, set by its controller");
  if (rq.command.explain)
    throw k3bench::UserError("--explain: give --target (a Slurm farm plans on the boards)");
  power_recover_drained(choose_boards(farm(), rq.boards, rq.tags), caller().db_path);
  k3slurm::SlurmTuneRequest s;
  s.farm_file = rq.farm_file;
  s.root = caller().root;
  s.k3tune = caller().executable;
  s.targets_file = caller().targets_file;
  s.db_path = caller().db_path;
  s.boards = rq.boards;
  s.tags = rq.tags;
  s.tune_args = k3slurm::subcommand_arguments(caller().argv, "tune", {"--resume"},
                                              {"--reservation", "--shard", "--sessions"});
  s.reservation = rq.reservation;
  s.resume = rq.resume;
  try {
    return std::make_unique<SlurmSessionsWork>(k3slurm::run_slurm_tune(s, slurm_), s.db_path);
  } catch (const k3slurm::SlurmUnreachable& e) {  // before any job: nothing to merge
    return std::make_unique<NothingSubmitted>(e.what());
  }
}

std::optional<JobResult> SlurmScheduler::run_as_one_job(const OneJob& job) {
  if (worker_) return std::nullopt;  // this is the job: the command runs here
  k3slurm::SlurmCommandRequest rq;
  rq.farm_file = farm().source;
  rq.root = caller().root;
  rq.k3tune = caller().executable;
  rq.targets_file = caller().targets_file;
  rq.db_path = caller().db_path;
  rq.subcommand = job.subcommand;
  const std::string word = job.subcommand.substr(job.subcommand.rfind(' ') + 1);
  rq.args = k3slurm::subcommand_arguments(caller().argv, word, {}, job.drop);
  rq.args.insert(rq.args.end(), job.extra.begin(), job.extra.end());
  rq.boards = job.boards;
  rq.reservation = job.reservation;
  rq.json = caller().json;
  rq.quiet = caller().quiet;
  if (rq.boards.empty())
    throw k3bench::UserError(
        fmt::format("{}: a Slurm job needs its board: give --board or --tag", job.subcommand));
  const auto o = k3slurm::run_as_slurm_job(rq, slurm_);
  return JobResult{fmt::format("Slurm job {} on {}", o.task.id, rq.boards.front()), o.output,
                   o.errors, o.exit_code, o.fault};
}

}  // namespace k3scheduler
