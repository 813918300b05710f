// Where a measuring command measures: a target (`--target NAME`, configs/targets.toml) or one board
// of a farm (`--farm FILE|local` with `--board B` or `--tag T`), exactly as `bench --farm` takes
// its boards: leased, deployed by build hash, probed, every run judged (a board fault quarantines
// it and ends the command with exit 3, keeping what was measured). tune, tune-gates, table verify,
// model and count share these options.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/cli/app_context.h"
#include "apps/scheduler/scheduler.h"
#include "harness/host/farmbench/leased_board.h"

namespace k3cli {

struct PlaceArgs {
  std::string target = "local";
  std::string farm;  // "" : measure on the target
  std::vector<std::string> boards, tags;
  double lease_wait_s = 600;  // with --farm: how long to wait when every board is held by others
  // The command's --target option, to tell one given from its default (nullptr: the command has
  // none); --target together with --farm is refused.
  const CLI::Option* target_option = nullptr;
};

// Adds --target (unless `target` is false: a command that runs on a farm board or its own way),
// --farm, --board, --tag, --lease-wait to `cmd` (the last three need --farm).
void add_place_options(CLI::App* cmd, PlaceArgs& args, bool target = true);

// The farm, its scheduler and the boards that --farm/--board/--tag name (in inventory order);
// UserError for an unknown farm file, board or tag, or --target together with --farm.
struct FarmBoards {
  k3farm::FarmConfig farm;
  std::unique_ptr<k3scheduler::Scheduler> scheduler;
  std::vector<std::string> boards;
};
FarmBoards farm_boards(const AppContext& ctx, const PlaceArgs& args);

class MeasuringPlace {
 public:
  // UserError (one line, nothing written) for an unknown target, farm file, board or tag, or for
  // --target together with --farm.
  MeasuringPlace(const AppContext& ctx, const PlaceArgs& args);
  const k3targets::Target& target() const;
  // "board qemu-vlen1024 of farm local" / "target local".
  std::string describe() const;

 private:
  std::unique_ptr<k3targets::Target> target_;
  std::unique_ptr<k3farmbench::LeasedBoard> board_;
  std::string farm_name_;
};

}  // namespace k3cli
