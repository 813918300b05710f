// A farm board as the sweep measures on it: a Target whose every run is judged by the farm (board
// fault -> quarantine; runner timeouts counted), and the executor that stops the board's batch at
// once when its board was lost, so the unfinished cells can move to a healthy board.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "harness/host/bench/runner_process.h"
#include "harness/host/farm/farm.h"
#include "harness/host/targets/target.h"

namespace k3farmbench {

// Thrown out of a board's batch when the farm took the board out of the run.
struct BoardLost : k3targets::TargetLost {
  using k3targets::TargetLost::TargetLost;
};

class JudgedBoardTarget final : public k3targets::Target {
 public:
  // `other_local`/`other_remote`: another runner installed on the board (Board::install) that
  // this target runs instead of the deployed one (a baseline); empty: the deployed runner.
  JudgedBoardTarget(k3farm::Farm& farm, const std::string& board, const std::string& root,
                    const std::string& other_local = "", const std::string& other_remote = "");
  // Installs that runner on the board; a failed install loses the board (TargetLost).
  std::unique_ptr<k3targets::Target> with_runner(const std::string& local_runner) const override;
  // Installs the file on the board as with_runner installs a runner (a failure loses the board).
  std::string place_file(const std::string& local_path) const override;
  std::vector<std::string> command(const std::vector<std::string>& args) const override;
  std::string describe() const override;
  k3targets::ProcessResult run(const std::vector<std::string>& args,
                               const k3targets::ProcessOptions& opt) const override;
  k3targets::ProcessResult run_emulated(const std::vector<std::string>& emulator,
                                        const std::map<std::string, std::string>& env,
                                        const std::vector<std::string>& args,
                                        const k3targets::ProcessOptions& opt) const override;
  std::vector<std::string> emulator_prefix() const override { return inner_->emulator_prefix(); }
  // Why the board is out of the run ("" while it is healthy). One thread uses one target.
  std::string lost() const override { return lost_; }

 private:
  JudgedBoardTarget(k3farm::Farm& farm, std::unique_ptr<k3targets::Target> inner,
                    const std::string& root);
  // The farm's verdict on a run: a board fault records why the board is lost.
  k3targets::ProcessResult judged(const k3farm::RunResult& r) const;
  k3farm::Farm& farm_;
  std::unique_ptr<k3targets::Target> inner_;  // the farm's own board target
  k3farm::RunOverride runner_;                // which runner on the board (empty: the deployed one)
  mutable std::string lost_;
};

// Runs the real runner; throws BoardLost after a run that cost the board its place in the run.
class FarmExecutor final : public k3bench::ProcessExecutor {
 public:
  explicit FarmExecutor(const JudgedBoardTarget& target) : target_(target) {}
  k3bench::ProcessOutcome run(const k3bench::SweepBuild& build, const k3bench::CellSpec& cell,
                              int process_index, bool check_accuracy, std::int64_t iterations,
                              double timeout_s) override;

 private:
  const JudgedBoardTarget& target_;
  k3bench::RunnerExecutor real_;
};

}  // namespace k3farmbench
