#include "harness/host/store/result_reads.h"

#include <fmt/format.h>

#include "harness/host/store/row_fields.h"

namespace k3store {
namespace {

// Each row type has one column list (these) and one reader (below, in the same order); `first` is
// the reader's first column.
constexpr const char* kRunColumns =
    "run_uuid, command, target, build_hash, host, order_json, processes, repetitions, warmup,"
    " coalesce(settings_json, '{}'), started_at, coalesce(finished_at, ''), status, wall_s,"
    " kernel_s, warmup_s, overhead_s";

constexpr const char* kCellColumns =
    "c.cell_key, c.target, c.op, c.shape_json, c.params_json, c.build_hash, c.measure_json";
constexpr int kCellColumnCount = 7;

constexpr const char* kAggregateColumns =
    "a.run_uuid, a.cell_key, a.status, a.reason, a.processes, a.samples, a.source_runs,"
    " a.mean_ns, a.ci_low_ns, a.ci_high_ns, a.ci_rel_half_width, a.cv_between, a.cv_all,"
    " a.min_ns, a.median_ns, a.outliers, a.wide_ci, a.method, a.excluded_processes, a.stop_reason";

constexpr const char* kPointColumns =
    "r.run_uuid, r.started_at, r.build_hash, c.target, c.op, c.shape_json, c.params_json,"
    " c.measure_json, a.mean_ns, a.ci_low_ns, a.ci_high_ns, a.processes, a.cell_key";

constexpr const char* kReportColumns =
    "run_uuid, cell_key, process_index, path, runner_json, disturbed";

RunRecord read_run(const Statement& s) {
  RunRecord r;
  read_fields(s, 0, r.run_uuid, r.command, r.target, r.build_hash, r.host, r.order_json,
              r.processes, r.repetitions, r.warmup, r.settings_json, r.started_at, r.finished_at,
              r.status, r.wall_s, r.kernel_s, r.warmup_s, r.overhead_s);
  return r;
}

CellRecord read_cell(const Statement& s, int first) {
  CellRecord c;
  read_fields(s, first, c.cell_key, c.target, c.op, c.shape_json, c.params_json, c.build_hash,
              c.measure_json);
  return c;
}

AggregateRecord read_aggregate(const Statement& s, int first) {
  AggregateRecord a;
  read_fields(s, first, a.run_uuid, a.cell_key);
  a.ok = s.text(first + 2) == "ok";
  read_fields(s, first + 3, a.reason, a.processes, a.samples, a.source_runs_json, a.mean_ns,
              a.ci_low_ns, a.ci_high_ns, a.ci_rel_half_width, a.cv_between, a.cv_all, a.min_ns,
              a.median_ns, a.outliers, a.wide_ci, a.method, a.excluded_processes, a.stop_reason);
  return a;
}

AggregatePoint read_point(const Statement& s) {
  AggregatePoint p;
  read_fields(s, 0, p.run_uuid, p.started_at, p.build_hash, p.target, p.op, p.shape_json,
              p.params_json, p.measure_json, p.mean_ns, p.ci_low_ns, p.ci_high_ns, p.processes,
              p.cell_key);
  return p;
}

ProcessReport read_report(const Statement& s) {
  ProcessReport r;
  read_fields(s, 0, r.run_uuid, r.cell_key, r.process_index, r.path);
  r.runner = nlohmann::json::parse(s.text(4), nullptr, false);
  read_field(s, 5, r.disturbed);
  return r;
}

}  // namespace

std::vector<RunRecord> runs_with_prefix(Connection& c, const std::string& uuid_prefix) {
  return select_rows(c, read_run,
                     fmt::format("SELECT {} FROM runs WHERE run_uuid LIKE ?1 || '%'", kRunColumns),
                     uuid_prefix);
}

std::vector<RunRecord> all_runs(Connection& c) {
  return select_rows(c, read_run,
                     fmt::format("SELECT {} FROM runs ORDER BY started_at, rowid", kRunColumns));
}

std::optional<std::string> latest_run_uuid(Connection& c) {
  return select_first_row(c, text_column,
                          "SELECT run_uuid FROM runs ORDER BY started_at DESC, rowid DESC LIMIT 1");
}

std::vector<std::string> earlier_runs(Connection& c, const std::string& target,
                                      const std::string& except_uuid,
                                      const std::string& started_at) {
  return select_rows(
      c, text_column,
      "SELECT run_uuid FROM runs WHERE target = ?1 AND run_uuid <> ?2 AND started_at <= ?3"
      " ORDER BY started_at DESC, rowid DESC",
      target, except_uuid, started_at);
}

std::vector<std::string> runs_in_window(Connection& c, const std::string& target,
                                        const std::string& since, const std::string& until,
                                        std::int64_t limit) {
  return select_rows(
      c, text_column,
      "SELECT run_uuid FROM runs WHERE target = ?1 AND started_at <= ?2 AND started_at >= ?3"
      " ORDER BY started_at DESC, rowid DESC LIMIT ?4",
      target, until, since, limit);
}

std::vector<CellAggregate> run_cells(Connection& c, const std::string& run_uuid) {
  auto s = c.query(
      fmt::format("SELECT {}, {} FROM cells c LEFT JOIN aggregates a ON a.cell_key = c.cell_key"
                  " AND a.run_uuid = ?1 WHERE c.cell_key IN (SELECT value FROM runs, "
                  "json_each(runs.order_json)"
                  "                      WHERE runs.run_uuid = ?1)"
                  " ORDER BY c.op, c.shape_json, c.params_json, c.build_hash",
                  kCellColumns, kAggregateColumns),
      run_uuid);
  std::vector<CellAggregate> out;
  while (s.step()) {
    CellAggregate x{read_cell(s, 0), std::nullopt};
    if (!s.is_null(kCellColumnCount + 2)) x.aggregate = read_aggregate(s, kCellColumnCount);
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<CellRecord> ok_cells_of_run_build(Connection& c, const std::string& run_uuid) {
  auto s = c.query(
      fmt::format("SELECT {} FROM aggregates a JOIN cells c USING (cell_key) WHERE a.run_uuid = ?1"
                  " AND a.status = 'ok' AND c.build_hash = (SELECT build_hash FROM runs WHERE "
                  "run_uuid = ?1)",
                  kCellColumns),
      run_uuid);
  std::vector<CellRecord> out;
  while (s.step()) out.push_back(read_cell(s, 0));
  return out;
}

std::vector<AggregatePoint> run_points(Connection& c, const std::string& run_uuid) {
  return select_rows(
      c, read_point,
      fmt::format(
          "SELECT {} FROM runs r JOIN aggregates a ON a.run_uuid = r.run_uuid AND a.status = 'ok'"
          " JOIN cells c ON c.cell_key = a.cell_key AND c.build_hash = r.build_hash"
          " WHERE r.run_uuid = ?1",
          kPointColumns),
      run_uuid);
}

std::vector<AggregatePoint> all_points(Connection& c) {
  return select_rows(
      c, read_point,
      fmt::format("SELECT {} FROM aggregates a JOIN runs r ON r.run_uuid = a.run_uuid"
                  " JOIN cells c ON c.cell_key = a.cell_key AND c.build_hash = r.build_hash"
                  " WHERE a.status = 'ok' AND a.mean_ns IS NOT NULL ORDER BY r.started_at, r.rowid",
                  kPointColumns));
}

std::vector<RunTargetCounts> aggregate_counts(Connection& c) {
  auto s = c.prepare(
      "SELECT a.run_uuid, c.target, sum(a.status = 'ok'), sum(a.status = 'failed')"
      " FROM aggregates a JOIN cells c ON c.cell_key = a.cell_key GROUP BY a.run_uuid, c.target");
  std::vector<RunTargetCounts> out;
  while (s.step())
    out.push_back(
        {s.text(0), s.text(1), static_cast<int>(s.integer(2)), static_cast<int>(s.integer(3))});
  return out;
}

std::vector<ProcessMean> counted_process_means(Connection& c, const std::string& run_uuid) {
  const auto read = [](const Statement& s) {
    return ProcessMean{s.text(0), static_cast<int>(s.integer(1)), s.real(2)};
  };
  return select_rows(
      c, read,
      "SELECT a.cell_key, p.process_index, avg(x.ns) FROM aggregates a"
      " JOIN processes p ON p.cell_key = a.cell_key AND p.status = 'ok'"
      "   AND (p.disturbed = 0 OR a.processes = 0 OR a.excluded_processes = 0)"
      "   AND (p.run_uuid = a.run_uuid OR a.source_runs LIKE '%\"' || p.run_uuid || '\"%')"
      " JOIN samples x ON x.run_uuid = p.run_uuid AND x.cell_key = p.cell_key"
      "   AND x.process_index = p.process_index"
      " WHERE a.run_uuid = ?1 AND a.status = 'ok'"
      " GROUP BY a.cell_key, p.run_uuid, p.process_index ORDER BY a.cell_key, p.process_index",
      run_uuid);
}

std::optional<ProcessReport> first_process_report(Connection& c, const std::string& run_uuid) {
  return select_first_row(
      c, read_report,
      fmt::format("SELECT {} FROM processes WHERE run_uuid = ?1 AND status = 'ok'"
                  " AND runner_json IS NOT NULL AND runner_json <> '' ORDER BY order_index LIMIT 1",
                  kReportColumns),
      run_uuid);
}

std::optional<ProcessReport> checked_process_report(Connection& c, const std::string& cell_key,
                                                    const std::string& run_uuid) {
  return select_first_row(
      c, read_report,
      fmt::format(
          "SELECT {} FROM processes WHERE cell_key = ?1 AND status = 'ok'"
          " AND runner_json IS NOT NULL AND runner_json <> ''"
          " ORDER BY (json_type(runner_json, '$.accuracy') = 'object') DESC, (run_uuid = ?2) DESC,"
          " order_index LIMIT 1",
          kReportColumns),
      cell_key, run_uuid);
}

std::optional<ProcessReport> first_counted_report(Connection& c, const std::string& run_uuid,
                                                  const std::string& cell_key) {
  return select_first_row(
      c, read_report,
      fmt::format("SELECT {} FROM processes WHERE run_uuid = ?1 AND cell_key = ?2 AND status = 'ok'"
                  " ORDER BY disturbed, process_index LIMIT 1",
                  kReportColumns),
      run_uuid, cell_key);
}

std::vector<ProcessReport> ok_process_reports(Connection& c, const std::string& run_uuid,
                                              const std::string& cell_key) {
  return select_rows(
      c, read_report,
      fmt::format(
          "SELECT {} FROM processes WHERE run_uuid = ?1 AND cell_key = ?2 AND status = 'ok'",
          kReportColumns),
      run_uuid, cell_key);
}

std::vector<double> counted_sample_times(Connection& c, const std::string& run_uuid,
                                         const std::string& cell_key) {
  return select_rows(
      c, real_column,
      "SELECT s.ns FROM samples s JOIN processes p ON p.run_uuid = s.run_uuid AND p.cell_key = "
      "s.cell_key AND p.process_index = s.process_index WHERE s.run_uuid = ?1 AND s.cell_key = ?2 "
      "AND p.status = 'ok' AND p.disturbed = 0 ORDER BY s.process_index, s.rep_index",
      run_uuid, cell_key);
}

std::vector<SampleTiming> counted_sample_timings(Connection& c, const std::string& run_uuid,
                                                 const std::string& cell_key) {
  const auto read = [](const Statement& s) {
    SampleTiming t;
    read_fields(s, 0, t.process_index, t.rep_index, t.ns, t.cpu_ns, t.iterations);
    return t;
  };
  return select_rows(
      c, read,
      "SELECT s.process_index, s.rep_index, s.ns, s.cpu_ns, s.iterations FROM samples s JOIN"
      " processes p ON p.run_uuid = s.run_uuid AND p.cell_key = s.cell_key AND p.process_index ="
      " s.process_index WHERE s.run_uuid = ?1 AND s.cell_key = ?2 AND p.status = 'ok' AND"
      " p.disturbed = 0 ORDER BY s.process_index, s.rep_index",
      run_uuid, cell_key);
}

ProcessCounts process_counts(Connection& c, const std::string& run_uuid) {
  auto s = c.query(
      "SELECT coalesce(sum(status = 'ok'), 0), coalesce(sum(status = 'failed'), 0),"
      " coalesce(sum(disturbed), 0) FROM processes WHERE run_uuid = ?1",
      run_uuid);
  ProcessCounts n;
  if (s.step())
    n = {static_cast<int>(s.integer(0)), static_cast<int>(s.integer(1)),
         static_cast<int>(s.integer(2))};
  return n;
}

}  // namespace k3store
