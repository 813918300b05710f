// The built-in SSH farm: k3tune leases its boards itself (harness/host/farm/lease.h) and runs the
// work in this process, one thread per board (harness/host/farmbench/farm_sweep.h for cells,
// tuner/campaign.h for tuning sessions). A fault quarantines the board in the results database
// (farm_board_events); `farm release --board` lifts it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apps/scheduler/scheduler.h"

namespace k3scheduler {

class BuiltinScheduler : public Scheduler {
 public:
  BuiltinScheduler(k3farm::FarmConfig farm, Caller caller)
      : farm_(std::move(farm)), caller_(std::move(caller)) {}

  std::string name() const override { return k3farm::to_string(k3farm::SchedulerKind::kBuiltin); }
  std::string title() const override { return "built-in"; }
  std::vector<std::string> boards_for_this_process(std::vector<std::string> chosen) const override {
    return chosen;
  }
  std::unique_ptr<k3farmbench::LeasedBoard> lease_board(
      std::vector<std::string> chosen, std::function<void(const std::string&)> note,
      double lease_wait_s) const override;
  bool boards_only_in_jobs() const override { return false; }
  void accept_reservation(const std::string& reservation) const override;
  std::map<std::string, nlohmann::json> board_views(
      const std::vector<std::string>&) const override {
    return {};
  }
  bool holds_out(const nlohmann::json&) const override { return false; }
  std::string bring_back(const std::string&, const nlohmann::json&) const override { return ""; }
  void board_faulty(const std::string&, const std::string&, const std::string&) const override {}

  std::unique_ptr<WorkOutcome> run_cells(const k3farmbench::FarmBenchRequest& rq,
                                         const std::string& reservation) override;
  std::unique_ptr<WorkOutcome> run_sessions(const SessionsRequest& rq) override;
  std::optional<JobResult> run_as_one_job(const OneJob& job) override;

 protected:
  // The work on `boards` in this process: what the built-in farm does with every command, and
  // what a job of a scheduler that runs jobs does on the board it holds. `share`: a part of the
  // campaign's sessions (a job's), "" for all of them and the tables.
  std::unique_ptr<WorkOutcome> sweep_here(k3farmbench::FarmBenchRequest rq) const;
  std::unique_ptr<WorkOutcome> campaign_here(const SessionsRequest& rq,
                                             std::vector<std::string> boards) const;

  const k3farm::FarmConfig& farm() const { return farm_; }
  const Caller& caller() const { return caller_; }

 private:
  k3farm::FarmConfig farm_;
  Caller caller_;
};

}  // namespace k3scheduler
