#include "apps/scheduler/farm_sweep_outcome.h"
#include "harness/host/bench/child_output.h"

#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace k3scheduler {
namespace {

nlohmann::json farm_bench_json(const k3farmbench::FarmBenchOutcome& o, const std::string& db_path) {
  nlohmann::json cells = nlohmann::json::array();
  for (const auto& c : o.cells) {
    nlohmann::json j = {{"index", c.index},
                        {"op", c.spec.op},
                        {"shape", c.spec.shape},
                        {"params", c.spec.params},
                        {"label", c.spec.label()},
                        {"board", c.board},
                        {"run_uuid", c.run_uuid},
                        {"cell_key", c.cell_key},
                        {"status", k3farmbench::to_string(c.status)},
                        {"reason", c.reason},
                        {"attempts", c.attempts},
                        {"history", c.history}};
    if (c.has_aggregate && c.aggregate.ok) {
      j["processes"] = c.aggregate.processes;
      j["mean_ns"] = *c.aggregate.mean_ns;
      if (c.aggregate.ci_rel_half_width) j["ci95_rel_half_width"] = *c.aggregate.ci_rel_half_width;
    }
    cells.push_back(j);
  }
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& [board, run] : o.runs) runs.push_back({{"board", board}, {"run_uuid", run}});
  nlohmann::json quarantined = nlohmann::json::object();
  for (const auto& [board, q] : o.quarantined)
    quarantined[board] = {{"fault", k3farm::to_string(q.fault)}, {"reason", q.reason}};
  return {{"schema", k3bench::schema_id(k3bench::ChildOutput::kBench)},
          {"sweep_uuid", o.sweep_uuid},
          {"farm", o.farm_name},
          {"farm_source", o.farm_source},
          {"boards", o.boards},
          {"unused_boards", o.unused},
          {"quarantined", quarantined},
          {"runs", runs},
          {"cells", cells},
          {"total_cells", o.total_cells},
          {"measured_cells", o.count(k3farmbench::CellStatus::kMeasured)},
          {"skipped_cells", o.count(k3farmbench::CellStatus::kSkipped)},
          {"failed_cells", o.count(k3farmbench::CellStatus::kFailed)},
          {"unmeasured_cells", o.count(k3farmbench::CellStatus::kUnmeasured)},
          {"processes_run", o.processes_run},
          {"processes_failed", o.processes_failed},
          {"samples_before", o.samples_before},
          {"samples_after", o.samples_after},
          {"wall_s", o.wall_s},
          {"database_writes",
           {{"writes", o.writes.writes},
            {"rows", o.writes.rows},
            {"batches", o.writes.batches},
            {"p50_ms", o.writes.p50_ms},
            {"p99_ms", o.writes.p99_ms},
            {"max_ms", o.writes.max_ms}}},
          {"database", db_path}};
}

void print_farm_bench(const k3farmbench::FarmBenchOutcome& o, const std::string& db_path) {
  fmt::print("{:<46} {:<14} {:>3} {:>5} {:>11} {:>8}  {}\n", "cell", "board", "try", "P", "mean us",
             "CI95 +-", "notes");
  for (const auto& c : o.cells) {
    std::string notes = k3farmbench::to_string(c.status);
    if (!c.reason.empty()) notes += ": " + c.reason;
    for (const auto& h : c.history) notes += fmt::format(" [moved from {}]", h);
    const bool figures = c.has_aggregate && c.aggregate.ok && c.aggregate.mean_ns;
    fmt::print("{:<46} {:<14} {:>3} {:>5} {:>11} {:>8}  {}\n", c.spec.label(),
               c.board.empty() ? "-" : c.board, c.attempts,
               figures ? fmt::format("{}", c.aggregate.processes) : "-",
               figures ? fmt::format("{:.3f}", *c.aggregate.mean_ns / 1e3) : "-",
               figures && c.aggregate.ci_rel_half_width
                   ? fmt::format("{:.2f}%", *c.aggregate.ci_rel_half_width * 100)
                   : "-",
               notes);
  }
  for (const auto& [board, why] : o.unused) fmt::print("board {} not used: {}\n", board, why);
  for (const auto& [board, q] : o.quarantined)
    fmt::print("board {} quarantined ({}): {}\n", board, k3farm::to_string(q.fault), q.reason);
  fmt::print(
      "farm sweep {} on {} ({}): {} of {} cells in this shard; {} measured, {} skipped, {} failed, "
      "{} unmeasured; {} runner processes ({} failed) in {} batch runs; samples in the database "
      "{} -> {}; {:.1f} s; database {}\n",
      o.sweep_uuid, o.farm_name, fmt::join(o.boards, ","), o.cells.size(), o.total_cells,
      o.count(k3farmbench::CellStatus::kMeasured), o.count(k3farmbench::CellStatus::kSkipped),
      o.count(k3farmbench::CellStatus::kFailed), o.count(k3farmbench::CellStatus::kUnmeasured),
      o.processes_run, o.processes_failed, o.runs.size(), o.samples_before, o.samples_after,
      o.wall_s, db_path);
  fmt::print("database writer: {}\n", o.writes.summary());
}

}  // namespace

nlohmann::json FarmSweepWork::to_json() const {
  return farm_bench_json(out_, db_path_);
}

void FarmSweepWork::print_text() const {
  print_farm_bench(out_, db_path_);
}

WorkStatus FarmSweepWork::status() const {
  return out_.count(k3farmbench::CellStatus::kFailed) +
                     out_.count(k3farmbench::CellStatus::kUnmeasured) >
                 0
             ? WorkStatus::kCellsFailed
             : WorkStatus::kOk;
}

}  // namespace k3scheduler
