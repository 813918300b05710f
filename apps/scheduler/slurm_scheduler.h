// A farm whose boards a lab's Slurm schedules ([farm] scheduler = "slurm"): the boards are Slurm
// nodes, and k3tune's work goes out as jobs that run this k3tune on the node Slurm allocated
// (harness/host/slurm/: validation against the cluster, job arrays, merges, drains).
//
// One process is either the controller (it submits, waits, merges) or -- inside one of the jobs
// (K3TUNE_SLURM_WORKER=1) -- a worker, which does its share on the board the job holds exactly
// as the built-in farm would, and drains that board when k3tune finds it faulty.
#pragma once

#include "apps/scheduler/builtin_scheduler.h"
#include "harness/host/slurm/slurm_client.h"

namespace k3scheduler {

class SlurmScheduler final : public BuiltinScheduler {
 public:
  SlurmScheduler(k3farm::FarmConfig farm, Caller caller);

  std::string name() const override { return k3farm::to_string(k3farm::SchedulerKind::kSlurm); }
  std::string title() const override { return "Slurm"; }
  std::vector<std::string> boards_for_this_process(std::vector<std::string> chosen) const override;
  bool boards_only_in_jobs() const override { return true; }
  void accept_reservation(const std::string&) const override {}
  std::map<std::string, nlohmann::json> board_views(
      const std::vector<std::string>& boards) const override;
  bool holds_out(const nlohmann::json& view) const override;
  std::string bring_back(const std::string& board, const nlohmann::json& view) const override;
  void board_faulty(const std::string& board, const std::string& fault,
                    const std::string& reason) const override;

  std::unique_ptr<WorkOutcome> run_cells(const k3farmbench::FarmBenchRequest& rq,
                                         const std::string& reservation) override;
  std::unique_ptr<WorkOutcome> run_sessions(const SessionsRequest& rq) override;
  std::optional<JobResult> run_as_one_job(const OneJob& job) override;

 private:
  // Before the jobs go out: each chosen board that Slurm holds out for k3tune's fault (a drain)
  // and whose inventory names a PDU outlet is power-cycled from here (Farm::power_recover); the
  // node is resumed only once the board has probed healthy. Inside a job a board that dies is
  // power-cycled by the job's own sweep, and drained only when that gives up.
  void power_recover_drained(const std::vector<std::string>& boards,
                             const std::string& db_path) const;

  bool worker_ = false;  // this process runs inside one of the farm's jobs
  k3slurm::SlurmClient slurm_;
};

}  // namespace k3scheduler
