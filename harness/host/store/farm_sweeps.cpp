#include "harness/host/store/farm_sweeps.h"

#include "harness/host/store/results.h"

namespace k3store {

void insert_sweep_cell(Connection& c, const SweepCellRow& r) {
  c.run(
      "INSERT OR REPLACE INTO farm_sweep_cells(sweep_uuid, cell_index, attempt, board, run_uuid,"
      " cell_key, outcome, reason, shard, at) VALUES (?1, ?2, ?3, ?4, NULLIF(?5, ''),"
      " NULLIF(?6, ''), ?7, NULLIF(?8, ''), ?9, ?10)",
      r.sweep_uuid, static_cast<std::int64_t>(r.cell_index), static_cast<std::int64_t>(r.attempt),
      r.board, r.run_uuid, r.cell_key, r.outcome, r.reason, r.shard, now_utc());
}

int mark_run_disturbed(Connection& c, const std::string& run_uuid, const std::string& reason) {
  Transaction tx(c);
  c.run("UPDATE processes SET disturbed = 1 WHERE run_uuid = ?1", run_uuid);
  const int marked = static_cast<int>(c.changes());
  c.run("UPDATE aggregates SET status = 'failed', reason = ?2 WHERE run_uuid = ?1", run_uuid,
        reason);
  tx.commit();
  return marked;
}

bool run_measured_cell(Connection& c, const std::string& run_uuid, const std::string& cell_key) {
  auto s =
      c.query("SELECT 1 FROM aggregates WHERE run_uuid = ?1 AND cell_key = ?2 AND status = 'ok'",
              run_uuid, cell_key);
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
  auto find = c.query(
      "SELECT queue_key, cell_index, sweep_uuid, holder_host, holder_pid, holder_start, state"
      " FROM farm_queue_claims WHERE queue_key = ?1 AND cell_index = ?2",
      mine.queue_key, mine.cell_index);
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
  c.run(
      "INSERT OR REPLACE INTO farm_queue_claims(queue_key, cell_index, sweep_uuid, holder_host, "
      "holder_pid, holder_start, state, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'taken', ?7)",
      mine.queue_key, mine.cell_index, mine.sweep_uuid, mine.holder_host, mine.holder_pid,
      mine.holder_start, now_utc());
  tx.commit();
  out.taken = true;
  return out;
}

void finish_claim(Connection& c, const std::string& queue_key, int cell_index,
                  const std::string& sweep_uuid) {
  c.run(
      "UPDATE farm_queue_claims SET state = 'done', at = ?4 WHERE queue_key = ?1 AND "
      "cell_index = ?2 AND sweep_uuid = ?3",
      queue_key, static_cast<std::int64_t>(cell_index), sweep_uuid, now_utc());
}

void drop_claim(Connection& c, const std::string& queue_key, int cell_index,
                const std::string& sweep_uuid) {
  c.run(
      "DELETE FROM farm_queue_claims WHERE queue_key = ?1 AND cell_index = ?2 AND sweep_uuid = "
      "?3 AND state = 'taken'",
      queue_key, static_cast<std::int64_t>(cell_index), sweep_uuid);
}

}  // namespace k3store
