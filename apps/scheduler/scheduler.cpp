#include "apps/scheduler/scheduler.h"

#include <filesystem>
#include <iostream>

#include "apps/scheduler/builtin_scheduler.h"
#include "apps/scheduler/slurm_scheduler.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/farm/farm.h"

namespace k3scheduler {

std::string this_executable() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "k3tune" : p.string();
}

void WorkOutcome::print(bool json) const {
  if (json) {
    const auto j = to_json();
    if (!j.is_null()) std::cout << j.dump(2) << "\n";
  } else {
    print_text();
  }
}

void Caller::note(const std::string& line) const {
  if (!quiet && !json) std::cerr << "k3tune: " << line << "\n";
}

// The one place that knows which schedulers exist.
std::unique_ptr<Scheduler> scheduler_for(const k3farm::FarmConfig& farm, Caller caller) {
  switch (farm.scheduler.kind) {
    case k3farm::SchedulerKind::kSlurm:
      return std::make_unique<SlurmScheduler>(farm, std::move(caller));
    case k3farm::SchedulerKind::kBuiltin:
      break;
  }
  return std::make_unique<BuiltinScheduler>(farm, std::move(caller));
}

FarmAndScheduler open_farm(const std::string& farm_file, const Caller& caller) {
  FarmAndScheduler out;
  try {
    out.farm = k3farm::Farm::load(farm_file, caller.root);
  } catch (const std::runtime_error& e) {
    throw k3bench::UserError(e.what());
  }
  out.scheduler = scheduler_for(out.farm, caller);
  return out;
}

std::vector<std::string> choose_boards(const k3farm::FarmConfig& farm,
                                       const std::vector<std::string>& boards,
                                       const std::vector<std::string>& tags) {
  try {
    return k3farm::select_boards(farm, boards, tags);
  } catch (const std::invalid_argument& e) {  // an unknown board or tag
    throw k3bench::UserError(e.what());
  } catch (const std::runtime_error& e) {
    throw k3bench::UserError(e.what());
  }
}

}  // namespace k3scheduler
