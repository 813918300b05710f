// One farm board taken for a command that measures in one place (tune, tune-gates, table verify,
// model, count with --farm): the first board of a selection that can be leased, deployed (by build
// hash) and probed, as a Target whose every run the farm judges. A board fault during the command
// quarantines the board and ends the command's measuring with k3targets::TargetLost (what was
// measured is stored); the lease is released when this object goes.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/host/farm/farm.h"
#include "harness/host/farmbench/board_target.h"
#include "harness/host/store/sqlite.h"

namespace k3farmbench {

class LeasedBoard {
 public:
  // `boards`: candidates in order (k3farm::select_boards). A board leased by someone else, or one
  // that fails its deploy or probe, is passed over (and `note` says why). When none could be
  // taken but some are held by another controller, those are tried again every second for up to
  // `lease_wait_s` (the first that is let go is taken); then UserError naming every board and its
  // reason. The leases and any quarantine are rows of the database at `db_path` under a fresh run
  // id.
  LeasedBoard(const k3farm::FarmConfig& farm, const std::string& root, const std::string& db_path,
              const std::vector<std::string>& boards,
              const std::function<void(const std::string&)>& note = {}, double lease_wait_s = 0);
  ~LeasedBoard();
  LeasedBoard(const LeasedBoard&) = delete;
  LeasedBoard& operator=(const LeasedBoard&) = delete;

  const k3targets::Target& target() const { return *target_; }
  const std::string& board() const { return board_; }
  k3farm::Farm& farm() { return *farm_; }

 private:
  // Leases and prepares `name`; false (with `reason`) when it cannot be taken; `busy` says whether
  // another controller holds it (worth another try).
  bool take(const std::string& name, const std::string& root, std::string& reason, bool& busy);

  std::unique_ptr<k3store::Connection> db_;
  std::unique_ptr<k3farm::Farm> farm_;
  std::string board_;
  std::unique_ptr<JudgedBoardTarget> target_;
};

}  // namespace k3farmbench
