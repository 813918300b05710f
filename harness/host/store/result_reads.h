// Reads of measurement results for the verdicts, reports, publish and the model commands: runs,
// a run's cells with their aggregates, the figures of many runs (trends, the site's histories),
// and the processes behind them (their means, samples and runner reports). Rows are the records
// of results.h; the read-only figures below join several tables.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/store/results.h"

namespace k3store {

// The runs whose id starts with `uuid_prefix`.
std::vector<RunRecord> runs_with_prefix(Connection& c, const std::string& uuid_prefix);
// Every run, oldest first (by start, then by insertion).
std::vector<RunRecord> all_runs(Connection& c);
// The run started last, or nothing in an empty database.
std::optional<std::string> latest_run_uuid(Connection& c);
// Runs of `target` other than `except_uuid` started at or before `started_at`, newest first.
std::vector<std::string> earlier_runs(Connection& c, const std::string& target,
                                      const std::string& except_uuid,
                                      const std::string& started_at);
// Runs of `target` started within [since, until] (UTC text), newest first, at most `limit`.
std::vector<std::string> runs_in_window(Connection& c, const std::string& target,
                                        const std::string& since, const std::string& until,
                                        std::int64_t limit);

// A cell of a run's round order with the run's aggregate of it (none: the run stopped first).
struct CellAggregate {
  CellRecord cell;
  std::optional<AggregateRecord> aggregate;
};
// In (op, shape, params, build) order.
std::vector<CellAggregate> run_cells(Connection& c, const std::string& run_uuid);
// The cells of the run's own build that it aggregated successfully.
std::vector<CellRecord> ok_cells_of_run_build(Connection& c, const std::string& run_uuid);

// One run's successful aggregate of a cell of its own build: a point of a trend.
struct AggregatePoint {
  std::string run_uuid, started_at, build_hash;                   // the run's
  std::string target, op, shape_json, params_json, measure_json;  // the cell's
  std::optional<double> mean_ns, ci_low_ns, ci_high_ns;           // ns per call
  int processes = 0;
  std::string cell_key;  // the process means' key (counted_process_means)
};
std::vector<AggregatePoint> run_points(Connection& c, const std::string& run_uuid);
// Every such point with a mean, oldest run first.
std::vector<AggregatePoint> all_points(Connection& c);

// Aggregates per run and target of its cells (the boards of a farm run).
struct RunTargetCounts {
  std::string run_uuid, target;
  int ok = 0, failed = 0;
};
std::vector<RunTargetCounts> aggregate_counts(Connection& c);

// The mean time of a process the cell's aggregate counts (processes of the run, or of the
// interrupted runs a resumed cell adopted; disturbed ones left out when the sweep left them out).
struct ProcessMean {
  std::string cell_key;
  int process_index = 0;  // the round it ran in
  double mean_ns = 0;
};
// The run's aggregated cells, by cell and process index.
std::vector<ProcessMean> counted_process_means(Connection& c, const std::string& run_uuid);

// A successful process and what its runner reported.
struct ProcessReport {
  std::string run_uuid, cell_key;
  int process_index = 0;
  std::string path;       // kernel layer taken ("" when not recorded)
  nlohmann::json runner;  // the runner's JSON; discarded (is_discarded) when not JSON
  bool disturbed = false;
};
// The run's first successful process (in execution order) with a runner report.
std::optional<ProcessReport> first_process_report(Connection& c, const std::string& run_uuid);
// The cell's report with an accuracy block (any run: the inputs are a function of the seed), by
// preference from `run_uuid`, else its earliest.
std::optional<ProcessReport> checked_process_report(Connection& c, const std::string& cell_key,
                                                    const std::string& run_uuid);
// The cell's first successful process in the run, undisturbed ones first.
std::optional<ProcessReport> first_counted_report(Connection& c, const std::string& run_uuid,
                                                  const std::string& cell_key);
// Every successful process of the cell in the run.
std::vector<ProcessReport> ok_process_reports(Connection& c, const std::string& run_uuid,
                                              const std::string& cell_key);
// Every repetition's time (ns) of the cell's successful undisturbed processes in the run, in
// process then repetition order.
std::vector<double> counted_sample_times(Connection& c, const std::string& run_uuid,
                                         const std::string& cell_key);
// The same repetitions with their CPU time and calls (exports in other tools' formats).
struct SampleTiming {
  int process_index = 0, rep_index = 0;
  double ns = 0, cpu_ns = 0;  // per call
  std::int64_t iterations = 0;
};
std::vector<SampleTiming> counted_sample_timings(Connection& c, const std::string& run_uuid,
                                                 const std::string& cell_key);

struct ProcessCounts {
  int ok = 0, failed = 0, disturbed = 0;
};
ProcessCounts process_counts(Connection& c, const std::string& run_uuid);

}  // namespace k3store
