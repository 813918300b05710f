#include "harness/host/slurm/slurm_bench.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "harness/host/bench/sweep.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/slurm/slurm_jobs.h"
#include "harness/host/slurm/slurm_validate.h"
#include "harness/host/slurm/slurm_worker.h"
#include "harness/host/store/database.h"
#include "harness/host/store/results.h"

namespace k3slurm {
namespace fs = std::filesystem;
namespace {

using k3farmbench::CellStatus;
using Clock = std::chrono::steady_clock;

// What each task of a bench reported (its outcome JSON: what `bench --farm --json` prints), into
// the run's cells, drains and quarantines.
void collect(SlurmJobs& jobs, bool finished, SlurmBenchOutcome& out) {
  out.runs.clear();
  for (auto& t : jobs.tasks()) {
    if (t.state == TaskState::kEmpty) continue;
    const auto j = jobs.outcome(t, finished);
    if (!j) continue;
    t.measured = 0;
    if (!(*j)["boards"].empty()) t.board = (*j)["boards"][0];
    out.total_cells = j->value("total_cells", out.total_cells);
    for (const auto& [board, q] : (*j)["quarantined"].items()) {
      out.drained[board] = drain_reason(q["fault"], q["reason"]);
      out.quarantined[board] = {q["fault"], q["reason"]};
    }
    for (const auto& r : (*j)["runs"]) out.runs.emplace_back(r["board"], r["run_uuid"]);
    for (const auto& c : (*j)["cells"]) {
      const std::size_t index = c["index"];
      SlurmCell cell;
      cell.index = index;
      cell.label = c.value("label", "");
      cell.status = k3farmbench::cell_status(c.value("status", "")).value_or(CellStatus::kFailed);
      // Skipped: measured by this task before a requeue.
      if (cell.status == CellStatus::kSkipped) cell.status = CellStatus::kMeasured;
      cell.board = c.value("board", "");
      cell.reason = c.value("reason", "");
      cell.task = t.id;
      cell.mean_ns = c.value("mean_ns", 0.0);
      if (cell.status == CellStatus::kMeasured) ++t.measured;
      auto& slot = out.cells[index];
      if (slot.status != CellStatus::kMeasured)
        slot = cell;  // a later round measures what was left
    }
  }
}

// Cells not yet measured or failed, by canonical index.
std::vector<std::size_t> remaining(const SlurmBenchOutcome& out) {
  std::vector<std::size_t> left;
  for (std::size_t i = 0; i < out.total_cells; ++i) {
    const auto it = out.cells.find(i);
    if (it == out.cells.end() ||
        (it->second.status != CellStatus::kMeasured && it->second.status != CellStatus::kFailed))
      left.push_back(i);
  }
  return left;
}

std::int64_t sample_count(const std::string& db_path) {
  return k3store::sample_count(*k3store::open_for_writing(db_path));
}

}  // namespace

int SlurmBenchOutcome::count(CellStatus status) const {
  int n = 0;
  for (const auto& [i, c] : cells) n += c.status == status;
  if (status == CellStatus::kUnmeasured)
    n += static_cast<int>(total_cells) - static_cast<int>(cells.size());
  return n;
}

SlurmBenchOutcome run_slurm_bench(const SlurmBenchRequest& rq, const SlurmClient& slurm) {
  const auto start = Clock::now();
  const auto [cfg, boards] = load_farm(rq.farm.farm, rq.root, rq.farm.boards, rq.farm.tags);
  SlurmBenchOutcome out;
  out.farm_name = cfg.name;
  out.farm_source = cfg.source;
  out.job_options = validate_slurm_farm(cfg, boards, rq.reservation, slurm);

  // Validated: from here on the database and the job directory are written.
  out.samples_before = sample_count(rq.farm.bench.db_path);
  std::vector<std::string> identity{rq.farm.farm};
  identity.insert(identity.end(), rq.bench_args.begin(), rq.bench_args.end());
  SlurmJobs jobs({.root = rq.root,
                  .k3tune = rq.k3tune,
                  .targets_file = rq.targets_file,
                  .db_path = rq.farm.bench.db_path,
                  .subcommand = "bench",
                  .args = rq.bench_args,
                  .resume = true,
                  .job_options = out.job_options,
                  .job_name = "k3tune-bench",
                  .total_key = "total_cells",
                  .form = k3bench::ChildOutput::kBench,
                  .poll_s = rq.poll_s,
                  .silence_s = cfg.scheduler.timeout_s},
                 slurm, job_directory(rq.farm.bench.db_path, identity, rq.farm.bench.resume));
  out.job_dir = jobs.dir().string();
  std::string fault;
  if (rq.farm.bench.resume) {
    jobs.adopt_journal();
    if (!jobs.tasks().empty()) collect(jobs, jobs.wait(), out);  // the jobs an earlier run left
  }
  int round = jobs.tasks().empty() ? 0 : jobs.tasks().back().round;
  while (jobs.fault().empty() && fault.empty()) {
    std::vector<std::string> cells;
    if (round == 0) {
      const std::string resv = rq.reservation.empty() ? cfg.scheduler.reservation : rq.reservation;
      cells = first_round_shares(open_boards(boards, resv, slurm).size());
    } else {
      if (out.total_cells == 0 && out.cells.empty()) {
        fault = jobs.no_outcome_fault();  // or bad input, said once
        break;
      }
      const auto left = remaining(out);
      if (left.empty() || round >= rq.farm.max_attempts) break;
      // One task per board that can still take work (Slurm keeps drained boards out anyway).
      // One task per board that can still take work (Slurm keeps drained boards out anyway).
      std::size_t open = 0;
      for (const auto& b : boards) open += out.drained.count(b) == 0;
      cells = split_shares(k3launch::ShareUnit::kCells, left, open);
    }
    ++round;
    try {
      jobs.submit(cells, round);
    } catch (const SlurmUnreachable& e) {
      fault = fmt::format("Slurm did not take the jobs ({})", e.what());
      break;
    }
    collect(jobs, jobs.wait(), out);
    jobs.merge();
  }
  jobs.merge();
  out.tasks = jobs.tasks();
  if (fault.empty()) fault = jobs.fault();
  if (!fault.empty()) out.fault = fault + jobs.left_text();
  out.samples_after = sample_count(rq.farm.bench.db_path);
  out.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace k3slurm
