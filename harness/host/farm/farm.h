// The farm as the benchmark sweep and the nightly job see it: load the inventory, lease boards,
// deploy and probe them, hand out one Target per healthy board, and judge every failure as a board
// fault (quarantine the board; move its unfinished cells) or a cell fault (record the failed cell;
// carry on). Quarantines and probes are stored per run; a quarantine also outlives the run
// (farm_board_events): later runs leave the board alone until `k3tune farm release --board B`, or
// -- when the inventory says quarantine_until = "healthy" -- until a later run probes it healthy.
//
// Anything that goes wrong on the controller's side (the database busy, no file descriptors left,
// an exception from k3tune's own code) is never a board's fault: callers end the run with
// ControllerFailure and quarantine nothing.
//
// Typical use (one thread per board, or one board at a time):
//   k3farm::Farm farm(k3farm::Farm::load(spec, root), root, db.get(), run_uuid);
//   for (auto& b : farm.boards({"k3"})) farm.lease(b), farm.prepare(b);   // failures quarantine
//   for (auto& b : farm.healthy_boards()) {
//     auto r = farm.run(b, runner_args, timeout_s);
//     auto v = farm.judge(b, r);           // v.board_fault: requeue the cell elsewhere
//     auto h = farm.recheck(b);            // h.rebooted/throttled: re-measure since last probe
//   }
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "harness/host/farm/board.h"
#include "harness/host/farm/health.h"
#include "harness/host/farm/holder.h"
#include "harness/host/farm/inventory.h"
#include "harness/host/farm/lease.h"
#include "harness/host/farm/transport.h"
#include "harness/host/store/database_access.h"
#include "harness/host/store/farm_state.h"
#include "harness/host/store/sqlite.h"
#include "harness/host/targets/target.h"

namespace k3farm {

struct Verdict {
  Fault fault = Fault::kNone;
  bool board_fault = false;  // the board is quarantined: move this cell (and its others) elsewhere
  bool quarantined = false;  // the board is (now) out of this run, for whatever reason
  std::string reason;
};

struct QuarantineEntry {
  Fault fault = Fault::kNone;
  std::string reason;
};

// How long Farm::lease waits for a board that another controller holds (LeaseBusy), polling it.
struct LeaseWait {
  double max_s = 0;                                    // 0: do not wait
  std::function<bool()> keep_waiting;                  // false: stop waiting early (nothing left)
  std::function<void(const std::string&)> on_waiting;  // told once, with the holder, when waiting
};

// The board is out because of a quarantine an earlier run recorded (not lifted yet).
struct BoardQuarantined : LeaseError {
  using LeaseError::LeaseError;
};

class Farm {
 public:
  // `spec`: a farm file, or "local" for the built-in local farm; "" picks $K3TUNE_FARM, else
  // <root>/configs/farm.toml when it exists, else "local". Throws std::runtime_error on bad input.
  static FarmConfig load(const std::string& spec, const std::string& root);

  // `db` may be null (nothing persisted; leasing then throws). `run_uuid` tags quarantines,
  // probes and leases. `transports` makes each board's transport (empty: the inventory's).
  Farm(FarmConfig config, std::string root, k3store::Connection* db, std::string run_uuid,
       const TransportFactory& transports = {});
  // The same with the rows going through `db`: a controller's one writer (database_writer.h),
  // which the board threads share.
  Farm(FarmConfig config, std::string root, k3store::DatabaseAccess& db, std::string run_uuid,
       const TransportFactory& transports = {});
  ~Farm();  // releases leases, closes shared ssh connections

  const FarmConfig& config() const { return config_; }
  const std::string& run_uuid() const { return run_uuid_; }
  // Boards in inventory order carrying every tag in `tags` (all boards when empty).
  std::vector<std::string> boards(const std::vector<std::string>& tags = {}) const;
  Board& board(const std::string& name);  // throws std::out_of_range naming the board

  // Takes the exclusive lease (lease.h), waiting (`wait`) while another controller holds the
  // board. Throws BoardQuarantined (an earlier run's quarantine stands), LeaseBusy (still held
  // when the wait ended), LeaseError; an unreachable board throws BoardError and is quarantined.
  void lease(const std::string& board, const LeaseWait& wait = {});
  void release(const std::string& board);
  bool leased(const std::string& board) const;

  // Deploys the board's runner (once per build hash) and probes it; a failure quarantines the
  // board. Returns whether the board is healthy. A board under an earlier run's quarantine is not
  // touched (false) unless its inventory lets a healthy probe lift it: then this probe decides.
  bool prepare(const std::string& board);
  // One probe, stored; a failed probe quarantines the board. Becomes the baseline for recheck.
  HealthSample probe(const std::string& board);
  // Probes again and compares with the previous good probe: a reboot (or a failed probe)
  // quarantines the board; throttling is reported (samples since the last probe are suspect).
  HealthChange recheck(const std::string& board);

  // Runs the deployed runner on the board (board-side timeout, see Board::run_runner).
  RunResult run(const std::string& board, const std::vector<std::string>& args, double timeout_s,
                const RunOverride* override = nullptr);
  // Classifies a run and does the bookkeeping: board faults quarantine the board; runner timeouts
  // count, and farm.max_timeouts of them in a row quarantine it; a success resets the count.
  Verdict judge(const std::string& board, const RunResult& r);

  // Takes the board out of this run and of later ones (farm_board_events), with the reason.
  void quarantine(const std::string& board, Fault fault, const std::string& reason);
  bool quarantined(const std::string& board) const;
  std::map<std::string, QuarantineEntry> quarantined_boards() const;
  // Leased (when leasing is used), prepared and not quarantined, in inventory order.
  std::vector<std::string> healthy_boards() const;

  // Power recovery (power_recovery.h): when the board is out as unreachable or hung (in this run,
  // or by an earlier run's quarantine), its inventory names a PDU outlet and the day's attempts
  // are not used up, power-cycles it through pdudaemon, waits for SSH, deploys and probes it,
  // again while attempts are left. Healthy: the quarantine is lifted (here and in the database)
  // and true is returned; lease and prepare the board again to use it. Attempts used up: the
  // board stays quarantined as given up (false). Every step is a board event. `keep_waiting`
  // returning false ends the wait for SSH early (the run has nothing left for the board); `note`
  // hears each step.
  bool power_recover(const std::string& board, const std::function<bool()>& keep_waiting = {},
                     const std::function<void(const std::string&)>& note = {});

  // A Target for the sweep's existing code paths (probe, tcm, bench): name = board name, so the
  // cell identity includes the board. run() maps a board-side timeout to timed_out.
  std::unique_ptr<k3targets::Target> target(const std::string& board);
  // The same board running another runner (e.g. last night's, for a paired A/B on the board),
  // installed there next to the deployed one (Board::install) at `remote_runner`.
  std::unique_ptr<k3targets::Target> target(const std::string& board,
                                            const std::string& local_runner,
                                            const std::string& remote_runner);

 private:
  struct State {
    std::unique_ptr<Board> board;
    std::unique_ptr<Lease> lease;
    bool prepared = false;
    std::optional<HealthSample> baseline;
    int consecutive_timeouts = 0;
    std::optional<QuarantineEntry> quarantine;
    std::optional<k3store::BoardEventRow> standing;  // an earlier run's quarantine, not lifted yet
  };
  // An earlier run's quarantine that the inventory does not let a probe lift: the board is out of
  // this run too (in memory only; the run that found the fault has the rows). True when so.
  bool keep_out_standing(const std::string& board);
  // One row of farm_board_events for `board`, written now (power_recovery.cpp).
  void board_event(const std::string& board, k3store::BoardEvent event, Fault fault,
                   const std::string& reason);
  // The steps of power_recover after the outlet was switched: false when the board is not back.
  bool bring_back_after_power(const std::string& board, const std::function<bool()>& keep_waiting,
                              const std::function<void(const std::string&)>& note);
  // The board stays out: the day's power cycles are used up (once a day in the database).
  void give_up_power(const std::string& board, Fault fault, int attempts);
  void init(const TransportFactory& transports);
  State& state(const std::string& board);
  const State& state(const std::string& board) const;

  FarmConfig config_;
  std::string root_;
  std::unique_ptr<k3store::DatabaseAccess> own_db_;  // a connection given: used in place
  k3store::DatabaseAccess* db_ = nullptr;            // null: nothing persisted
  std::string run_uuid_;
  std::map<std::string, State> states_;
  mutable std::recursive_mutex mu_;  // the boards' bookkeeping
};

// A fresh run id (random UUID) for commands that are not part of a sweep.
std::string new_run_uuid();

}  // namespace k3farm
