#include "apps/scheduler/slurm_outcomes.h"
#include "harness/host/bench/child_output.h"

#include <iostream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace k3scheduler {

nlohmann::json slurm_json(const k3slurm::SlurmBenchOutcome& o, const std::string& db_path) {
  nlohmann::json tasks = nlohmann::json::array(), cells = nlohmann::json::array();
  for (const auto& t : o.tasks)
    tasks.push_back({{"job", t.id},
                     {"cells", t.share},
                     {"round", t.round},
                     {"board", t.board},
                     {"state", k3slurm::to_string(t.state)},
                     {"error", t.error},
                     {"measured", t.measured}});
  nlohmann::json runs = nlohmann::json::array(), quarantined = nlohmann::json::object();
  for (const auto& [board, run] : o.runs) runs.push_back({{"board", board}, {"run_uuid", run}});
  for (const auto& [board, q] : o.quarantined)
    quarantined[board] = {{"fault", q.first}, {"reason", q.second}};
  for (const auto& [i, c] : o.cells)
    cells.push_back({{"index", i},
                     {"label", c.label},
                     {"status", k3farmbench::to_string(c.status)},
                     {"board", c.board},
                     {"reason", c.reason},
                     {"job", c.task},
                     {"mean_ns", c.mean_ns}});
  return {{"schema", k3bench::schema_id(k3bench::ChildOutput::kBench)},
          {"scheduler", "slurm"},
          {"farm", o.farm_name},
          {"farm_source", o.farm_source},
          {"job_dir", o.job_dir},
          {"job_options", o.job_options},
          {"jobs", tasks},
          {"drained", o.drained},
          {"quarantined", quarantined},
          {"runs", runs},
          {"cells", cells},
          {"total_cells", o.total_cells},
          {"measured_cells", o.count(k3farmbench::CellStatus::kMeasured)},
          {"failed_cells", o.count(k3farmbench::CellStatus::kFailed)},
          {"unmeasured_cells", o.count(k3farmbench::CellStatus::kUnmeasured)},
          {"samples_before", o.samples_before},
          {"samples_after", o.samples_after},
          {"wall_s", o.wall_s},
          {"fault", o.fault},
          {"database", db_path}};
}

void print_slurm(const k3slurm::SlurmBenchOutcome& o, const std::string& db_path) {
  fmt::print("{:<46} {:<10} {:<12} {:>11}  {}\n", "cell", "board", "job", "mean us", "notes");
  for (const auto& [i, c] : o.cells)
    fmt::print(
        "{:<46} {:<10} {:<12} {:>11}  {}{}\n", c.label, c.board.empty() ? "-" : c.board, c.task,
        c.status == k3farmbench::CellStatus::kMeasured ? fmt::format("{:.3f}", c.mean_ns / 1e3)
                                                       : "-",
        k3farmbench::to_string(c.status), c.reason.empty() ? "" : ": " + c.reason);
  for (const auto& t : o.tasks)
    fmt::print("job {} ({}, round {}) on {}: {}{}\n", t.id, t.share, t.round,
               t.board.empty() ? "-" : t.board, k3slurm::to_string(t.state),
               t.error.empty() ? "" : ": " + t.error);
  for (const auto& [b, why] : o.drained) fmt::print("drained {}: {}\n", b, why);
  fmt::print(
      "farm {} (Slurm): {} cells: {} measured, {} failed, {} unmeasured; samples {} -> {} in {}; "
      "{:.1f} s; jobs in {}\n",
      o.farm_name, o.total_cells, o.count(k3farmbench::CellStatus::kMeasured),
      o.count(k3farmbench::CellStatus::kFailed), o.count(k3farmbench::CellStatus::kUnmeasured),
      o.samples_before, o.samples_after, db_path, o.wall_s, o.job_dir);
}

nlohmann::json slurm_json(const k3slurm::SlurmTuneOutcome& o, const std::string& db_path) {
  nlohmann::json jobs = nlohmann::json::array(), sessions = nlohmann::json::array();
  for (const auto& t : o.tasks)
    jobs.push_back({{"job", t.id},
                    {"sessions", t.share.empty() ? "table pass" : t.share},
                    {"round", t.round},
                    {"board", t.board},
                    {"state", k3slurm::to_string(t.state)},
                    {"error", t.error},
                    {"tuned", t.measured}});
  for (const auto& [i, s] : o.sessions)
    sessions.push_back({{"index", i},
                        {"label", s.label},
                        {"status", s.tuned ? "tuned" : "left"},
                        {"board", s.board},
                        {"job", s.task}});
  // The table pass's groups, as the built-in campaign prints them (the nightly reads them), with
  // every board that tuned a session of the group.
  nlohmann::json groups = o.table_pass.value("groups", nlohmann::json::array());
  for (auto& g : groups) {
    std::set<std::string> boards;
    for (const auto& b : g.value("boards", nlohmann::json::array())) boards.insert(b);
    for (const auto& [i, s] : o.sessions)
      if (!s.board.empty()) boards.insert(s.board);
    g["boards"] = boards;
  }
  nlohmann::json fingerprints = nlohmann::json::array();
  for (const auto& f : o.fingerprints) fingerprints.push_back(nlohmann::json::parse(f));
  return {{"schema", k3bench::schema_id(k3bench::ChildOutput::kTuneFarm)},
          {"scheduler", "slurm"},
          {"farm", o.farm_name},
          {"farm_source", o.farm_source},
          {"job_dir", o.job_dir},
          {"job_options", o.job_options},
          {"jobs", jobs},
          {"drained", o.drained},
          {"sessions", sessions},
          {"total_sessions", o.total_sessions},
          {"tuned_sessions", o.tuned()},
          {"fingerprints", fingerprints},
          {"groups", groups},
          {"table_job", o.table_task},
          {"table_pass", o.table_pass},
          {"table_pass_measured", o.table_pass_measured},
          {"problem", o.problem},
          {"fault", o.fault},
          {"wall_s", o.wall_s},
          {"database", db_path}};
}

void print_slurm(const k3slurm::SlurmTuneOutcome& o, const std::string& db_path) {
  fmt::print("{:<52} {:<10} {:<12} {}\n", "session", "board", "job", "status");
  for (const auto& [i, s] : o.sessions)
    fmt::print("{:<52} {:<10} {:<12} {}\n", s.label, s.board.empty() ? "-" : s.board,
               s.task.empty() ? "-" : s.task, s.tuned ? "tuned" : "left");
  for (const auto& t : o.tasks)
    fmt::print("job {} ({}, round {}) on {}: {}{}\n", t.id,
               t.share.empty() ? "table pass" : t.share, t.round, t.board.empty() ? "-" : t.board,
               k3slurm::to_string(t.state), t.error.empty() ? "" : ": " + t.error);
  for (const auto& [b, why] : o.drained) fmt::print("drained {}: {}\n", b, why);
  for (const auto& g : o.table_pass.value("groups", nlohmann::json::array()))
    if (!g.value("table", std::string()).empty())
      fmt::print("table {} (objective {}; the table pass measured {})\n",
                 g["table"].get<std::string>(), g.value("objective", std::string()),
                 o.table_pass_measured);
  if (!o.problem.empty()) fmt::print("NO TABLE: {}\n", o.problem);
  fmt::print("farm {} (Slurm): {} of {} sessions tuned; {:.1f} s; database {}; jobs in {}\n",
             o.farm_name, o.tuned(), o.total_sessions, o.wall_s, db_path, o.job_dir);
}

std::vector<std::string> slurm_problems(const k3slurm::SlurmBenchOutcome& o) {
  if (o.fault.empty()) return {};
  return {o.fault + "; committed samples kept"};
}

WorkStatus slurm_status(const k3slurm::SlurmBenchOutcome& o) {
  if (!o.fault.empty()) return WorkStatus::kProblems;
  return o.count(k3farmbench::CellStatus::kFailed) + o.count(k3farmbench::CellStatus::kUnmeasured) >
                 0
             ? WorkStatus::kCellsFailed
             : WorkStatus::kOk;
}

std::vector<std::string> slurm_problems(const k3slurm::SlurmTuneOutcome& o) {
  if (!o.fault.empty()) return {o.fault + "; what the jobs committed is kept"};
  if (!o.complete()) return {"no table: " + o.problem};
  return {};
}

WorkStatus slurm_status(const k3slurm::SlurmTuneOutcome& o) {
  if (!o.fault.empty()) return WorkStatus::kProblems;
  return o.complete() ? WorkStatus::kOk : WorkStatus::kCellsFailed;
}

}  // namespace k3scheduler
