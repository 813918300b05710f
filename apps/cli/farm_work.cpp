#include "apps/cli/farm_work.h"

#include <iostream>

#include "apps/cli/app_context.h"

namespace k3cli {

void report_work(const k3scheduler::WorkOutcome& outcome, bool json) {
  outcome.print(json);
  for (const auto& line : outcome.problems()) std::cerr << "k3tune: " << line << "\n";
  switch (outcome.status()) {
    case k3scheduler::WorkStatus::kOk:
      break;
    case k3scheduler::WorkStatus::kCellsFailed:
      exit_code() = kCellsFailed;
      break;
    case k3scheduler::WorkStatus::kProblems:
      exit_code() = kProblems;
      break;
  }
}

bool relay_job(const std::optional<k3scheduler::JobResult>& job) {
  if (!job) return false;
  std::cout << job->output << std::flush;
  std::cerr << job->errors << std::flush;
  if (!job->fault.empty()) {
    std::cerr << "k3tune: " << job->fault << "\n";
    exit_code() = kProblems;
    return true;
  }
  exit_code() = job->exit_code;
  return true;
}

}  // namespace k3cli
