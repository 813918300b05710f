#include "harness/host/farmbench/farm_sweep_store.h"

#include "harness/host/store/results.h"

namespace k3farmbench {

void insert_sweep_cell(k3store::Connection& c, const SweepCellRow& r) {
  auto s = c.prepare(
      "INSERT OR REPLACE INTO farm_sweep_cells(sweep_uuid, cell_index, attempt, board, run_uuid,"
      " cell_key, outcome, reason, shard, at) VALUES (?1, ?2, ?3, ?4, NULLIF(?5, ''),"
      " NULLIF(?6, ''), ?7, NULLIF(?8, ''), ?9, ?10)");
  s.bind(1, r.sweep_uuid);
  s.bind(2, static_cast<std::int64_t>(r.cell_index));
  s.bind(3, static_cast<std::int64_t>(r.attempt));
  s.bind(4, r.board);
  s.bind(5, r.run_uuid);
  s.bind(6, r.cell_key);
  s.bind(7, r.outcome);
  s.bind(8, r.reason);
  s.bind(9, r.shard);
  s.bind(10, k3store::now_utc());
  s.run();
}

int mark_run_disturbed(k3store::Connection& c, const std::string& run_uuid,
                       const std::string& reason) {
  k3store::Transaction tx(c);
  auto p = c.prepare("UPDATE processes SET disturbed = 1 WHERE run_uuid = ?1");
  p.bind(1, run_uuid);
  p.run();
  const int marked = static_cast<int>(c.changes());
  auto a = c.prepare("UPDATE aggregates SET status = 'failed', reason = ?2 WHERE run_uuid = ?1");
  a.bind(1, run_uuid);
  a.bind(2, reason);
  a.run();
  tx.commit();
  return marked;
}

bool run_measured_cell(k3store::Connection& c, const std::string& run_uuid,
                       const std::string& cell_key) {
  auto s =
      c.prepare("SELECT 1 FROM aggregates WHERE run_uuid = ?1 AND cell_key = ?2 AND status = 'ok'");
  s.bind(1, run_uuid);
  s.bind(2, cell_key);
  return s.step();
}

std::int64_t sample_count(k3store::Connection& c) {
  return c.scalar_int("SELECT count(*) FROM samples");
}

}  // namespace k3farmbench
