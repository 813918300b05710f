#include "apps/scheduler/builtin_scheduler.h"

#include <mutex>

#include <fmt/format.h>

#include "apps/scheduler/campaign_outcome.h"
#include "apps/scheduler/farm_sweep_outcome.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/farmbench/shard.h"
#include "tuner/campaign.h"

namespace k3scheduler {

std::unique_ptr<k3farmbench::LeasedBoard> BuiltinScheduler::lease_board(
    std::vector<std::string> chosen, std::function<void(const std::string&)> note,
    double lease_wait_s) const {
  return std::make_unique<k3farmbench::LeasedBoard>(farm_, caller_.root, caller_.db_path,
                                                    boards_for_this_process(std::move(chosen)),
                                                    note, lease_wait_s);
}

void BuiltinScheduler::accept_reservation(const std::string& reservation) const {
  if (!reservation.empty())
    throw k3bench::UserError(fmt::format(
        "--reservation: farm {} ({}) has no Slurm scheduler (its [farm] scheduler is builtin)",
        farm_.name, farm_.source));
}

std::unique_ptr<WorkOutcome> BuiltinScheduler::sweep_here(k3farmbench::FarmBenchRequest rq) const {
  const std::string db_path = rq.bench.db_path;
  auto out = k3farmbench::run_farm_bench(caller_.root, rq);
  for (const auto& [board, q] : out.quarantined)
    board_faulty(board, k3farm::to_string(q.fault), q.reason);
  return std::make_unique<FarmSweepWork>(std::move(out), db_path);
}

std::unique_ptr<WorkOutcome> BuiltinScheduler::run_cells(const k3farmbench::FarmBenchRequest& rq,
                                                         const std::string& reservation) {
  accept_reservation(reservation);
  return sweep_here(rq);
}

std::unique_ptr<WorkOutcome> BuiltinScheduler::campaign_here(
    const SessionsRequest& rq, std::vector<std::string> boards) const {
  k3tuner::CampaignRequest c;
  c.farm = farm_;
  c.boards = std::move(boards);
  c.command = rq.command;
  if (!rq.shard.empty()) c.sessions = k3farmbench::parse_shard(rq.shard);
  if (!rq.sessions.empty()) c.sessions.positions = k3farmbench::parse_cell_positions(rq.sessions);
  c.write_tables = rq.shard.empty() && rq.sessions.empty();  // else: a job's share of sessions
  auto mu = std::make_shared<std::mutex>();
  c.note = [mu, this](const std::string& line) {
    std::lock_guard lock(*mu);
    caller_.note(line);
  };
  c.command.progress = nullptr;
  auto out = k3tuner::run_campaign(caller_.root, c);
  for (const auto& [board, q] : out.quarantined) board_faulty(board, q.first, q.second);
  return std::make_unique<CampaignWork>(std::move(out), farm_.name, rq.command);
}

std::unique_ptr<WorkOutcome> BuiltinScheduler::run_sessions(const SessionsRequest& rq) {
  accept_reservation(rq.reservation);
  if (!rq.shard.empty() || !rq.sessions.empty())
    throw k3bench::UserError(
        "--shard/--sessions: the share of a Slurm tuning campaign's job, set by its controller");
  return campaign_here(rq, choose_boards(farm_, rq.boards, rq.tags));
}

std::optional<JobResult> BuiltinScheduler::run_as_one_job(const OneJob& job) {
  accept_reservation(job.reservation);
  return std::nullopt;  // k3tune leases the board itself: the command runs here
}

}  // namespace k3scheduler
