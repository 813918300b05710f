#include "harness/host/farmbench/board_target.h"

#include <fmt/format.h>

namespace k3farmbench {

namespace {

std::unique_ptr<k3targets::Target> board_target(k3farm::Farm& farm, const std::string& board,
                                                const std::string& other_local,
                                                const std::string& other_remote) {
  return other_local.empty() ? farm.target(board) : farm.target(board, other_local, other_remote);
}

}  // namespace

JudgedBoardTarget::JudgedBoardTarget(k3farm::Farm& farm, const std::string& board,
                                     const std::string& root, const std::string& other_local,
                                     const std::string& other_remote)
    : JudgedBoardTarget(farm, board_target(farm, board, other_local, other_remote), root) {
  runner_.runner = other_remote;
}

JudgedBoardTarget::JudgedBoardTarget(k3farm::Farm& farm, std::unique_ptr<k3targets::Target> inner,
                                     const std::string& root)
    : Target(inner->config(), root), farm_(farm), inner_(std::move(inner)) {}

std::string JudgedBoardTarget::place_file(const std::string& local_path) const {
  try {
    return farm_.board(name()).install(local_path).remote_path;
  } catch (const k3farm::BoardError& e) {  // the install failed: the board is lost to this command
    farm_.quarantine(name(), e.fault, e.what());
    lost_ = e.what();
    throw k3targets::TargetLost(e.what());
  }
}

std::unique_ptr<k3targets::Target> JudgedBoardTarget::with_runner(
    const std::string& local_runner) const {
  const std::string remote = place_file(local_runner);
  return std::make_unique<JudgedBoardTarget>(farm_, name(), root_, local_runner, remote);
}

std::vector<std::string> JudgedBoardTarget::command(const std::vector<std::string>& args) const {
  return inner_->command(args);
}

std::string JudgedBoardTarget::describe() const {
  return inner_->describe();
}

k3targets::ProcessResult JudgedBoardTarget::run(const std::vector<std::string>& args,
                                                const k3targets::ProcessOptions& opt) const {
  return judged(
      farm_.run(name(), args, opt.timeout_s > 0 ? opt.timeout_s : config_.timeout_s, &runner_));
}

k3targets::ProcessResult JudgedBoardTarget::run_emulated(
    const std::vector<std::string>& emulator, const std::map<std::string, std::string>& env,
    const std::vector<std::string>& args, const k3targets::ProcessOptions& opt) const {
  const k3farm::RunOverride o{emulator, env, runner_.runner};
  return judged(farm_.run(name(), args, opt.timeout_s > 0 ? opt.timeout_s : config_.timeout_s, &o));
}

k3targets::ProcessResult JudgedBoardTarget::judged(const k3farm::RunResult& r) const {
  const k3farm::Verdict v = farm_.judge(name(), r);
  if (v.quarantined) {
    const auto q = farm_.quarantined_boards();
    const auto it = q.find(name());
    lost_ = it != q.end() ? it->second.reason : v.reason;
  }
  k3targets::ProcessResult p = r.process;
  if (r.fault == k3farm::Fault::kRunnerTimeout) p.timed_out = true;
  return p;
}

k3bench::ProcessOutcome FarmExecutor::run(const k3bench::SweepBuild& build,
                                          const k3bench::CellSpec& cell, int process_index,
                                          bool check_accuracy, std::int64_t iterations,
                                          double timeout_s) {
  k3bench::ProcessOutcome o =
      real_.run(build, cell, process_index, check_accuracy, iterations, timeout_s);
  if (!target_.lost().empty()) throw BoardLost(target_.lost());
  return o;
}

}  // namespace k3farmbench
