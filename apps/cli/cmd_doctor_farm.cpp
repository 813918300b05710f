#include "apps/cli/cmd_doctor_farm.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <thread>

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

// Boards are checked side by side (a dead board's timeout overlaps the others' checks), at most
// this many at a time; their rows come out in inventory order all the same.
constexpr std::size_t kBoardsAtOnce = 8;

// Indexes of `names` by login (user, host, port): boards behind one login share one ssh
// connection (ControlPath), which a board's check closes at its end, so they go one at a time.
std::vector<std::vector<std::size_t>> by_login(const k3farm::FarmConfig& farm,
                                               const std::vector<std::string>& names) {
  std::map<std::string, std::size_t> group_of;
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto& b = *farm.find(names[i]);
    const std::string login = b.kind == k3targets::TargetKind::kSsh
                                  ? fmt::format("{}@{}:{}", b.user, b.host, b.port)
                                  : "local";
    if (!group_of.count(login)) {
      group_of[login] = groups.size();
      groups.emplace_back();
    }
    groups[group_of[login]].push_back(i);
  }
  return groups;
}

using BoardRows = std::vector<k3farm::CheckRow>;

// Checks every board on up to kBoardsAtOnce threads (one login at a time each); `take` gets each
// board's rows in `names` order as soon as they are known. A controller-side failure ends the
// command (UserError).
void check_boards(const k3farm::FarmConfig& farm, const std::vector<std::string>& names,
                  const k3farm::BoardCheckOptions& options,
                  const std::function<void(const BoardRows&)>& take) {
  std::vector<std::promise<BoardRows>> promised(names.size());
  std::vector<std::future<BoardRows>> results;
  for (auto& p : promised) results.push_back(p.get_future());
  const auto groups = by_login(farm, names);
  std::atomic<std::size_t> next{0};
  std::vector<std::jthread> workers;  // joined before the promises go
  for (std::size_t w = 0; w < std::min(kBoardsAtOnce, groups.size()); ++w)
    workers.emplace_back([&] {
      for (std::size_t g; (g = next++) < groups.size();)
        for (std::size_t i : groups[g]) {
          try {
            promised[i].set_value(k3farm::check_board(farm, *farm.find(names[i]), options));
          } catch (...) {
            promised[i].set_exception(std::current_exception());
          }
        }
    });
  for (auto& r : results) {
    try {
      take(r.get());
    } catch (const k3farm::ControllerFailure& e) {
      throw k3bench::UserError(e.what());
    }
  }
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
  check_boards(farm, names, options, [&](const BoardRows& board_rows) {
    for (const auto& r : board_rows) {
      if (!ctx.json) print_row(r, width);
      rows.push_back(r);
    }
    if (!ctx.json) std::fflush(stdout);  // a slow board: what is known so far is on screen
  });
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
