#include "rounds.h"

#include <algorithm>
#include <stdexcept>

#include "sequential.h"

namespace k3tune {

RoundPlanner::RoundPlanner(std::vector<std::size_t> group_of, RoundsOptions options)
    : group_of_(std::move(group_of)), options_(options), units_(group_of_.size()) {
  if (options_.min_processes < 1) throw std::invalid_argument("RoundPlanner: min_processes < 1");
  options_.max_processes = std::max(options_.max_processes, options_.min_processes);
}

int RoundPlanner::planned(const UnitProgress& u) const {
  // The fixed count, plus one replacement when a disturbed process was granted a re-measure.
  return options_.min_processes + (u.remeasure_granted ? 1 : 0);
}

bool RoundPlanner::unit_satisfied(const UnitProgress& u) const {
  if (u.done || !u.failure.empty()) return true;
  if (u.processes >= options_.max_processes + (u.remeasure_granted ? 1 : 0)) return true;
  if (u.processes < planned(u)) return false;
  if (options_.target_ci <= 0) return true;
  return k3stats::wide_enough_sample(u.clean_means, options_.target_ci, 2, options_.confidence);
}

void RoundPlanner::update_group(std::size_t group) {
  bool all = true;
  for (std::size_t u = 0; u < units_.size(); ++u)
    if (group_of_[u] == group && !unit_satisfied(units_[u])) all = false;
  for (std::size_t u = 0; u < units_.size(); ++u) {
    if (group_of_[u] != group) continue;
    UnitProgress& p = units_[u];
    if (p.done) continue;
    // A failed unit stops on its own; the others of its group go on (their own figures stand).
    if (!p.failure.empty()) {
      p.done = true;
      p.stop_reason = "failed: " + p.failure;
      continue;
    }
    if (!all) continue;
    p.done = true;
    if (p.processes >= options_.max_processes + (p.remeasure_granted ? 1 : 0) && options_.target_ci > 0 &&
        !k3stats::wide_enough_sample(p.clean_means, options_.target_ci, 2, options_.confidence)) {
      p.stop_reason = "max processes (CI still wider than the target)";
    } else {
      p.stop_reason = options_.target_ci > 0 ? "CI within target" : "fixed count";
    }
  }
}

std::vector<std::size_t> RoundPlanner::next_round() {
  std::vector<std::size_t> round;
  for (std::size_t u = 0; u < units_.size(); ++u)
    if (!units_[u].done) round.push_back(u);
  return round;
}

void RoundPlanner::record_ok(std::size_t unit, double mean, bool disturbed) {
  UnitProgress& u = units_.at(unit);
  ++u.processes;
  if (disturbed) {
    ++u.disturbed;
    if (options_.remeasure_disturbed && !u.remeasure_granted) u.remeasure_granted = true;
  } else {
    u.clean_means.push_back(mean);
  }
  update_group(group_of_[unit]);
}

void RoundPlanner::skip(std::size_t unit, const std::string& reason) {
  UnitProgress& u = units_.at(unit);
  u.done = true;
  u.stop_reason = reason;
}

int RoundPlanner::processes_left_at_least() const {
  int left = 0;
  for (const auto& u : units_)
    if (!u.done) left += std::max(1, planned(u) - u.processes);
  return left;
}

void RoundPlanner::record_failure(std::size_t unit, const std::string& reason) {
  UnitProgress& u = units_.at(unit);
  ++u.processes;
  u.failure = reason;
  update_group(group_of_[unit]);
}

}  // namespace k3tune
