#include "harness/host/slurm/slurm_tune.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/host/bench/user_error.h"
#include "harness/host/farm/farm.h"
#include "harness/host/slurm/slurm_validate.h"
#include "harness/host/slurm/slurm_worker.h"
#include "harness/host/store/database.h"
#include "harness/host/store/maintenance.h"

namespace k3slurm {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

// A consistent copy of the run's database (WAL included) for the next jobs to start from.
std::string snapshot(const std::string& db_path, const fs::path& dir, int round) {
  const fs::path out = dir / fmt::format("seed-round-{}.db", round);
  fs::remove(out);
  k3store::snapshot_database(*k3store::open_for_writing(db_path), out.string());
  return out.string();
}

// What each session task reported (`tune --farm --json` of its one board): the sessions it tuned,
// its board's fingerprint, the boards it quarantined.
void collect_sessions(SlurmJobs& jobs, bool finished, const std::string& table_task,
                      SlurmTuneOutcome& out) {
  for (auto& t : jobs.tasks()) {
    if (t.id == table_task || t.state == TaskState::kEmpty) continue;
    const auto j = jobs.outcome(t, finished);
    if (!j) continue;
    t.measured = 0;
    out.total_sessions = j->value("total_sessions", out.total_sessions);
    const nlohmann::json quarantined = j->value("quarantined", nlohmann::json::object());
    for (const auto& [board, q] : quarantined.items())
      out.drained[board] = drain_reason(q["fault"], q["reason"]);
    for (const auto& g : j->value("groups", nlohmann::json::array())) {
      if (!g["boards"].empty()) t.board = g["boards"][0];
      bool tuned_here = false;
      for (const auto& s : g.value("sessions", nlohmann::json::array())) {
        SlurmSession& slot = out.sessions[s["index"].get<std::size_t>()];
        slot.label = s["label"];
        if (s["status"] != "tuned") continue;
        tuned_here = true;
        ++t.measured;
        if (!slot.tuned)
          slot = {s["label"].get<std::string>(), true, s["board"].get<std::string>(), t.id};
      }
      if (tuned_here) out.fingerprints.insert(g["fingerprint"].dump());
    }
  }
}

std::vector<std::size_t> sessions_left(const SlurmTuneOutcome& out) {
  std::vector<std::size_t> left;
  for (std::size_t i = 0; i < out.total_sessions; ++i) {
    const auto it = out.sessions.find(i);
    if (it == out.sessions.end() || !it->second.tuned) left.push_back(i);
  }
  return left;
}

// Session rounds: the first splits the sessions over the boards open now, the next ones take what
// was left. Returns the fault that stopped them ("" : none of this function's own).
std::string run_session_rounds(const SlurmTuneRequest& rq, const k3farm::FarmConfig& cfg,
                               const std::vector<std::string>& boards, const SlurmClient& slurm,
                               SlurmJobs& jobs, int& round, SlurmTuneOutcome& out) {
  const std::string resv = rq.reservation.empty() ? cfg.scheduler.reservation : rq.reservation;
  while (jobs.fault().empty()) {
    std::vector<std::string> shares;
    const std::size_t open = std::max<std::size_t>(1, open_boards(boards, resv, slurm).size());
    if (round == 0) {
      shares = first_round_shares(open);
    } else {
      if (out.total_sessions == 0 && out.sessions.empty())
        return jobs.no_outcome_fault();  // or bad input, said once
      const auto left = sessions_left(out);
      if (left.empty() || round >= rq.max_attempts) break;
      shares = split_shares(k3launch::ShareUnit::kSessions, left, open);
    }
    ++round;
    try {
      jobs.submit(shares, round, snapshot(rq.db_path, jobs.dir(), round));
    } catch (const SlurmUnreachable& e) {
      return fmt::format("Slurm did not take the jobs ({})", e.what());
    }
    collect_sessions(jobs, jobs.wait(), "", out);
    jobs.merge();
  }
  return "";
}

// The table pass: one job on a board of the sessions' fingerprint, from the merged database (once
// more, elsewhere, when its board dies). Returns the fault that stopped it ("" : none).
std::string run_table_pass(const SlurmTuneRequest& rq, const k3farm::FarmConfig& cfg,
                           SlurmJobs& jobs, int& round, SlurmTuneOutcome& out) {
  for (int attempt = 0; attempt < 2 && out.table_task.empty(); ++attempt) {
    ++round;
    try {
      jobs.submit({""}, round, snapshot(rq.db_path, jobs.dir(), round));
    } catch (const SlurmUnreachable& e) {
      return fmt::format("Slurm did not take the table pass ({})", e.what());
    }
    SlurmTask& t = jobs.tasks().back();
    const bool answered = jobs.wait();
    const auto j = jobs.outcome(t, answered);
    jobs.merge();
    if (!answered) break;
    if (!j) continue;  // its board died: once more, elsewhere
    out.table_task = t.id;
    out.table_pass = *j;
    for (const auto& g : j->value("groups", nlohmann::json::array())) {
      if (!g["boards"].empty()) t.board = g["boards"][0];
      for (const auto& job : g.value("jobs", nlohmann::json::array()))
        out.table_pass_measured += job.value("measurements_new", 0);
      if (!out.fingerprints.empty() && g["fingerprint"].dump() != *out.fingerprints.begin())
        out.problem = fmt::format(
            "the table pass ran on board {} whose fingerprint differs from the sessions' "
            "boards; its table is that board's ({}: [farm] constraint selects one kind)",
            t.board, cfg.source);
    }
  }
  if (out.table_task.empty() && jobs.fault().empty())
    out.problem = "the table pass left no outcome twice: " + jobs.tasks().back().error;
  return "";
}

// Why no table pass runs after the session rounds ("" : it runs).
std::string no_table_pass(const k3farm::FarmConfig& cfg, int round, const SlurmTuneOutcome& out) {
  const auto left = sessions_left(out);
  if (!left.empty()) {
    std::vector<std::string> labels;
    for (const std::size_t i : left)
      labels.push_back(out.sessions.count(i) ? out.sessions.at(i).label : fmt::format("#{}", i));
    return fmt::format("{} of {} sessions not tuned after {} rounds: {}", left.size(),
                       out.total_sessions, round, fmt::join(labels, "; "));
  }
  if (out.fingerprints.size() > 1)
    return fmt::format(
        "boards of {} fingerprints tuned the sessions (a table is per fingerprint): give the "
        "farm a constraint that selects boards of one kind ({}: [farm] constraint)",
        out.fingerprints.size(), cfg.source);
  return "";
}

}  // namespace

int SlurmTuneOutcome::tuned() const {
  int n = 0;
  for (const auto& [i, s] : sessions) n += s.tuned;
  return n;
}

SlurmTuneOutcome run_slurm_tune(const SlurmTuneRequest& rq, const SlurmClient& slurm) {
  const auto start = Clock::now();
  const auto [cfg, boards] = load_farm(rq.farm_file, rq.root, rq.boards, rq.tags);
  SlurmTuneOutcome out;
  out.farm_name = cfg.name;
  out.farm_source = cfg.source;
  out.job_options = validate_slurm_farm(cfg, boards, rq.reservation, slurm);

  // Validated: from here on the database and the job directory are written.
  fs::create_directories(fs::absolute(rq.db_path).parent_path());
  std::vector<std::string> identity{rq.farm_file};
  identity.insert(identity.end(), rq.tune_args.begin(), rq.tune_args.end());
  SlurmJobs jobs({.root = rq.root,
                  .k3tune = rq.k3tune,
                  .targets_file = rq.targets_file,
                  .db_path = rq.db_path,
                  .subcommand = "tune",
                  .args = rq.tune_args,
                  .job_options = out.job_options,
                  .job_name = "k3tune-tune",
                  .total_key = "total_sessions",
                  .form = k3bench::ChildOutput::kTuneFarm,
                  .poll_s = rq.poll_s,
                  .silence_s = cfg.scheduler.timeout_s},
                 slurm, job_directory(rq.db_path, identity, rq.resume));
  out.job_dir = jobs.dir().string();
  int round = 0;
  if (rq.resume) {
    jobs.adopt_journal();
    if (!jobs.tasks().empty()) {  // the jobs an interrupted run left: wait, read, merge
      collect_sessions(jobs, jobs.wait(), "", out);
      jobs.merge();
      round = jobs.tasks().back().round;
    }
  }
  std::string fault = run_session_rounds(rq, cfg, boards, slurm, jobs, round, out);
  if (fault.empty() && jobs.fault().empty()) {
    out.problem = no_table_pass(cfg, round, out);
    if (out.problem.empty()) fault = run_table_pass(rq, cfg, jobs, round, out);
  }
  jobs.merge();
  out.tasks = jobs.tasks();
  if (fault.empty()) fault = jobs.fault();
  if (!fault.empty()) out.fault = fault + jobs.left_text();
  out.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace k3slurm
