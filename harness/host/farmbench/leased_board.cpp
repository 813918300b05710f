#include "harness/host/farmbench/leased_board.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/host/bench/user_error.h"
#include "harness/host/farm/lease.h"
#include "harness/host/store/database.h"

namespace k3farmbench {

LeasedBoard::LeasedBoard(const k3farm::FarmConfig& farm, const std::string& root,
                         const std::string& db_path, const std::vector<std::string>& boards,
                         const std::function<void(const std::string&)>& note, double lease_wait_s) {
  db_ = k3store::open_for_writing(db_path);
  farm_ = std::make_unique<k3farm::Farm>(farm, root, db_.get(), k3farm::new_run_uuid());
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(lease_wait_s);
  std::map<std::string, std::string> why;  // the latest reason of each board passed over
  std::vector<std::string> candidates = boards;
  for (bool first = true;; first = false) {
    std::vector<std::string> busy;
    for (const auto& name : candidates) {
      std::string reason;
      bool held = false;
      if (take(name, root, reason, held)) return;
      why[name] = reason;
      if (held) busy.push_back(name);
      if (note && first) note(fmt::format("board {} not used: {}", name, reason));
    }
    if (busy.empty() || std::chrono::steady_clock::now() >= deadline) break;
    if (note && first)
      note(fmt::format("waiting up to {:g} s for {} (held by another controller)", lease_wait_s,
                       fmt::join(busy, ", ")));
    std::this_thread::sleep_for(std::chrono::seconds(1));
    candidates = busy;
  }
  std::vector<std::string> lines;
  for (const auto& name : boards) lines.push_back(fmt::format("{}: {}", name, why[name]));
  throw k3bench::UserError(
      fmt::format("--farm {}: no board could be taken ({})", farm.name, fmt::join(lines, "; ")));
}

bool LeasedBoard::take(const std::string& name, const std::string& root, std::string& reason,
                       bool& busy) {
  try {
    farm_->lease(name);
    if (farm_->prepare(name)) {
      board_ = name;
      target_ = std::make_unique<JudgedBoardTarget>(*farm_, name, root);
      return true;
    }
    reason = farm_->quarantined_boards()[name].reason;
    farm_->release(name);
  } catch (const k3farm::LeaseBusy& e) {
    reason = e.what();
    busy = true;
  } catch (const k3farm::LeaseError& e) {
    reason = e.what();
  } catch (const k3farm::BoardError& e) {
    reason = e.what();
  }
  return false;
}

LeasedBoard::~LeasedBoard() {
  target_.reset();
  farm_.reset();  // releases the lease, closes shared connections
}

}  // namespace k3farmbench
