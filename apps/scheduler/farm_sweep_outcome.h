// `bench --farm` measured in this process (harness/host/farmbench/farm_sweep.h: one thread per
// board) as a WorkOutcome: a table per cell with its board, moves, quarantines, samples before and
// after, or its JSON form.
#pragma once

#include <string>

#include "apps/scheduler/scheduler.h"
#include "harness/host/farmbench/farm_sweep.h"

namespace k3scheduler {

class FarmSweepWork final : public WorkOutcome {
 public:
  FarmSweepWork(k3farmbench::FarmBenchOutcome outcome, std::string db_path)
      : out_(std::move(outcome)), db_path_(std::move(db_path)) {}
  nlohmann::json to_json() const override;
  void print_text() const override;
  WorkStatus status() const override;

 private:
  k3farmbench::FarmBenchOutcome out_;
  std::string db_path_;
};

}  // namespace k3scheduler
