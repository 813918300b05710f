#include "harness/host/store/farm_sweeps.h"

#include "harness/host/store/results.h"

namespace k3store {

void insert_sweep_cell(Connection& c, const SweepCellRow& r) {
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
  s.bind(10, now_utc());
  s.run();
}

int mark_run_disturbed(Connection& c, const std::string& run_uuid, const std::string& reason) {
  Transaction tx(c);
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

bool run_measured_cell(Connection& c, const std::string& run_uuid, const std::string& cell_key) {
  auto s =
      c.prepare("SELECT 1 FROM aggregates WHERE run_uuid = ?1 AND cell_key = ?2 AND status = 'ok'");
  s.bind(1, run_uuid);
  s.bind(2, cell_key);
  return s.step();
}

std::set<std::string> ok_aggregate_keys(Connection& c) {
  auto s = c.prepare("SELECT DISTINCT cell_key FROM aggregates WHERE status = 'ok'");
  std::set<std::string> out;
  while (s.step()) out.insert(s.text(0));
  return out;
}

ClaimOutcome claim_queue_cell(Connection& c, const QueueClaimRow& mine,
                              const std::function<bool(const QueueClaimRow&)>& may_take_over) {
  Transaction tx(c);
  auto find = c.prepare(
      "SELECT queue_key, cell_index, sweep_uuid, holder_host, holder_pid, holder_start, state"
      " FROM farm_queue_claims WHERE queue_key = ?1 AND cell_index = ?2");
  find.bind(1, mine.queue_key).bind(2, mine.cell_index);
  ClaimOutcome out;
  if (find.step()) {
    QueueClaimRow other{find.text(0),    static_cast<int>(find.integer(1)),
                        find.text(2),    find.text(3),
                        find.integer(4), find.text(5),
                        find.text(6)};
    if (other.sweep_uuid == mine.sweep_uuid) return {true, std::nullopt};
    out.other = std::move(other);
    if (!may_take_over(*out.other)) return out;
  }
  auto put = c.prepare(
      "INSERT OR REPLACE INTO farm_queue_claims(queue_key, cell_index, sweep_uuid, holder_host, "
      "holder_pid, holder_start, state, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'taken', ?7)");
  put.bind(1, mine.queue_key).bind(2, mine.cell_index).bind(3, mine.sweep_uuid);
  put.bind(4, mine.holder_host).bind(5, mine.holder_pid).bind(6, mine.holder_start);
  put.bind(7, now_utc());
  put.run();
  tx.commit();
  out.taken = true;
  return out;
}

void finish_claim(Connection& c, const std::string& queue_key, int cell_index,
                  const std::string& sweep_uuid) {
  auto s = c.prepare(
      "UPDATE farm_queue_claims SET state = 'done', at = ?4 WHERE queue_key = ?1 AND "
      "cell_index = ?2 AND sweep_uuid = ?3");
  s.bind(1, queue_key).bind(2, static_cast<std::int64_t>(cell_index)).bind(3, sweep_uuid);
  s.bind(4, now_utc());
  s.run();
}

void drop_claim(Connection& c, const std::string& queue_key, int cell_index,
                const std::string& sweep_uuid) {
  auto s = c.prepare(
      "DELETE FROM farm_queue_claims WHERE queue_key = ?1 AND cell_index = ?2 AND sweep_uuid = "
      "?3 AND state = 'taken'");
  s.bind(1, queue_key).bind(2, static_cast<std::int64_t>(cell_index)).bind(3, sweep_uuid);
  s.run();
}

}  // namespace k3store
