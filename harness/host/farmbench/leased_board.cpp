#include "harness/host/farmbench/leased_board.h"

#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/host/bench/user_error.h"
#include "harness/host/farm/lease.h"
#include "harness/host/store/database.h"

namespace k3farmbench {

LeasedBoard::LeasedBoard(const k3farm::FarmConfig& farm, const std::string& root,
                         const std::string& db_path, const std::vector<std::string>& boards,
                         const std::function<void(const std::string&)>& note) {
  std::filesystem::create_directories(std::filesystem::absolute(db_path).parent_path());
  db_ = k3store::open_database(db_path, k3store::OpenMode::kCreateOrUpdate);
  farm_ = std::make_unique<k3farm::Farm>(farm, root, db_.get(), k3farm::new_run_uuid());
  std::vector<std::string> why;
  for (const auto& name : boards) {
    std::string reason;
    try {
      farm_->lease(name);
      if (farm_->prepare(name)) {
        board_ = name;
        target_ = std::make_unique<JudgedBoardTarget>(*farm_, name, root);
        return;
      }
      reason = farm_->quarantined_boards()[name].reason;
      farm_->release(name);
    } catch (const k3farm::LeaseError& e) {
      reason = e.what();
    } catch (const k3farm::BoardError& e) {
      reason = e.what();
    }
    why.push_back(fmt::format("{}: {}", name, reason));
    if (note) note(fmt::format("board {} not used: {}", name, reason));
  }
  throw k3bench::UserError(fmt::format("--farm {}: no board could be taken ({})", farm.name,
                                       fmt::join(why, "; ")));
}

LeasedBoard::~LeasedBoard() {
  target_.reset();
  farm_.reset();  // releases the lease, closes shared connections
}

}  // namespace k3farmbench
