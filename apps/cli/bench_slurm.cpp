#include "apps/cli/bench_slurm.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cli/bench_farm_output.h"
#include "apps/cli/slurm_job_request.h"
#include "harness/host/farm/farm.h"
#include "harness/host/slurm/slurm_bench.h"
#include "harness/host/slurm/slurm_validate.h"
#include "harness/host/slurm/slurm_worker.h"

namespace k3cli {
namespace {

nlohmann::json slurm_bench_json(const k3slurm::SlurmBenchOutcome& o, const std::string& db_path) {
  nlohmann::json tasks = nlohmann::json::array(), cells = nlohmann::json::array();
  for (const auto& t : o.tasks)
    tasks.push_back({{"job", t.id},
                     {"cells", t.share},
                     {"round", t.round},
                     {"board", t.board},
                     {"state", t.state},
                     {"error", t.error},
                     {"measured", t.measured}});
  nlohmann::json runs = nlohmann::json::array(), quarantined = nlohmann::json::object();
  for (const auto& [board, run] : o.runs) runs.push_back({{"board", board}, {"run_uuid", run}});
  for (const auto& [board, q] : o.quarantined)
    quarantined[board] = {{"fault", q.first}, {"reason", q.second}};
  for (const auto& [i, c] : o.cells)
    cells.push_back({{"index", i},
                     {"label", c.label},
                     {"status", c.status},
                     {"board", c.board},
                     {"reason", c.reason},
                     {"job", c.task},
                     {"mean_ns", c.mean_ns}});
  return {{"scheduler", "slurm"},
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
          {"measured_cells", o.count("measured")},
          {"failed_cells", o.count("failed")},
          {"unmeasured_cells", o.count("unmeasured")},
          {"samples_before", o.samples_before},
          {"samples_after", o.samples_after},
          {"wall_s", o.wall_s},
          {"fault", o.fault},
          {"database", db_path}};
}

void print_slurm_bench(const k3slurm::SlurmBenchOutcome& o, const std::string& db_path) {
  fmt::print("{:<46} {:<10} {:<12} {:>11}  {}\n", "cell", "board", "job", "mean us", "notes");
  for (const auto& [i, c] : o.cells)
    fmt::print("{:<46} {:<10} {:<12} {:>11}  {}{}\n", c.label, c.board.empty() ? "-" : c.board,
               c.task, c.status == "measured" ? fmt::format("{:.3f}", c.mean_ns / 1e3) : "-",
               c.status, c.reason.empty() ? "" : ": " + c.reason);
  for (const auto& t : o.tasks)
    fmt::print("job {} ({}, round {}) on {}: {}{}\n", t.id, t.share, t.round,
               t.board.empty() ? "-" : t.board, t.state, t.error.empty() ? "" : ": " + t.error);
  for (const auto& [b, why] : o.drained) fmt::print("drained {}: {}\n", b, why);
  fmt::print(
      "farm {} (Slurm): {} cells: {} measured, {} failed, {} unmeasured; samples {} -> {} in {}; "
      "{:.1f} s; jobs in {}\n",
      o.farm_name, o.total_cells, o.count("measured"), o.count("failed"), o.count("unmeasured"),
      o.samples_before, o.samples_after, db_path, o.wall_s, o.job_dir);
}

}  // namespace

bool ab_bench_on_slurm(const AppContext& ctx, const k3farmbench::FarmBenchRequest& request,
                       const std::string& reservation) {
  const auto [cfg, boards] =
      k3slurm::load_farm(request.farm, ctx.root, request.boards, request.tags);
  k3slurm::refuse_reservation_unless_slurm(cfg, reservation);
  if (!cfg.scheduler.slurm() || k3slurm::inside_slurm_job()) return false;
  run_and_relay(
      slurm_job_request(ctx, request.farm, "bench",
                        k3slurm::subcommand_arguments(ctx.argv, "bench", {}, {"--reservation"}),
                        boards, reservation));
  return true;
}

bool bench_on_slurm(const AppContext& ctx, const k3farmbench::FarmBenchRequest& request,
                    const std::string& reservation) {
  const auto cfg = k3slurm::load_farm(request.farm, ctx.root, {}, {}).farm;
  k3slurm::refuse_reservation_unless_slurm(cfg, reservation);
  if (!cfg.scheduler.slurm()) return false;
  const k3slurm::SlurmClient slurm;
  const std::string& db_path = request.bench.db_path;
  if (k3slurm::inside_slurm_job()) {
    const auto o = k3slurm::run_slurm_worker(ctx.root, request, cfg, slurm);
    if (ctx.json)
      std::cout << farm_bench_json(o, db_path).dump(2) << "\n";
    else
      print_farm_bench(o, db_path);
    if (o.count("failed") + o.count("unmeasured") > 0) exit_code() = kCellsFailed;
    return true;
  }
  if (request.shard.count > 1 || !request.shard.positions.empty())
    throw k3bench::UserError(
        "--shard: a Slurm farm splits the cells itself (a job array, one task per board)");
  k3slurm::SlurmBenchRequest rq;
  rq.farm = request;
  rq.root = ctx.root;
  rq.k3tune = k3slurm::running_executable();
  rq.targets_file = ctx.targets_file;
  rq.bench_args = k3slurm::subcommand_arguments(ctx.argv, "bench", {"--resume"},
                                                {"--reservation", "--shard", "--cells"});
  rq.reservation = reservation;
  k3slurm::SlurmBenchOutcome o;
  try {
    o = k3slurm::run_slurm_bench(rq, slurm);
  } catch (const k3slurm::SlurmUnreachable& e) {  // before any job: nothing to merge or resume
    std::cerr << "k3tune: Slurm did not answer (" << e.what() << "); nothing submitted\n";
    exit_code() = kProblems;
    return true;
  }
  if (ctx.json)
    std::cout << slurm_bench_json(o, db_path).dump(2) << "\n";
  else
    print_slurm_bench(o, db_path);
  if (!o.fault.empty()) {
    std::cerr << "k3tune: " << o.fault << "; committed samples kept\n";
    exit_code() = kProblems;
  } else if (o.count("failed") + o.count("unmeasured") > 0) {
    exit_code() = kCellsFailed;
  }
  return true;
}

}  // namespace k3cli
