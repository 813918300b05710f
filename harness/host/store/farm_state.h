// The farm's rows in the results database (schema: database.cpp, migration 2 -> 3):
//   farm_leases(board)                     who holds each board now (one row per leased board)
//   farm_quarantine(run_uuid, board)       boards taken out of a run, with the fault and reason
//   farm_probes(run_uuid, board, seq)      every health probe of a run, as JSON
//   farm_board_events(farm, board, at)     quarantines, releases, recoveries and power cycles
//                                          across runs (migrations 7 -> 8, 9 -> 10): the latest
//                                          state event is the board's state
// Who holds a lease (this host, a live process) is the farm's to judge
// (harness/host/farm/holder.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/host/store/sqlite.h"

namespace k3store {

struct LeaseRow {
  std::string board, farm, run_uuid, holder_host;
  std::int64_t holder_pid = 0;
  std::string holder_start;  // "<boot_id>:<start ticks>" of the holder process (pid reuse guard)
  std::optional<std::int64_t> remote_pid;  // board-side process holding the lock file
  std::string acquired_at;
};

struct QuarantineRow {
  std::string run_uuid, board, fault, reason, at;
};

// Inserts the row unless the board already has one; returns the existing row then.
std::optional<LeaseRow> insert_lease(Connection& c, const LeaseRow& row);
void set_lease_remote_pid(Connection& c, const std::string& board, std::int64_t pid);
// Deletes the row only if it is still the one described (same holder), so a holder never removes
// a lease that was recovered and taken by someone else meanwhile.
void delete_lease(Connection& c, const LeaseRow& row);
std::vector<LeaseRow> lease_rows(Connection& c);

// First quarantine of a board in a run wins (later faults of a quarantined board are moot).
void insert_quarantine(Connection& c, const QuarantineRow& row);
std::vector<QuarantineRow> quarantine_rows(Connection& c, const std::string& run_uuid);

// What happened to a board, beyond one run. The state events change whether the board is out:
// quarantined (by a run), released (by `k3tune farm release --board`), recovered (a later probe,
// or a power cycle, found it healthy), given_up (power cycles did not bring it back: it stays
// out). The others are the steps of one power cycle through the lab's PDU daemon
// (harness/host/farm/power_recovery.h), recorded as they happen.
enum class BoardEvent {
  kQuarantined,
  kReleased,
  kRecovered,
  kPowerRequested,  // the PDU daemon accepted a reboot of the board's outlet
  kPowerDone,       // the outlet's off/on delay has passed
  kCameBack,        // SSH answers again
  kNotBack,         // SSH did not answer within the inventory's ssh_wait_s
  kHealthy,         // the probe after the power cycle passed
  kUnhealthy,       // it failed (the reason says why)
  kGivenUp,         // the day's power cycles are used up: the board stays quarantined
};
const char* to_string(BoardEvent e);
// The inverse of to_string; StoreError for a name this k3tune does not know.
BoardEvent board_event_from_string(const std::string& name);
// Whether the event decides the board's state (the others are steps of a power cycle).
bool is_state_event(BoardEvent e);

struct BoardEventRow {
  std::string farm, board, at;
  BoardEvent event = BoardEvent::kQuarantined;
  std::string fault, reason, run_uuid, actor;
  bool quarantined() const {
    return event == BoardEvent::kQuarantined || event == BoardEvent::kGivenUp;
  }
};
void insert_board_event(Connection& c, const BoardEventRow& row);
// The latest state event of every board of `farm` that has one, by board.
std::map<std::string, BoardEventRow> board_states(Connection& c, const std::string& farm);
// Every event of `farm`'s boards at or after `since` (UTC text, as now_utc_us; "" : all), by board
// and time: what `farm list`, the nightly summary and the report show of the boards' history.
std::vector<BoardEventRow> board_events(Connection& c, const std::string& farm,
                                        const std::string& since = "");
// How many power cycles of `board` were requested at or after `since` (UTC text).
int power_requests_since(Connection& c, const std::string& farm, const std::string& board,
                         const std::string& since);

void insert_probe(Connection& c, const std::string& run_uuid, const std::string& board, bool ok,
                  const std::string& probe_json);
struct FarmProbeRow {
  std::string run_uuid, board;
  int seq = 0;  // 0, 1, ... per board and run
  std::string taken_at;
  bool ok = false;
  std::string probe_json;
};
// The probes of a run, by board and in the order taken.
std::vector<FarmProbeRow> probe_rows(Connection& c, const std::string& run_uuid);

}  // namespace k3store
