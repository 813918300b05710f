#include "harness/host/store/nightlies.h"

#include <fmt/format.h>

#include "harness/host/store/results.h"
#include "harness/host/store/row_fields.h"

namespace k3store {
namespace {

constexpr const char* kStepColumns =
    "st.nightly_id, st.step, st.seq, st.status, st.command, st.exit_code, st.started_at,"
    " st.finished_at, st.wall_s, st.detail_json";

// A nightly with its host build's source revision (builds b joined on the host build hash): the
// select that every reader of nightly rows completes with its WHERE and ORDER BY.
constexpr const char* kSelectNightlies =
    "SELECT n.nightly_id, n.profile, n.dir, n.started_at, n.status, n.exit_code,"
    " coalesce(n.host_build_hash, ''), coalesce(n.verdict_run_uuid, ''),"
    " coalesce(b.source_revision, ''), coalesce(n.finished_at, '')"
    " FROM nightlies n LEFT JOIN builds b ON b.build_hash = n.host_build_hash";

NightlyRow read_nightly(const Statement& s) {
  NightlyRow r;
  read_fields(s, 0, r.nightly_id, r.profile, r.dir, r.started_at, r.status, r.exit_code,
              r.host_build_hash, r.verdict_run_uuid, r.host_revision, r.finished_at);
  return r;
}

NightlyStepRow read_step(const Statement& s) {
  NightlyStepRow r;
  read_fields(s, 0, r.nightly_id, r.step, r.seq, r.status, r.command, r.exit_code, r.started_at,
              r.finished_at, r.wall_s, r.detail_json);
  return r;
}

}  // namespace

void begin_nightly(Connection& c, const NightlyRow& r) {
  c.run(
      "INSERT INTO nightlies(nightly_id, profile, dir, started_at, status) VALUES (?1, ?2, ?3, ?4,"
      " 'running') ON CONFLICT(nightly_id) DO UPDATE SET status = 'running', finished_at = NULL,"
      " exit_code = NULL",
      r.nightly_id, r.profile, r.dir, now_utc());
}

void finish_nightly(Connection& c, const std::string& id, const std::string& status, int exit_code,
                    const std::string& host_hash, const std::string& verdict_run) {
  c.run(
      "UPDATE nightlies SET status = ?2, exit_code = ?3, finished_at = ?4,"
      " host_build_hash = NULLIF(?5, ''), verdict_run_uuid = NULLIF(?6, '') WHERE nightly_id = ?1",
      id, status, exit_code, now_utc(), host_hash, verdict_run);
}

std::vector<NightlyRow> earlier_nightlies(Connection& c, const std::string& id) {
  return select_rows(c, read_nightly,
                     std::string(kSelectNightlies) +
                         " WHERE n.nightly_id <> ?1 AND n.status IN ('ok', 'regression')"
                         " AND n.host_build_hash IS NOT NULL ORDER BY n.finished_at DESC,"
                         " n.rowid DESC",
                     id);
}

std::vector<NightlyRow> all_nightlies(Connection& c) {
  return select_rows(c, read_nightly,
                     std::string(kSelectNightlies) + " ORDER BY n.started_at, n.rowid");
}

std::optional<NightlyStepRow> previous_step(Connection& c, const std::string& id,
                                            const std::string& step) {
  auto s = c.query(
      fmt::format("SELECT {} FROM nightlies n JOIN nightly_steps st ON st.nightly_id = n.nightly_id"
                  " WHERE n.nightly_id <> ?1 AND st.step = ?2 AND st.status = 'done'"
                  " AND n.status IN ('ok', 'regression') ORDER BY n.finished_at DESC LIMIT 1",
                  kStepColumns),
      id, step);
  if (!s.step()) return std::nullopt;
  return read_step(s);
}

std::string nightly_dir(Connection& c, const std::string& id) {
  auto s = c.query("SELECT dir FROM nightlies WHERE nightly_id = ?1", id);
  return s.step() ? s.text(0) : std::string();
}

std::optional<std::string> nightly_verdict_run(Connection& c, const std::string& id) {
  return select_first_row(
      c, text_column,
      "SELECT COALESCE(n.verdict_run_uuid, json_extract(v.detail_json, '$.run_uuid'), '')"
      " FROM nightlies n LEFT JOIN nightly_steps v ON v.nightly_id = n.nightly_id"
      " AND v.step = 'verdict-bench' WHERE n.nightly_id = ?1",
      id);
}

std::optional<NightlyStepRow> find_step(Connection& c, const std::string& id,
                                        const std::string& step) {
  return select_first_row(
      c, read_step,
      fmt::format("SELECT {} FROM nightly_steps st WHERE st.nightly_id = ?1 AND st.step = ?2",
                  kStepColumns),
      id, step);
}

std::vector<NightlyStepRow> all_nightly_steps(Connection& c) {
  return select_rows(
      c, read_step,
      fmt::format("SELECT {} FROM nightly_steps st ORDER BY st.nightly_id, st.seq, st.step",
                  kStepColumns));
}

void begin_step(Connection& c, const std::string& id, const std::string& step, int seq,
                const std::string& command) {
  c.run(
      "INSERT INTO nightly_steps(nightly_id, step, seq, status, command, started_at) VALUES"
      " (?1, ?2, ?3, 'running', ?4, ?5) ON CONFLICT(nightly_id, step) DO UPDATE SET"
      " status = 'running', command = ?4, started_at = ?5, finished_at = NULL, exit_code = NULL",
      id, step, seq, command, now_utc());
}

void finish_step(Connection& c, const std::string& id, const std::string& step, bool done,
                 int exit_code, double wall_s, const std::string& detail_json) {
  c.run(
      "UPDATE nightly_steps SET status = ?3, exit_code = ?4, finished_at = ?5, wall_s = ?6,"
      " detail_json = ?7 WHERE nightly_id = ?1 AND step = ?2",
      id, step, std::string(done ? "done" : "failed"), exit_code, now_utc(), wall_s, detail_json);
}

}  // namespace k3store
