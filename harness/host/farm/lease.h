// An exclusive lease on one board: a row in farm_leases (who holds it, for `farm list` and
// recovery) plus a lock held ON the board -- flock on <work_dir>/lease.lock, taken by a board-side
// process that lives exactly as long as our connection to it. That holder reads our stdin: when we
// release, or die (the kernel closes the pipe), it sees EOF, exits, and the board lock is free.
//
// With farm.lock_command set, the holder runs inside that command on this machine, so an existing
// reservation tool (flock on a shared file, a lab's reserve-board CLI) gates the lease as well.
//
// A stale lease is a row whose holder process is dead (on this host), or whose board lock is free
// while the row says held. Stale leases block new leases until `k3tune farm release --stale`.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "harness/host/farm/board.h"
#include "harness/host/farm/held_command.h"
#include "harness/host/farm/holder.h"
#include "harness/host/store/database_access.h"

namespace k3farm {

// The board is leased by someone else, or a stale lease needs recovery. One line.
struct LeaseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The board is held by a live lease of another controller (its row here, or its lock on the
// board): worth waiting for, unlike a stale lease or a refused reservation.
struct LeaseBusy : LeaseError {
  using LeaseError::LeaseError;
};

class Lease {
 public:
  // Takes the lease or throws LeaseBusy (held by a live lease: a row here or the board's lock),
  // LeaseError (stale, not granted) or BoardError (the board could not be reached). Nothing is
  // left behind on failure.
  Lease(const FarmConfig& farm, const Board& board, k3store::DatabaseAccess& db,
        const std::string& run_uuid);
  ~Lease();  // release()
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  const k3store::LeaseRow& row() const { return row_; }
  // Whether the board-side holder is still there (false: the connection died).
  bool holding();
  void release();

 private:
  void drop_row();  // the lease's row goes (only if it is still ours)
  const Board& board_;
  k3store::DatabaseAccess& db_;
  k3store::LeaseRow row_;
  std::unique_ptr<HeldCommand> holder_;
};

struct LeaseState {
  k3store::LeaseRow row;
  bool stale = false;
  std::string why;  // for stale: "holder pid 123 on host is gone", "board lock is free"
};
// Judges one lease row: is the holder alive, is the board lock held (asked on the board).
LeaseState judge_lease(const k3store::LeaseRow& row, const Board* board);
// Whether <work_dir>/lease.lock is currently held on the board (nullopt: board unreachable).
std::optional<bool> board_lock_held(const Board& board);
// Recovery of a stale lease: kills a leftover board-side holder if the lock is still held, then
// deletes the row. Throws LeaseError when the row is not stale.
std::string recover_stale_lease(k3store::Connection& db, const k3store::LeaseRow& row,
                                const Board* board);

}  // namespace k3farm
