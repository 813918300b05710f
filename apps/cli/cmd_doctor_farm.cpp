#include "apps/cli/cmd_doctor_farm.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "harness/host/farm/board.h"
#include "harness/host/farm/board_check.h"
#include "harness/host/farm/farm.h"

namespace k3cli {
namespace {

k3farm::FarmConfig load_farm(const AppContext& ctx, const FarmDoctorArgs& a) {
  try {
    return k3farm::Farm::load(a.farm, ctx.root);
  } catch (const std::runtime_error& e) {
    throw k3bench::UserError(e.what());
  }
}

std::vector<std::string> chosen_boards(const k3farm::FarmConfig& farm, const FarmDoctorArgs& a) {
  try {
    return k3farm::select_boards(farm, a.boards, a.tags);
  } catch (const std::invalid_argument& e) {
    throw k3bench::UserError(e.what());
  }
}

// `width`: the board column, as wide as the longest name (at least 12).
void print_row(const k3farm::CheckRow& r, std::size_t width) {
  fmt::print("{:<{}} {:<10} {:<5} {}{}\n", r.board, width, r.check, k3farm::to_string(r.status),
             r.detail, r.fix.empty() ? "" : " -- fix: " + r.fix);
}

// "2 of 3 boards ready for a night; not ready: b2 (reachable, host-key)".
std::string summary(const std::vector<std::string>& names,
                    const std::vector<k3farm::CheckRow>& rows) {
  std::vector<std::string> not_ready;
  for (const auto& name : names) {
    std::vector<std::string> failed;
    for (const auto& r : rows)
      if (r.board == name && r.status == k3farm::CheckStatus::kFail) failed.push_back(r.check);
    if (!failed.empty()) not_ready.push_back(fmt::format("{} ({})", name, fmt::join(failed, ", ")));
  }
  std::string line = fmt::format("{} of {} boards ready for a night",
                                 names.size() - not_ready.size(), names.size());
  if (!not_ready.empty()) line += fmt::format("; not ready: {}", fmt::join(not_ready, ", "));
  return line;
}

}  // namespace

void run_farm_doctor(const AppContext& ctx, const FarmDoctorArgs& a) {
  if (a.min_free_mib < 0) throw k3bench::UserError("--min-free-mib: must be 0 or more");
  const auto farm = load_farm(ctx, a);
  const auto names = chosen_boards(farm, a);
  const k3farm::BoardCheckOptions options{ctx.root, a.min_free_mib};
  if (!ctx.json)
    fmt::print("farm {} ({}): {} board{}; a night needs {} MiB free in work_dir\n", farm.name,
               farm.source, names.size(), names.size() == 1 ? "" : "s", a.min_free_mib);
  std::size_t width = 12;
  for (const auto& name : names) width = std::max(width, name.size());
  std::vector<k3farm::CheckRow> rows;
  for (const auto& name : names) {
    std::vector<k3farm::CheckRow> board_rows;
    try {
      board_rows = k3farm::check_board(farm, *farm.find(name), options);
    } catch (const k3farm::ControllerFailure& e) {
      throw k3bench::UserError(e.what());
    }
    for (const auto& r : board_rows) {
      if (!ctx.json) print_row(r, width);
      rows.push_back(r);
    }
    if (!ctx.json) std::fflush(stdout);  // a slow board: what is known so far is on screen
  }
  const bool ready = k3farm::night_ready(rows);
  if (ctx.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows) out.push_back(r.to_json());
    std::cout << nlohmann::json{{"farm", farm.name},
                                {"source", farm.source},
                                {"min_free_mib", a.min_free_mib},
                                {"ready", ready},
                                {"rows", out}}
                     .dump(2)
              << "\n";
  } else {
    fmt::print("{}\n", summary(names, rows));
  }
  if (!ready) exit_code() = kProblems;
}

}  // namespace k3cli
