#include "apps/cli/verify_slurm.h"

#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cli/slurm_job_request.h"
#include "harness/host/farm/farm.h"
#include "harness/host/slurm/slurm_validate.h"
#include "harness/host/slurm/slurm_worker.h"
#include "tuner/table.h"

namespace k3cli {

bool verify_on_slurm(const AppContext& ctx, const PlaceArgs& place,
                     const std::vector<std::string>& tables, const std::string& reservation) {
  if (place.farm.empty()) {
    if (!reservation.empty())
      throw k3bench::UserError("--reservation: a Slurm farm's option; give --farm");
    return false;
  }
  const auto cfg = k3slurm::load_farm(place.farm, ctx.root, {}, {}).farm;
  k3slurm::refuse_reservation_unless_slurm(cfg, reservation);
  if (!cfg.scheduler.slurm() || k3slurm::inside_slurm_job()) return false;
  const auto common =
      k3slurm::subcommand_arguments(ctx.argv, "verify", {}, {"--table", "--reservation"});
  const k3slurm::SlurmClient slurm;
  nlohmann::json all = nlohmann::json::array();
  for (const auto& file : tables) {
    std::vector<std::string> boards;
    // The board that made the table, unless --board/--tag say otherwise (as on a built-in farm).
    if (!place.boards.empty() || !place.tags.empty()) {
      boards = k3slurm::load_farm(place.farm, ctx.root, place.boards, place.tags).boards;
    } else {
      const auto t = k3tuner::read_table(file);
      if (!t.contains("board") || !t["board"].contains("name"))
        throw k3bench::UserError(
            fmt::format("{}: the table names no board; give --board or --tag", file));
      boards = {t["board"]["name"].get<std::string>()};
    }
    auto args = common;
    args.insert(args.end(), {"--table", std::filesystem::absolute(file).string()});
    const auto rq = slurm_job_request(ctx, place.farm, "table verify", args, boards, reservation);
    const auto o = k3slurm::run_as_slurm_job(rq, slurm);
    std::cerr << o.errors << std::flush;
    if (!o.fault.empty()) {
      std::cerr << "k3tune: " << file << ": " << o.fault << "\n";
      exit_code() = kProblems;
      continue;
    }
    if (ctx.json) {
      const auto j = nlohmann::json::parse(o.output, nullptr, false);
      all.push_back(j.is_discarded() ? nlohmann::json{{"table", file}, {"output", o.output}} : j);
    } else {
      if (tables.size() > 1) fmt::print("{}{}\n", &file == &tables.front() ? "" : "\n", file);
      fmt::print("Slurm job {} on {}\n{}", o.task.id, rq.boards.front(), o.output);
    }
    if (o.exit_code != 0 && exit_code() == 0) exit_code() = o.exit_code;
  }
  if (ctx.json)
    std::cout << (all.size() == 1 ? all[0] : nlohmann::json{{"tables", all}}).dump(2) << "\n";
  return true;
}

}  // namespace k3cli
