#include "tuner/session_store.h"

#include "harness/host/store/results.h"

namespace k3tuner {

SessionRecord SessionStore::open(const SessionRecord& w) {
  auto find = db_.prepare("SELECT status, result_json, run_uuid FROM tuning_sessions WHERE session_id = ?1");
  find.bind(1, w.session_id);
  if (find.step()) {
    SessionRecord r = w;
    r.status = find.text(0);
    r.result_json = find.is_null(1) ? "" : find.text(1);
    r.run_uuid = find.is_null(2) ? "" : find.text(2);
    return r;
  }
  k3store::Transaction tx(db_);
  auto s = db_.prepare(
      "INSERT INTO tuning_sessions(session_id, created_at, command, target, build_hash, run_uuid, op, shape_json,"
      " model, space_json, strategy, seed, budget, objective, status)"
      " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,'running')");
  s.bind(1, w.session_id).bind(2, k3store::now_utc()).bind(3, w.command).bind(4, w.target).bind(5, w.build_hash);
  if (w.run_uuid.empty())
    s.bind_null(6);
  else
    s.bind(6, w.run_uuid);
  s.bind(7, w.op).bind(8, w.shape_json);
  if (w.model.empty())
    s.bind_null(9);
  else
    s.bind(9, w.model);
  s.bind(10, w.space_json).bind(11, w.strategy).bind(12, static_cast<std::int64_t>(w.seed)).bind(13, w.budget);
  s.bind(14, w.objective);
  s.run();
  tx.commit();
  return w;
}

std::vector<StoredMeasurement> SessionStore::measurements(const std::string& session_id) {
  auto s = db_.prepare(
      "SELECT point_key, measurement, round, value, disturbed, rejected, reason, cell_key FROM tuning_measurements"
      " WHERE session_id = ?1 ORDER BY round, point_key, measurement");
  s.bind(1, session_id);
  std::vector<StoredMeasurement> out;
  while (s.step()) {
    StoredMeasurement m;
    m.point_key = s.text(0);
    m.measurement = static_cast<int>(s.integer(1));
    m.round = static_cast<int>(s.integer(2));
    m.value = s.is_null(3) ? 0 : s.real(3);
    m.disturbed = s.integer(4) != 0;
    m.rejected = s.integer(5) != 0;
    m.reason = s.is_null(6) ? "" : s.text(6);
    m.cell_key = s.is_null(7) ? "" : s.text(7);
    out.push_back(std::move(m));
  }
  return out;
}

void SessionStore::add(const std::string& session_id, const StoredMeasurement& m) {
  k3store::Transaction tx(db_);
  auto s = db_.prepare(
      "INSERT OR REPLACE INTO tuning_measurements(session_id, point_key, measurement, round, value, disturbed, rejected,"
      " reason, cell_key) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)");
  s.bind(1, session_id).bind(2, m.point_key).bind(3, m.measurement).bind(4, m.round);
  if (m.rejected)
    s.bind_null(5);
  else
    s.bind(5, m.value);
  s.bind(6, m.disturbed ? 1 : 0).bind(7, m.rejected ? 1 : 0);
  if (m.reason.empty())
    s.bind_null(8);
  else
    s.bind(8, m.reason);
  if (m.cell_key.empty())
    s.bind_null(9);
  else
    s.bind(9, m.cell_key);
  s.run();
  tx.commit();
}

void SessionStore::finish(const std::string& session_id, const nlohmann::json& result,
                          const std::vector<nlohmann::json>& points) {
  k3store::Transaction tx(db_);
  auto p = db_.prepare(
      "INSERT OR REPLACE INTO tuning_points(session_id, point_key, op, shape_json, config_json, cell_key, status,"
      " reason, processes, mean_ns, ci_low_ns, ci_high_ns) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)");
  for (const auto& j : points) {
    p.bind(1, session_id).bind(2, j.at("point_key").get<std::string>()).bind(3, j.at("op").get<std::string>());
    p.bind(4, j.at("shape").dump()).bind(5, j.at("config").dump());
    if (j.value("cell_key", "").empty())
      p.bind_null(6);
    else
      p.bind(6, j.at("cell_key").get<std::string>());
    p.bind(7, j.at("status").get<std::string>());
    if (j.value("reason", "").empty())
      p.bind_null(8);
    else
      p.bind(8, j.at("reason").get<std::string>());
    p.bind(9, j.at("processes").get<int>());
    auto opt = [&](int col, const char* key) {
      if (j.contains(key) && j[key].is_number())
        p.bind(col, j[key].get<double>());
      else
        p.bind_null(col);
    };
    opt(10, "mean");
    opt(11, "ci_low");
    opt(12, "ci_high");
    p.run();
  }
  auto s = db_.prepare(
      "UPDATE tuning_sessions SET status = 'finished', finished_at = ?2, result_json = ?3 WHERE session_id = ?1");
  s.bind(1, session_id).bind(2, k3store::now_utc()).bind(3, result.dump());
  s.run();
  tx.commit();
}

void SessionStore::add_table(const std::string& table_id, const nlohmann::json& sessions, const std::string& path,
                             const std::string& table_json) {
  auto s = db_.prepare(
      "INSERT OR IGNORE INTO tuning_tables(table_id, created_at, sessions_json, path, table_json)"
      " VALUES (?1,?2,?3,?4,?5)");
  s.bind(1, table_id).bind(2, k3store::now_utc()).bind(3, sessions.dump()).bind(4, path).bind(5, table_json);
  s.run();
}

}  // namespace k3tuner
