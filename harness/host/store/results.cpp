#include "harness/host/store/results.h"

#include <cstdio>
#include <ctime>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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

void upsert_build(Connection& c, const BuildRecord& b) {
  auto s = c.prepare(
      "INSERT INTO builds(build_hash, variant, binary_path, compiler, flags, cmake_options, "
      "source_revision,"
      " source_dirty, recorded_by, created_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)"
      " ON CONFLICT(build_hash) DO UPDATE SET variant=excluded.variant, "
      "binary_path=excluded.binary_path,"
      " compiler=excluded.compiler, flags=excluded.flags, cmake_options=excluded.cmake_options,"
      " source_revision=excluded.source_revision, source_dirty=excluded.source_dirty,"
      " recorded_by=excluded.recorded_by"
      " WHERE excluded.recorded_by = 'k3tune build'");
  s.bind(1, b.build_hash)
      .bind(2, b.variant)
      .bind(3, b.binary_path)
      .bind(4, b.compiler)
      .bind(5, b.flags);
  s.bind(6, b.cmake_options_json).bind(7, b.source_revision);
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
  BuildRecord b{s.text(0), s.text(1), s.text(2),    s.text(3), s.text(4),
                s.text(5), s.text(6), std::nullopt, s.text(8), s.text(9)};
  if (const auto dirty = s.optional_integer(7)) b.source_dirty = *dirty != 0;
  return b;
}

std::vector<BuildRecord> read_builds(Statement& s) {
  std::vector<BuildRecord> out;
  while (s.step()) out.push_back(read_build(s));
  return out;
}

}  // namespace

std::optional<BuildRecord> find_build(Connection& c, const std::string& build_hash) {
  auto s = c.prepare(fmt::format("SELECT {} FROM builds WHERE build_hash = ?1", kBuildColumns));
  s.bind(1, build_hash);
  if (!s.step()) return std::nullopt;
  return read_build(s);
}

std::vector<BuildRecord> builds_with_prefix(Connection& c, const std::string& hash_prefix) {
  auto s = c.prepare(
      fmt::format("SELECT {} FROM builds WHERE build_hash LIKE ?1 || '%'", kBuildColumns));
  s.bind(1, hash_prefix);
  return read_builds(s);
}

std::vector<BuildRecord> clean_builds(Connection& c, const std::string& source_revision,
                                      const std::string& variant) {
  auto s = c.prepare(fmt::format(
      "SELECT {} FROM builds WHERE source_revision = ?1 AND variant = ?2 AND source_dirty = 0",
      kBuildColumns));
  s.bind(1, source_revision).bind(2, variant);
  return read_builds(s);
}

std::vector<BuildRecord> all_builds(Connection& c) {
  auto s = c.prepare(fmt::format("SELECT {} FROM builds", kBuildColumns));
  return read_builds(s);
}

void insert_run(Connection& c, const RunRecord& r) {
  auto s = c.prepare(
      "INSERT INTO runs(run_uuid, command, target, build_hash, host, processes, repetitions, "
      "warmup, order_json,"
      " started_at, status, settings_json) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,'running',?11)");
  s.bind(1, r.run_uuid).bind(2, r.command).bind(3, r.target).bind(4, r.build_hash).bind(5, r.host);
  s.bind(6, r.processes)
      .bind(7, r.repetitions)
      .bind(8, r.warmup)
      .bind(9, r.order_json)
      .bind(10, now_utc())
      .bind(11, r.settings_json);
  s.run();
}

void finish_run(Connection& c, const std::string& run_uuid, double wall_s, double kernel_s,
                double warmup_s) {
  auto s = c.prepare(
      "UPDATE runs SET status='finished', finished_at=?2, wall_s=?3, kernel_s=?4, warmup_s=?5,"
      " overhead_s=?6 WHERE run_uuid=?1");
  s.bind(1, run_uuid).bind(2, now_utc()).bind(3, wall_s).bind(4, kernel_s).bind(5, warmup_s);
  s.bind(6, wall_s - kernel_s - warmup_s);
  s.run();
}

void insert_cell(Connection& c, const CellRecord& cell) {
  auto s = c.prepare(
      "INSERT OR IGNORE INTO cells(cell_key, target, op, shape_json, params_json, build_hash, "
      "measure_json)"
      " VALUES (?1,?2,?3,?4,?5,?6,?7)");
  s.bind(1, cell.cell_key).bind(2, cell.target).bind(3, cell.op).bind(4, cell.shape_json);
  s.bind(5, cell.params_json).bind(6, cell.build_hash).bind(7, cell.measure_json);
  s.run();
}

void insert_process(Connection& c, const ProcessRecord& p) {
  Transaction tx(c);
  auto s = c.prepare(
      "INSERT INTO processes(run_uuid, cell_key, process_index, order_index, status, exit_code, "
      "reason, wall_ns,"
      " kernel_ns, path, runner_json, finished_at, disturbed, timing_json) VALUES "
      "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)");
  s.bind(1, p.run_uuid).bind(2, p.cell_key).bind(3, p.process_index).bind(4, p.order_index);
  s.bind(5, std::string(p.ok ? "ok" : "failed"));
  if (p.exit_code)
    s.bind(6, *p.exit_code);
  else
    s.bind_null(6);
  if (p.reason.empty())
    s.bind_null(7);
  else
    s.bind(7, p.reason);
  s.bind(8, p.wall_ns).bind(9, p.kernel_ns);
  if (p.path.empty())
    s.bind_null(10);
  else
    s.bind(10, p.path);
  if (p.runner_json.empty())
    s.bind_null(11);
  else
    s.bind(11, p.runner_json);
  s.bind(12, now_utc()).bind(13, p.disturbed ? 1 : 0);
  if (p.timing_json.empty())
    s.bind_null(14);
  else
    s.bind(14, p.timing_json);
  s.run();
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
    ins.bind(1, p.run_uuid)
        .bind(2, p.cell_key)
        .bind(3, p.process_index)
        .bind(4, static_cast<int>(i));
    ins.bind(5, r.ns).bind(6, r.cpu_ns).bind(7, r.iterations);
    for (const auto& [name, column] : counter_columns) {
      auto it = r.counters.find(name);
      if (it != r.counters.end())
        ins.bind(column, it->second);
      else
        ins.bind_null(column);
    }
    ins.bind(13, r.outlier ? 1 : 0);
    if (r.flags.empty())
      ins.bind_null(14);
    else
      ins.bind(14, nlohmann::json(r.flags).dump());
    ins.run();
  }
  tx.commit();
}

void insert_aggregate(Connection& c, const AggregateRecord& a) {
  auto s = c.prepare(
      "INSERT OR REPLACE INTO aggregates(run_uuid, cell_key, status, reason, processes, samples, "
      "source_runs,"
      " mean_ns, ci_low_ns, ci_high_ns, ci_rel_half_width, cv_between, cv_all, min_ns, median_ns, "
      "outliers,"
      " wide_ci, method, excluded_processes, stop_reason)"
      " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20)");
  s.bind(1, a.run_uuid).bind(2, a.cell_key).bind(3, std::string(a.ok ? "ok" : "failed"));
  if (a.reason.empty())
    s.bind_null(4);
  else
    s.bind(4, a.reason);
  s.bind(5, a.processes).bind(6, a.samples).bind(7, a.source_runs_json);
  s.bind(8, a.mean_ns).bind(9, a.ci_low_ns).bind(10, a.ci_high_ns).bind(11, a.ci_rel_half_width);
  s.bind(12, a.cv_between).bind(13, a.cv_all).bind(14, a.min_ns).bind(15, a.median_ns);
  s.bind(16, a.outliers).bind(17, a.wide_ci ? 1 : 0).bind(18, a.method);
  s.bind(19, a.excluded_processes);
  if (a.stop_reason.empty())
    s.bind_null(20);
  else
    s.bind(20, a.stop_reason);
  s.run();
}

bool cell_has_ok_aggregate(Connection& c, const std::string& cell_key) {
  auto s = c.prepare("SELECT 1 FROM aggregates WHERE cell_key = ?1 AND status = 'ok' LIMIT 1");
  s.bind(1, cell_key);
  return s.step();
}

std::vector<ProcessRef> orphan_processes(Connection& c, const std::string& cell_key) {
  auto s = c.prepare(
      "SELECT p.run_uuid, p.process_index FROM processes p JOIN runs r USING (run_uuid)"
      " WHERE p.cell_key = ?1 AND p.status = 'ok' AND r.status <> 'finished'"
      " AND NOT EXISTS (SELECT 1 FROM aggregates a WHERE a.cell_key = p.cell_key"
      "   AND (a.run_uuid = p.run_uuid OR a.source_runs LIKE '%\"' || p.run_uuid || '\"%'))"
      " ORDER BY r.started_at, p.order_index");
  s.bind(1, cell_key);
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
  auto s = c.prepare(
      "SELECT disturbed, (SELECT iterations FROM samples x WHERE x.run_uuid = p.run_uuid AND"
      " x.cell_key = p.cell_key AND x.process_index = p.process_index ORDER BY rep_index LIMIT 1)"
      " FROM processes p WHERE run_uuid = ?1 AND cell_key = ?2 AND process_index = ?3");
  s.bind(1, p.run_uuid).bind(2, cell_key).bind(3, p.process_index);
  ProcessState st;
  if (s.step()) {
    st.disturbed = s.integer(0) != 0;
    st.iterations = s.is_null(1) ? 0 : s.integer(1);
  }
  return st;
}

void insert_noise_floor(Connection& c, const NoiseFloorRecord& r) {
  auto s = c.prepare(
      "INSERT OR REPLACE INTO noise_floors(target, cpu_model, op, shape_json, measured_at, trials,"
      " mean_processes, noise_floor, abs_diff_q95, minimum_detectable_effect, settings_json)"
      " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)");
  s.bind(1, r.target).bind(2, r.cpu_model).bind(3, r.op).bind(4, r.shape_json);
  s.bind(5, r.measured_at.empty() ? now_utc() : r.measured_at).bind(6, r.trials);
  s.bind(7, r.mean_processes).bind(8, r.noise_floor).bind(9, r.abs_diff_q95);
  s.bind(10, r.minimum_detectable_effect).bind(11, r.settings_json);
  s.run();
}

std::optional<NoiseFloorRecord> latest_noise_floor(Connection& c, const std::string& target,
                                                   const std::string& cpu_model) {
  // The largest floor among the cells measured in the latest selfcheck: a verdict must clear the
  // noisiest representative cell, not the quietest.
  auto s = c.prepare(
      "SELECT target, cpu_model, op, shape_json, measured_at, trials, mean_processes, noise_floor,"
      " abs_diff_q95, minimum_detectable_effect, settings_json FROM noise_floors"
      " WHERE target = ?1 AND cpu_model = ?2 AND measured_at ="
      "  (SELECT max(measured_at) FROM noise_floors WHERE target = ?1 AND cpu_model = ?2)"
      " ORDER BY noise_floor DESC LIMIT 1");
  s.bind(1, target).bind(2, cpu_model);
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
  auto s = c.prepare(
      "UPDATE runs SET status = 'interrupted' WHERE run_uuid = ?1 AND status = 'running'");
  s.bind(1, run_uuid);
  s.run();
}

}  // namespace k3store
