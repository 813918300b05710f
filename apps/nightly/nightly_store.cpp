#include "apps/nightly/nightly_store.h"

#include "harness/host/store/results.h"

namespace k3nightly {

void begin_nightly(k3store::Connection& c, const NightlyRow& r) {
  auto s = c.prepare(
      "INSERT INTO nightlies(nightly_id, profile, dir, started_at, status) VALUES (?1, ?2, ?3, ?4,"
      " 'running') ON CONFLICT(nightly_id) DO UPDATE SET status = 'running', finished_at = NULL,"
      " exit_code = NULL");
  s.bind(1, r.nightly_id);
  s.bind(2, r.profile);
  s.bind(3, r.dir);
  s.bind(4, k3store::now_utc());
  s.run();
}

void finish_nightly(k3store::Connection& c, const std::string& id, const std::string& status,
                    int exit_code, const std::string& host_hash, const std::string& verdict_run) {
  auto s = c.prepare(
      "UPDATE nightlies SET status = ?2, exit_code = ?3, finished_at = ?4,"
      " host_build_hash = NULLIF(?5, ''), verdict_run_uuid = NULLIF(?6, '') WHERE nightly_id = ?1");
  s.bind(1, id);
  s.bind(2, status);
  s.bind(3, exit_code);
  s.bind(4, k3store::now_utc());
  s.bind(5, host_hash);
  s.bind(6, verdict_run);
  s.run();
}

std::vector<NightlyRow> earlier_nightlies(k3store::Connection& c, const std::string& id) {
  auto s = c.prepare(
      "SELECT n.nightly_id, n.profile, n.dir, n.started_at, n.status, n.host_build_hash,"
      " COALESCE(n.verdict_run_uuid, ''), COALESCE(b.source_revision, '') FROM nightlies n"
      " LEFT JOIN builds b ON b.build_hash = n.host_build_hash WHERE n.nightly_id <> ?1"
      " AND n.status IN ('ok', 'regression') AND n.host_build_hash IS NOT NULL"
      " ORDER BY n.finished_at DESC, n.rowid DESC");
  s.bind(1, id);
  std::vector<NightlyRow> out;
  while (s.step()) {
    NightlyRow r;
    r.nightly_id = s.text(0);
    r.profile = s.text(1);
    r.dir = s.text(2);
    r.started_at = s.text(3);
    r.status = s.text(4);
    r.host_build_hash = s.text(5);
    r.verdict_run_uuid = s.text(6);
    r.host_revision = s.text(7);
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<PreviousStep> previous_step(k3store::Connection& c, const std::string& id,
                                          const std::string& step) {
  auto s = c.prepare(
      "SELECT n.nightly_id, COALESCE(st.detail_json, '') FROM nightlies n JOIN nightly_steps st"
      " ON st.nightly_id = n.nightly_id WHERE n.nightly_id <> ?1 AND st.step = ?2"
      " AND st.status = 'done' AND n.status IN ('ok', 'regression')"
      " ORDER BY n.finished_at DESC LIMIT 1");
  s.bind(1, id);
  s.bind(2, step);
  if (!s.step()) return std::nullopt;
  return PreviousStep{s.text(0), s.text(1)};
}

std::string nightly_dir(k3store::Connection& c, const std::string& id) {
  auto s = c.prepare("SELECT dir FROM nightlies WHERE nightly_id = ?1");
  s.bind(1, id);
  return s.step() ? s.text(0) : std::string();
}

std::optional<StepRow> find_step(k3store::Connection& c, const std::string& id,
                                 const std::string& step) {
  auto s = c.prepare(
      "SELECT status, COALESCE(detail_json, ''), COALESCE(exit_code, -1) FROM nightly_steps"
      " WHERE nightly_id = ?1 AND step = ?2");
  s.bind(1, id);
  s.bind(2, step);
  if (!s.step()) return std::nullopt;
  return StepRow{s.text(0), s.text(1), static_cast<int>(s.integer(2))};
}

void begin_step(k3store::Connection& c, const std::string& id, const std::string& step, int seq,
                const std::string& command) {
  auto s = c.prepare(
      "INSERT INTO nightly_steps(nightly_id, step, seq, status, command, started_at) VALUES"
      " (?1, ?2, ?3, 'running', ?4, ?5) ON CONFLICT(nightly_id, step) DO UPDATE SET"
      " status = 'running', command = ?4, started_at = ?5, finished_at = NULL, exit_code = NULL");
  s.bind(1, id);
  s.bind(2, step);
  s.bind(3, seq);
  s.bind(4, command);
  s.bind(5, k3store::now_utc());
  s.run();
}

void finish_step(k3store::Connection& c, const std::string& id, const std::string& step, bool done,
                 int exit_code, double wall_s, const std::string& detail_json) {
  auto s = c.prepare(
      "UPDATE nightly_steps SET status = ?3, exit_code = ?4, finished_at = ?5, wall_s = ?6,"
      " detail_json = ?7 WHERE nightly_id = ?1 AND step = ?2");
  s.bind(1, id);
  s.bind(2, step);
  s.bind(3, std::string(done ? "done" : "failed"));
  s.bind(4, exit_code);
  s.bind(5, k3store::now_utc());
  s.bind(6, wall_s);
  s.bind(7, detail_json);
  s.run();
}

}  // namespace k3nightly
