#include "apps/cli/tune_slurm.h"

#include <iostream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/host/slurm/slurm_tune.h"

namespace k3cli {
namespace {

nlohmann::json slurm_tune_json(const k3slurm::SlurmTuneOutcome& o, const std::string& db_path) {
  nlohmann::json jobs = nlohmann::json::array(), sessions = nlohmann::json::array();
  for (const auto& t : o.tasks)
    jobs.push_back({{"job", t.id},
                    {"sessions", t.share.empty() ? "table pass" : t.share},
                    {"round", t.round},
                    {"board", t.board},
                    {"state", t.state},
                    {"error", t.error},
                    {"tuned", t.measured}});
  for (const auto& [i, s] : o.sessions)
    sessions.push_back({{"index", i},
                        {"label", s.label},
                        {"status", s.status},
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
  return {{"scheduler", "slurm"},
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

void print_slurm_tune(const k3slurm::SlurmTuneOutcome& o, const std::string& db_path) {
  fmt::print("{:<52} {:<10} {:<12} {}\n", "session", "board", "job", "status");
  for (const auto& [i, s] : o.sessions)
    fmt::print("{:<52} {:<10} {:<12} {}\n", s.label, s.board.empty() ? "-" : s.board,
               s.task.empty() ? "-" : s.task, s.status);
  for (const auto& t : o.tasks)
    fmt::print("job {} ({}, round {}) on {}: {}{}\n", t.id,
               t.share.empty() ? "table pass" : t.share, t.round, t.board.empty() ? "-" : t.board,
               t.state, t.error.empty() ? "" : ": " + t.error);
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

}  // namespace

void tune_on_slurm(const AppContext& ctx, const PlaceArgs& place, const SlurmShareArgs& share) {
  k3slurm::SlurmTuneRequest rq;
  rq.farm_file = place.farm;
  rq.root = ctx.root;
  rq.k3tune = k3slurm::running_executable();
  rq.targets_file = ctx.targets_file;
  rq.db_path = ctx.db_path();
  rq.boards = place.boards;
  rq.tags = place.tags;
  rq.tune_args = k3slurm::subcommand_arguments(ctx.argv, "tune", {"--resume"},
                                               {"--reservation", "--shard", "--sessions"});
  rq.reservation = share.reservation;
  rq.resume = share.resume;
  const k3slurm::SlurmClient slurm;
  k3slurm::SlurmTuneOutcome o;
  try {
    o = k3slurm::run_slurm_tune(rq, slurm);
  } catch (const k3slurm::SlurmUnreachable& e) {  // before any job: nothing to merge
    std::cerr << "k3tune: Slurm did not answer (" << e.what() << "); nothing submitted\n";
    exit_code() = kProblems;
    return;
  }
  if (ctx.json)
    std::cout << slurm_tune_json(o, rq.db_path).dump(2) << "\n";
  else
    print_slurm_tune(o, rq.db_path);
  if (!o.fault.empty()) {
    std::cerr << "k3tune: " << o.fault << "; what the jobs committed is kept\n";
    exit_code() = kProblems;
  } else if (!o.complete()) {
    std::cerr << "k3tune: no table: " << o.problem << "\n";
    exit_code() = kCellsFailed;
  }
}

}  // namespace k3cli
