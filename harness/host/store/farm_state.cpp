#include "harness/host/store/farm_state.h"

#include "harness/host/store/results.h"
#include "harness/host/store/row_fields.h"

namespace k3store {
namespace {

constexpr const char* kLeaseColumns =
    "board, farm, run_uuid, holder_host, holder_pid, holder_start, remote_pid, acquired_at";

LeaseRow read_lease(const Statement& s) {
  LeaseRow r;
  read_fields(s, 0, r.board, r.farm, r.run_uuid, r.holder_host, r.holder_pid, r.holder_start,
              r.remote_pid, r.acquired_at);
  return r;
}

}  // namespace

std::optional<LeaseRow> insert_lease(Connection& c, const LeaseRow& row) {
  Transaction tx(c);
  auto find = c.query(std::string("SELECT ") + kLeaseColumns + " FROM farm_leases WHERE board = ?1",
                      row.board);
  if (find.step()) return read_lease(find);
  c.run(
      "INSERT INTO farm_leases(board, farm, run_uuid, holder_host, holder_pid, holder_start, "
      "remote_pid, acquired_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, ?7)",
      row.board, row.farm, row.run_uuid, row.holder_host, row.holder_pid, row.holder_start,
      row.acquired_at);
  tx.commit();
  return std::nullopt;
}

void set_lease_remote_pid(Connection& c, const std::string& board, std::int64_t pid) {
  c.run("UPDATE farm_leases SET remote_pid = ?2 WHERE board = ?1", board, pid);
}

void delete_lease(Connection& c, const LeaseRow& row) {
  c.run(
      "DELETE FROM farm_leases WHERE board = ?1 AND holder_host = ?2 AND holder_pid = ?3 AND "
      "holder_start = ?4",
      row.board, row.holder_host, row.holder_pid, row.holder_start);
}

std::vector<LeaseRow> lease_rows(Connection& c) {
  return select_rows(c, read_lease,
                     std::string("SELECT ") + kLeaseColumns + " FROM farm_leases ORDER BY board");
}

void insert_quarantine(Connection& c, const QuarantineRow& row) {
  c.run(
      "INSERT OR IGNORE INTO farm_quarantine(run_uuid, board, fault, reason, at) "
      "VALUES (?1, ?2, ?3, ?4, ?5)",
      row.run_uuid, row.board, row.fault, row.reason, row.at);
}

std::vector<QuarantineRow> quarantine_rows(Connection& c, const std::string& run_uuid) {
  const auto read = [](const Statement& s) {
    return QuarantineRow{s.text(0), s.text(1), s.text(2), s.text(3), s.text(4)};
  };
  return select_rows(c, read,
                     "SELECT run_uuid, board, fault, reason, at FROM farm_quarantine"
                     " WHERE run_uuid = ?1 ORDER BY at, board",
                     run_uuid);
}

namespace {

struct EventName {
  BoardEvent event;
  const char* name;
};
constexpr EventName kEventNames[] = {
    {BoardEvent::kQuarantined, "quarantined"}, {BoardEvent::kReleased, "released"},
    {BoardEvent::kRecovered, "recovered"},     {BoardEvent::kPowerRequested, "power_requested"},
    {BoardEvent::kPowerDone, "power_done"},    {BoardEvent::kCameBack, "came_back"},
    {BoardEvent::kNotBack, "not_back"},        {BoardEvent::kHealthy, "healthy"},
    {BoardEvent::kUnhealthy, "unhealthy"},     {BoardEvent::kGivenUp, "given_up"},
};

BoardEventRow read_event(const Statement& s) {
  return {s.text(0), s.text(1), s.text(2), board_event_from_string(s.text(3)),
          s.text(4), s.text(5), s.text(6), s.text(7)};
}

constexpr const char* kEventColumns =
    "SELECT farm, board, at, event, coalesce(fault, ''), reason, coalesce(run_uuid, ''), actor "
    "FROM farm_board_events ";

}  // namespace

const char* to_string(BoardEvent e) {
  for (const auto& n : kEventNames)
    if (n.event == e) return n.name;
  return "quarantined";
}

BoardEvent board_event_from_string(const std::string& name) {
  for (const auto& n : kEventNames)
    if (name == n.name) return n.event;
  throw StoreError("farm_board_events: unknown event '" + name + "'");
}

bool is_state_event(BoardEvent e) {
  return e == BoardEvent::kQuarantined || e == BoardEvent::kReleased ||
         e == BoardEvent::kRecovered || e == BoardEvent::kGivenUp;
}

void insert_board_event(Connection& c, const BoardEventRow& r) {
  c.run(
      "INSERT OR IGNORE INTO farm_board_events(farm, board, at, event, fault, reason, run_uuid, "
      "actor) VALUES (?1, ?2, ?3, ?4, NULLIF(?5, ''), ?6, NULLIF(?7, ''), ?8)",
      r.farm, r.board, r.at, std::string(to_string(r.event)), r.fault, r.reason, r.run_uuid,
      r.actor);
}

std::map<std::string, BoardEventRow> board_states(Connection& c, const std::string& farm) {
  // Only the state events decide; ties in `at` (two controllers in the same microsecond) resolve
  // to a quarantine: the safe side.
  auto s = c.query(std::string(kEventColumns) +
                       "WHERE farm = ?1 AND event IN ('quarantined', 'released', 'recovered', "
                       "'given_up') ORDER BY board, at, event IN ('quarantined', 'given_up')",
                   farm);
  std::map<std::string, BoardEventRow> out;
  while (s.step()) out[s.text(1)] = read_event(s);
  return out;
}

std::vector<BoardEventRow> board_events(Connection& c, const std::string& farm,
                                        const std::string& since) {
  return select_rows(c, read_event,
                     std::string(kEventColumns) + "WHERE farm = ?1 AND at >= ?2 ORDER BY board, at",
                     farm, since);
}

int power_requests_since(Connection& c, const std::string& farm, const std::string& board,
                         const std::string& since) {
  auto s = c.query(
      "SELECT count(*) FROM farm_board_events WHERE farm = ?1 AND board = ?2 AND at >= ?3 AND "
      "event = 'power_requested'",
      farm, board, since);
  s.step();
  return static_cast<int>(s.integer(0));
}

void insert_probe(Connection& c, const std::string& run_uuid, const std::string& board, bool ok,
                  const std::string& probe_json) {
  c.run(
      "INSERT INTO farm_probes(run_uuid, board, seq, taken_at, ok, probe_json) VALUES (?1, ?2, "
      "(SELECT coalesce(max(seq), -1) + 1 FROM farm_probes WHERE run_uuid = ?1 AND board = ?2), "
      "?3, ?4, ?5)",
      run_uuid, board, now_utc(), ok ? 1 : 0, probe_json);
}

std::vector<FarmProbeRow> probe_rows(Connection& c, const std::string& run_uuid) {
  const auto read = [](const Statement& s) {
    return FarmProbeRow{s.text(0), s.text(1),         static_cast<int>(s.integer(2)),
                        s.text(3), s.integer(4) != 0, s.text(5)};
  };
  return select_rows(c, read,
                     "SELECT run_uuid, board, seq, taken_at, ok, probe_json FROM farm_probes"
                     " WHERE run_uuid = ?1 ORDER BY board, seq",
                     run_uuid);
}

}  // namespace k3store
