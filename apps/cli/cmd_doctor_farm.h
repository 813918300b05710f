// `k3tune doctor --farm F`: the first-night check of every board of a farm (board_check.h), one
// line (or --json row) per check and board; exit 1 when a board lacks something a night needs.
#pragma once

#include <string>
#include <vector>

#include "apps/cli/app_context.h"

namespace k3cli {

struct FarmDoctorArgs {
  std::string farm;                 // farm file or "local"; "" : doctor checks this machine
  std::vector<std::string> boards;  // empty: all
  std::vector<std::string> tags;
  long long min_free_mib = 1024;
};

void run_farm_doctor(const AppContext& ctx, const FarmDoctorArgs& args);

}  // namespace k3cli
