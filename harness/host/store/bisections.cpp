#include "harness/host/store/bisections.h"

#include <nlohmann/json.hpp>

#include "harness/host/store/results.h"
#include "harness/host/store/row_fields.h"

namespace k3store {

void begin_bisection(Connection& c, const BisectionRecord& r) {
  c.run(
      "INSERT INTO bisections(bisection_id, good_revision, bad_revision, metric, variant, place,"
      " cases_json, commits, status, started_at, nightly_id)"
      " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,'running',?9,?10)",
      r.bisection_id, r.good_revision, r.bad_revision, r.metric, r.variant, r.place, r.cases_json,
      r.commits, now_utc(), NullIfEmpty{r.nightly_id});
}

void insert_bisection_probe(Connection& c, const BisectionProbeRecord& r) {
  c.run(
      "INSERT OR REPLACE INTO bisection_probes(bisection_id, seq, case_label, revision, position,"
      " outcome, reason, build_hash, run_uuid, effect, ci_low, ci_high, mde, rounds, attempts,"
      " verdict, at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17)",
      r.bisection_id, r.seq, r.case_label, r.revision, r.position, r.outcome, NullIfEmpty{r.reason},
      NullIfEmpty{r.build_hash}, NullIfEmpty{r.run_uuid}, r.effect, r.ci_low, r.ci_high, r.mde,
      r.rounds, r.attempts, NullIfEmpty{r.verdict}, now_utc());
}

void finish_bisection(Connection& c, const std::string& bisection_id, const std::string& status,
                      const std::string& first_bad, const std::vector<std::string>& range,
                      double wall_s) {
  const std::string range_json = range.empty() ? "" : nlohmann::json(range).dump();
  c.run(
      "UPDATE bisections SET status = ?2, first_bad = ?3, range_json = ?4, finished_at = ?5,"
      " wall_s = ?6 WHERE bisection_id = ?1",
      bisection_id, status, NullIfEmpty{first_bad}, NullIfEmpty{range_json}, now_utc(), wall_s);
}

std::vector<BisectionProbeRecord> bisection_probes(Connection& c, const std::string& bisection_id) {
  const auto read = [&](const Statement& s) {
    BisectionProbeRecord r;
    r.bisection_id = bisection_id;
    read_fields(s, 0, r.seq, r.case_label, r.revision, r.position, r.outcome, r.reason,
                r.build_hash, r.run_uuid, r.effect, r.ci_low, r.ci_high, r.mde, r.rounds,
                r.attempts, r.verdict);
    return r;
  };
  return select_rows(
      c, read,
      "SELECT seq, case_label, revision, position, outcome, reason, build_hash, run_uuid, effect,"
      " ci_low, ci_high, mde, rounds, attempts, verdict FROM bisection_probes"
      " WHERE bisection_id = ?1 ORDER BY seq, case_label",
      bisection_id);
}

std::vector<BisectionSummary> nightly_bisections(Connection& c) {
  auto s = c.prepare(
      "SELECT b.bisection_id, b.good_revision, b.bad_revision, b.metric, b.variant, b.place,"
      " b.cases_json, b.commits, coalesce(b.nightly_id, ''), b.status, coalesce(b.first_bad, ''),"
      " coalesce(b.range_json, '[]'), b.started_at,"
      " (SELECT count(DISTINCT seq) FROM bisection_probes p WHERE p.bisection_id = b.bisection_id),"
      " (SELECT count(DISTINCT seq) FROM bisection_probes p WHERE p.bisection_id = b.bisection_id"
      "  AND p.outcome = 'skip')"
      " FROM bisections b WHERE b.nightly_id IS NOT NULL ORDER BY b.started_at");
  return read_rows(s, [](const Statement& row) {
    BisectionSummary x;
    BisectionRecord& b = x.bisection;
    read_fields(row, 0, b.bisection_id, b.good_revision, b.bad_revision, b.metric, b.variant,
                b.place, b.cases_json, b.commits, b.nightly_id, b.status, b.first_bad, b.range_json,
                b.started_at, x.probed, x.skipped);
    return x;
  });
}

}  // namespace k3store
