#include "apps/cli/measuring_place.h"

#include <iostream>

#include <fmt/format.h>

#include "apps/scheduler/scheduler.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/farm/inventory.h"

namespace k3cli {

void add_place_options(CLI::App* cmd, PlaceArgs& args, bool target) {
  if (target)
    args.target_option =
        cmd->add_option("--target", args.target, "target name (configs/targets.toml)")
            ->capture_default_str();
  auto* farm = cmd->add_option(
      "--farm", args.farm,
      "measure on a board of this farm instead: a farm file, or 'local' (host + qemu boards)");
  cmd->add_option("--board", args.boards,
                  "with --farm: the board (repeatable: the first that can be leased)")
      ->needs(farm);
  cmd->add_option("--tag", args.tags, "with --farm: a board with every tag (repeatable)")
      ->needs(farm);
  cmd->add_option("--lease-wait", args.lease_wait_s,
                  "with --farm: seconds to wait when every board is held by another controller")
      ->needs(farm)
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
}

FarmBoards farm_boards(const AppContext& ctx, const PlaceArgs& args) {
  if (args.target_option != nullptr && args.target_option->count() > 0)
    throw k3bench::UserError("--target and --farm: measure on one or the other");
  auto [farm, scheduler] = k3scheduler::open_farm(args.farm, ctx.caller());
  FarmBoards out{std::move(farm), std::move(scheduler), {}};
  out.boards = k3scheduler::choose_boards(out.farm, args.boards, args.tags);
  return out;
}

MeasuringPlace::MeasuringPlace(const AppContext& ctx, const PlaceArgs& args) {
  if (args.farm.empty()) {
    target_ = ctx.target(args.target);
    return;
  }
  const FarmBoards f = farm_boards(ctx, args);
  farm_name_ = f.farm.name;
  board_ = f.scheduler->lease_board(
      f.boards,
      [&ctx](const std::string& line) {
        if (!ctx.quiet) std::cerr << "k3tune: " << line << "\n";
      },
      args.lease_wait_s);
}

const k3targets::Target& MeasuringPlace::target() const {
  return board_ ? board_->target() : *target_;
}

std::string MeasuringPlace::describe() const {
  return board_ ? fmt::format("board {} of farm {}", board_->board(), farm_name_)
                : fmt::format("target {}", target_->name());
}

}  // namespace k3cli
