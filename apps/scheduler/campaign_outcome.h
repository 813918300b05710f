// A tuning campaign run in this process (tuner/campaign.h) as a WorkOutcome: printed per
// fingerprint group (its boards, sessions by board, each job, the table), or as the JSON the
// nightly and a Slurm campaign's controller read (docs/farm-and-nightly.md).
#pragma once

#include <string>
#include <vector>

#include "apps/scheduler/scheduler.h"
#include "tuner/campaign.h"

namespace k3scheduler {

class CampaignWork final : public WorkOutcome {
 public:
  CampaignWork(k3tuner::CampaignOutcome outcome, std::string farm_name,
               const k3tuner::TuneCommand& command)
      : out_(std::move(outcome)),
        farm_name_(std::move(farm_name)),
        strategy_(command.strategy),
        objective_(command.objective),
        explain_(command.explain) {}
  nlohmann::json to_json() const override;
  void print_text() const override;
  std::vector<std::string> problems() const override;
  WorkStatus status() const override;

 private:
  k3tuner::CampaignOutcome out_;
  std::string farm_name_, strategy_, objective_;
  bool explain_ = false;
};

}  // namespace k3scheduler
