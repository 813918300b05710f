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

// What each outcome type gives a SlurmWork (defined in slurm_outcomes.cpp).
nlohmann::json slurm_json(const k3slurm::SlurmBenchOutcome& o, const std::string& db_path);
void print_slurm(const k3slurm::SlurmBenchOutcome& o, const std::string& db_path);
std::vector<std::string> slurm_problems(const k3slurm::SlurmBenchOutcome& o);
WorkStatus slurm_status(const k3slurm::SlurmBenchOutcome& o);
nlohmann::json slurm_json(const k3slurm::SlurmTuneOutcome& o, const std::string& db_path);
void print_slurm(const k3slurm::SlurmTuneOutcome& o, const std::string& db_path);
std::vector<std::string> slurm_problems(const k3slurm::SlurmTuneOutcome& o);
WorkStatus slurm_status(const k3slurm::SlurmTuneOutcome& o);

// A Slurm controller's outcome (cells or tuning sessions) with the database its jobs wrote to.
template <class Outcome>
class SlurmWork final : public WorkOutcome {
 public:
  SlurmWork(Outcome outcome, std::string db_path)
      : out_(std::move(outcome)), db_path_(std::move(db_path)) {}
  nlohmann::json to_json() const override { return slurm_json(out_, db_path_); }
  void print_text() const override { print_slurm(out_, db_path_); }
  std::vector<std::string> problems() const override { return slurm_problems(out_); }
  WorkStatus status() const override { return slurm_status(out_); }

 private:
  Outcome out_;
  std::string db_path_;
};

using SlurmCellsWork = SlurmWork<k3slurm::SlurmBenchOutcome>;
using SlurmSessionsWork = SlurmWork<k3slurm::SlurmTuneOutcome>;

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
