#include "harness/host/store/results.h"

#include <cstdio>
#include <ctime>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/host/store/row_fields.h"

namespace k3store {

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string now_utc_us() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  std::tm tm{};
  gmtime_r(&ts.tv_sec, &tm);
  char buf[40];
  const auto n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%06ldZ", ts.tv_nsec / 1000);
  return buf;
}

std::string utc_us_at(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S.000000Z", &tm);
  return buf;
}

void upsert_build(Connection& c, const BuildRecord& b) {
  auto s = c.query(
      "INSERT INTO builds(build_hash, variant, binary_path, compiler, flags, cmake_options, "
      "source_revision,"
      " source_dirty, recorded_by, created_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)"
      " ON CONFLICT(build_hash) DO UPDATE SET variant=excluded.variant, "
      "binary_path=excluded.binary_path,"
      " compiler=excluded.compiler, flags=excluded.flags, cmake_options=excluded.cmake_options,"
      " source_revision=excluded.source_revision, source_dirty=excluded.source_dirty,"
      " recorded_by=excluded.recorded_by"
      " WHERE excluded.recorded_by = 'k3tune build'",
      b.build_hash, b.variant, b.binary_path, b.compiler, b.flags, b.cmake_options_json,
      b.source_revision);
  if (b.source_dirty)
    s.bind(8, *b.source_dirty ? 1 : 0);
  else
    s.bind_null(8);
  s.bind(9, b.recorded_by).bind(10, now_utc());
  s.run();
}

namespace {

constexpr const char* kBuildColumns =
    "build_hash, variant, binary_path, compiler, flags, cmake_options, source_revision, "
    "source_dirty, recorded_by, created_at";

BuildRecord read_build(const Statement& s) {
  BuildRecord b;
  read_fields(s, 0, b.build_hash, b.variant, b.binary_path, b.compiler, b.flags,
              b.cmake_options_json, b.source_revision);
  if (const auto dirty = s.optional_integer(7)) b.source_dirty = *dirty != 0;
  read_fields(s, 8, b.recorded_by, b.created_at);
  return b;
}

std::vector<BuildRecord> read_builds(Statement& s) {
  return read_rows(s, read_build);
}

}  // namespace

std::optional<BuildRecord> find_build(Connection& c, const std::string& build_hash) {
  auto s = c.query(fmt::format("SELECT {} FROM builds WHERE build_hash = ?1", kBuildColumns),
                   build_hash);
  if (!s.step()) return std::nullopt;
  return read_build(s);
}

std::vector<BuildRecord> builds_with_prefix(Connection& c, const std::string& hash_prefix) {
  auto s =
      c.query(fmt::format("SELECT {} FROM builds WHERE build_hash LIKE ?1 || '%'", kBuildColumns),
              hash_prefix);
  return read_builds(s);
}

std::vector<BuildRecord> clean_builds(Connection& c, const std::string& source_revision,
                                      const std::string& variant) {
  auto s = c.query(
      fmt::format(
          "SELECT {} FROM builds WHERE source_revision = ?1 AND variant = ?2 AND source_dirty = 0",
          kBuildColumns),
      source_revision, variant);
  return read_builds(s);
}

std::vector<BuildRecord> all_builds(Connection& c) {
  auto s = c.prepare(fmt::format("SELECT {} FROM builds", kBuildColumns));
  return read_builds(s);
}

void insert_run(Connection& c, const RunRecord& r) {
  c.run(
      "INSERT INTO runs(run_uuid, command, target, build_hash, host, processes, repetitions, "
      "warmup, order_json,"
      " started_at, status, settings_json) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,'running',?11)",
      r.run_uuid, r.command, r.target, r.build_hash, r.host, r.processes, r.repetitions, r.warmup,
      r.order_json, now_utc(), r.settings_json);
}

void finish_run(Connection& c, const std::string& run_uuid, double wall_s, double kernel_s,
                double warmup_s) {
  c.run(
      "UPDATE runs SET status='finished', finished_at=?2, wall_s=?3, kernel_s=?4, warmup_s=?5,"
      " overhead_s=?6 WHERE run_uuid=?1",
      run_uuid, now_utc(), wall_s, kernel_s, warmup_s, wall_s - kernel_s - warmup_s);
}

void insert_cell(Connection& c, const CellRecord& cell) {
  c.run(
      "INSERT OR IGNORE INTO cells(cell_key, target, op, shape_json, params_json, build_hash, "
      "measure_json)"
      " VALUES (?1,?2,?3,?4,?5,?6,?7)",
      cell.cell_key, cell.target, cell.op, cell.shape_json, cell.params_json, cell.build_hash,
      cell.measure_json);
}

void insert_process(Connection& c, const ProcessRecord& p) {
  Transaction tx(c);
  c.run(
      "INSERT INTO processes(run_uuid, cell_key, process_index, order_index, status, exit_code, "
      "reason, wall_ns,"
      " kernel_ns, path, runner_json, finished_at, disturbed, timing_json) VALUES "
      "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)",
      p.run_uuid, p.cell_key, p.process_index, p.order_index, std::string(p.ok ? "ok" : "failed"),
      p.exit_code, NullIfEmpty{p.reason}, p.wall_ns, p.kernel_ns, NullIfEmpty{p.path},
      NullIfEmpty{p.runner_json}, now_utc(), p.disturbed ? 1 : 0, NullIfEmpty{p.timing_json});
  auto ins = c.prepare(
      "INSERT INTO samples(run_uuid, cell_key, process_index, rep_index, ns, cpu_ns, iterations, "
      "cycles,"
      " instructions, cache_misses, stalled_cycles_frontend, stalled_cycles_backend, outlier,"
      " flags, cpu_migrations, context_switches)"
      " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)");
  // Counter name -> its column's parameter index in the statement above.
  const std::pair<const char*, int> counter_columns[] = {{"cycles", 8},
                                                         {"instructions", 9},
                                                         {"cache_misses", 10},
                                                         {"stalled_cycles_frontend", 11},
                                                         {"stalled_cycles_backend", 12},
                                                         {"cpu_migrations", 15},
                                                         {"context_switches", 16}};
  for (std::size_t i = 0; i < p.samples.size(); ++i) {
    const auto& r = p.samples[i];
    ins.bind_all(p.run_uuid, p.cell_key, p.process_index, static_cast<int>(i), r.ns, r.cpu_ns,
                 r.iterations);
    for (const auto& [name, column] : counter_columns) {
      auto it = r.counters.find(name);
      if (it != r.counters.end())
        ins.bind(column, it->second);
      else
        ins.bind_null(column);
    }
    const std::string flags = r.flags.empty() ? "" : nlohmann::json(r.flags).dump();
    ins.bind(13, r.outlier ? 1 : 0).bind(14, NullIfEmpty{flags});
    ins.run();
  }
  tx.commit();
}

void insert_aggregate(Connection& c, const AggregateRecord& a) {
  c.run(
      "INSERT OR REPLACE INTO aggregates(run_uuid, cell_key, status, reason, processes, samples, "
      "source_runs,"
      " mean_ns, ci_low_ns, ci_high_ns, ci_rel_half_width, cv_between, cv_all, min_ns, median_ns, "
      "outliers,"
      " wide_ci, method, excluded_processes, stop_reason)"
      " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20)",
      a.run_uuid, a.cell_key, std::string(a.ok ? "ok" : "failed"), NullIfEmpty{a.reason},
      a.processes, a.samples, a.source_runs_json, a.mean_ns, a.ci_low_ns, a.ci_high_ns,
      a.ci_rel_half_width, a.cv_between, a.cv_all, a.min_ns, a.median_ns, a.outliers,
      a.wide_ci ? 1 : 0, a.method, a.excluded_processes, NullIfEmpty{a.stop_reason});
}

bool cell_has_ok_aggregate(Connection& c, const std::string& cell_key) {
  auto s =
      c.query("SELECT 1 FROM aggregates WHERE cell_key = ?1 AND status = 'ok' LIMIT 1", cell_key);
  return s.step();
}

std::vector<ProcessRef> orphan_processes(Connection& c, const std::string& cell_key) {
  auto s = c.query(
      "SELECT p.run_uuid, p.process_index FROM processes p JOIN runs r USING (run_uuid)"
      " WHERE p.cell_key = ?1 AND p.status = 'ok' AND r.status <> 'finished'"
      " AND NOT EXISTS (SELECT 1 FROM aggregates a WHERE a.cell_key = p.cell_key"
      "   AND (a.run_uuid = p.run_uuid OR a.source_runs LIKE '%\"' || p.run_uuid || '\"%'))"
      " ORDER BY r.started_at, p.order_index",
      cell_key);
  std::vector<ProcessRef> out;
  while (s.step()) out.push_back({s.text(0), static_cast<int>(s.integer(1))});
  return out;
}

std::vector<std::vector<double>> process_times(Connection& c, const std::string& cell_key,
                                               const std::vector<ProcessRef>& processes) {
  auto s = c.prepare(
      "SELECT ns FROM samples WHERE run_uuid = ?1 AND cell_key = ?2 AND process_index = ?3 ORDER "
      "BY rep_index");
  std::vector<std::vector<double>> out;
  for (const auto& p : processes) {
    s.bind(1, p.run_uuid).bind(2, cell_key).bind(3, p.process_index);
    std::vector<double> t;
    while (s.step()) t.push_back(s.real(0));
    s.reset();
    out.push_back(std::move(t));
  }
  return out;
}

ProcessState process_state(Connection& c, const std::string& cell_key, const ProcessRef& p) {
  auto s = c.query(
      "SELECT disturbed, (SELECT iterations FROM samples x WHERE x.run_uuid = p.run_uuid AND"
      " x.cell_key = p.cell_key AND x.process_index = p.process_index ORDER BY rep_index LIMIT 1)"
      " FROM processes p WHERE run_uuid = ?1 AND cell_key = ?2 AND process_index = ?3",
      p.run_uuid, cell_key, p.process_index);
  ProcessState st;
  if (s.step()) {
    st.disturbed = s.integer(0) != 0;
    st.iterations = s.is_null(1) ? 0 : s.integer(1);
  }
  return st;
}

void insert_noise_floor(Connection& c, const NoiseFloorRecord& r) {
  c.run(
      "INSERT OR REPLACE INTO noise_floors(target, cpu_model, op, shape_json, measured_at, trials,"
      " mean_processes, noise_floor, abs_diff_q95, minimum_detectable_effect, settings_json)"
      " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
      r.target, r.cpu_model, r.op, r.shape_json, r.measured_at.empty() ? now_utc() : r.measured_at,
      r.trials, r.mean_processes, r.noise_floor, r.abs_diff_q95, r.minimum_detectable_effect,
      r.settings_json);
}

std::optional<NoiseFloorRecord> latest_noise_floor(Connection& c, const std::string& target,
                                                   const std::string& cpu_model) {
  // The largest floor among the cells measured in the latest selfcheck: a verdict must clear the
  // noisiest representative cell, not the quietest.
  auto s = c.query(
      "SELECT target, cpu_model, op, shape_json, measured_at, trials, mean_processes, noise_floor,"
      " abs_diff_q95, minimum_detectable_effect, settings_json FROM noise_floors"
      " WHERE target = ?1 AND cpu_model = ?2 AND measured_at ="
      "  (SELECT max(measured_at) FROM noise_floors WHERE target = ?1 AND cpu_model = ?2)"
      " ORDER BY noise_floor DESC LIMIT 1",
      target, cpu_model);
  if (!s.step()) return std::nullopt;
  NoiseFloorRecord r{.target = s.text(0),
                     .cpu_model = s.text(1),
                     .op = s.text(2),
                     .shape_json = s.text(3),
                     .measured_at = s.text(4),
                     .trials = static_cast<int>(s.integer(5)),
                     .mean_processes = s.real(6),
                     .noise_floor = s.real(7),
                     .abs_diff_q95 = s.real(8),
                     .minimum_detectable_effect = std::nullopt,
                     .settings_json = s.text(10)};
  if (!s.is_null(9)) r.minimum_detectable_effect = s.real(9);
  return r;
}

std::int64_t sample_count(Connection& c) {
  return c.scalar_int("SELECT count(*) FROM samples");
}

void mark_interrupted(Connection& c, const std::string& run_uuid) {
  c.run("UPDATE runs SET status = 'interrupted' WHERE run_uuid = ?1 AND status = 'running'",
        run_uuid);
}

}  // namespace k3store
