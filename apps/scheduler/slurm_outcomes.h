// What the Slurm scheduler's controller did (harness/host/slurm/slurm_bench.h, slurm_tune.h) as
// WorkOutcomes: the cells or sessions with the job that measured each, the jobs, the boards Slurm
// drained, where the jobs' files are; and a run Slurm refused before anything was submitted.
#pragma once

#include <string>
#include <vector>

#include "apps/scheduler/scheduler.h"
#include "harness/host/slurm/slurm_bench.h"
#include "harness/host/slurm/slurm_tune.h"

namespace k3scheduler {

class SlurmCellsWork final : public WorkOutcome {
 public:
  SlurmCellsWork(k3slurm::SlurmBenchOutcome outcome, std::string db_path)
      : out_(std::move(outcome)), db_path_(std::move(db_path)) {}
  nlohmann::json to_json() const override;
  void print_text() const override;
  std::vector<std::string> problems() const override;
  WorkStatus status() const override;

 private:
  k3slurm::SlurmBenchOutcome out_;
  std::string db_path_;
};

class SlurmSessionsWork final : public WorkOutcome {
 public:
  SlurmSessionsWork(k3slurm::SlurmTuneOutcome outcome, std::string db_path)
      : out_(std::move(outcome)), db_path_(std::move(db_path)) {}
  nlohmann::json to_json() const override;
  void print_text() const override;
  std::vector<std::string> problems() const override;
  WorkStatus status() const override;

 private:
  k3slurm::SlurmTuneOutcome out_;
  std::string db_path_;
};

// Slurm did not answer before any job was submitted: nothing to print, merge or resume.
class NothingSubmitted final : public WorkOutcome {
 public:
  explicit NothingSubmitted(std::string why) : why_(std::move(why)) {}
  nlohmann::json to_json() const override { return nullptr; }
  void print_text() const override {}
  std::vector<std::string> problems() const override {
    return {"Slurm did not answer (" + why_ + "); nothing submitted"};
  }
  WorkStatus status() const override { return WorkStatus::kProblems; }

 private:
  std::string why_;
};

}  // namespace k3scheduler
