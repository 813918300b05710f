#include "harness/host/store/tuning_sessions.h"

#include <fmt/format.h>

#include "harness/host/store/results.h"
#include "harness/host/store/row_fields.h"

namespace k3store {
namespace {

constexpr const char* kSessionColumns =
    "session_id, command, target, build_hash, run_uuid, op, shape_json, model, space_json,"
    " strategy, seed, budget, objective, status, result_json, created_at, finished_at";

constexpr const char* kMeasurementColumns =
    "m.point_key, m.measurement, m.round, m.value, m.disturbed, m.rejected, m.reason, m.cell_key";

constexpr const char* kTuningPointColumns =
    "point_key, op, shape_json, config_json, cell_key, status, reason, processes, mean_ns,"
    " ci_low_ns, ci_high_ns";

TuningSessionRecord read_session(const Statement& s) {
  TuningSessionRecord r;
  read_fields(s, 0, r.session_id, r.command, r.target, r.build_hash, r.run_uuid, r.op, r.shape_json,
              r.model, r.space_json, r.strategy, r.seed, r.budget, r.objective, r.status,
              r.result_json, r.created_at, r.finished_at);
  return r;
}

// A rejected measurement's value is NULL: it reads as 0.
TuningMeasurementRecord read_measurement(const Statement& s) {
  TuningMeasurementRecord m;
  read_fields(s, 0, m.point_key, m.measurement, m.round, m.value, m.disturbed, m.rejected, m.reason,
              m.cell_key);
  return m;
}

TuningPointRecord read_tuning_point(const Statement& s) {
  TuningPointRecord p;
  read_fields(s, 0, p.point_key, p.op, p.shape_json, p.config_json, p.cell_key, p.status, p.reason,
              p.processes, p.mean_ns, p.ci_low_ns, p.ci_high_ns);
  return p;
}

}  // namespace

TuningSessionRecord TuningSessionStore::open(const TuningSessionRecord& w) {
  auto find = db_.prepare(
      "SELECT status, result_json, run_uuid FROM tuning_sessions WHERE session_id = ?1");
  find.bind(1, w.session_id);
  if (find.step()) {
    TuningSessionRecord r = w;
    r.status = find.text(0);
    r.result_json = find.text(1);
    r.run_uuid = find.text(2);
    return r;
  }
  Transaction tx(db_);
  auto s = db_.prepare(
      "INSERT INTO tuning_sessions(session_id, created_at, command, target, build_hash, run_uuid,"
      " op, shape_json, model, space_json, strategy, seed, budget, objective, status)"
      " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,'running')");
  s.bind(1, w.session_id).bind(2, now_utc()).bind(3, w.command).bind(4, w.target);
  s.bind(5, w.build_hash).bind_or_null(6, w.run_uuid).bind(7, w.op).bind(8, w.shape_json);
  s.bind_or_null(9, w.model).bind(10, w.space_json).bind(11, w.strategy);
  s.bind(12, static_cast<std::int64_t>(w.seed)).bind(13, w.budget).bind(14, w.objective);
  s.run();
  tx.commit();
  return w;
}

std::vector<TuningMeasurementRecord> TuningSessionStore::measurements(
    const std::string& session_id) {
  auto s =
      db_.prepare(fmt::format("SELECT {} FROM tuning_measurements m WHERE session_id = ?1"
                              " ORDER BY round, point_key, measurement",
                              kMeasurementColumns));
  s.bind(1, session_id);
  return read_rows(s, read_measurement);
}

void TuningSessionStore::add(const std::string& session_id, const TuningMeasurementRecord& m) {
  Transaction tx(db_);
  auto s = db_.prepare(
      "INSERT OR REPLACE INTO tuning_measurements(session_id, point_key, measurement, round,"
      " value, disturbed, rejected, reason, cell_key) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)");
  s.bind(1, session_id).bind(2, m.point_key).bind(3, m.measurement).bind(4, m.round);
  if (m.rejected)
    s.bind_null(5);
  else
    s.bind(5, m.value);
  s.bind(6, m.disturbed ? 1 : 0).bind(7, m.rejected ? 1 : 0);
  s.bind_or_null(8, m.reason).bind_or_null(9, m.cell_key);
  s.run();
  tx.commit();
}

void TuningSessionStore::finish(const std::string& session_id, const std::string& result_json,
                                const std::vector<TuningPointRecord>& points) {
  Transaction tx(db_);
  auto p = db_.prepare(
      "INSERT OR REPLACE INTO tuning_points(session_id, point_key, op, shape_json, config_json,"
      " cell_key, status, reason, processes, mean_ns, ci_low_ns, ci_high_ns)"
      " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)");
  for (const auto& r : points) {
    p.bind(1, session_id).bind(2, r.point_key).bind(3, r.op).bind(4, r.shape_json);
    p.bind(5, r.config_json).bind_or_null(6, r.cell_key).bind(7, r.status);
    p.bind_or_null(8, r.reason).bind(9, r.processes);
    p.bind(10, r.mean_ns).bind(11, r.ci_low_ns).bind(12, r.ci_high_ns);
    p.run();
  }
  auto s = db_.prepare(
      "UPDATE tuning_sessions SET status = 'finished', finished_at = ?2, result_json = ?3"
      " WHERE session_id = ?1");
  s.bind(1, session_id).bind(2, now_utc()).bind(3, result_json);
  s.run();
  tx.commit();
}

bool has_tuning_rows(Connection& c) {
  // The tables exist in every schema-5 database, so only rows say it (a database of another tool
  // could lack the tables altogether).
  if (c.scalar_int("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN"
                   " ('tuning_sessions', 'tuning_points', 'tuning_tables')") != 3)
    return false;
  return c.scalar_int("SELECT count(*) FROM tuning_sessions") +
             c.scalar_int("SELECT count(*) FROM tuning_tables") >
         0;
}

std::vector<TuningSessionRecord> tuning_sessions(Connection& c, const std::string& target,
                                                 const std::string& until, std::int64_t limit) {
  return select_rows(
      c, read_session,
      fmt::format("SELECT {} FROM tuning_sessions WHERE target = ?1 AND created_at <= ?2"
                  " ORDER BY created_at DESC LIMIT ?3",
                  kSessionColumns),
      target, until, limit);
}

std::vector<TuningPointRecord> tuning_points(Connection& c, const std::string& session_id) {
  return select_rows(
      c, read_tuning_point,
      fmt::format("SELECT {} FROM tuning_points WHERE session_id = ?1 ORDER BY point_key",
                  kTuningPointColumns),
      session_id);
}

std::vector<TuningMeasurementRecord> stored_measurements_of_cell(Connection& c,
                                                                 const std::string& cell_key) {
  return select_rows(
      c, read_measurement,
      fmt::format("SELECT {} FROM tuning_measurements m JOIN tuning_sessions s USING (session_id)"
                  " WHERE m.cell_key = ?1 AND m.rejected = 0 AND m.value IS NOT NULL"
                  " ORDER BY s.created_at, m.session_id, m.measurement",
                  kMeasurementColumns),
      cell_key);
}

std::optional<std::string> session_process_path(Connection& c, const std::string& session_id) {
  return select_first_row(
      c, text_column,
      "SELECT path FROM processes WHERE cell_key IN (SELECT cell_key FROM tuning_measurements"
      " WHERE session_id = ?1) AND path IS NOT NULL LIMIT 1",
      session_id);
}

}  // namespace k3store
