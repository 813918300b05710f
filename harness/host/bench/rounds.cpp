#include "harness/host/bench/rounds.h"

#include "harness/host/stats/round_pairs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "harness/host/stats/sequential.h"
#include "harness/host/stats/signed_rank.h"
#include "harness/host/stats/stats.h"

namespace k3bench {

RoundPlanner::RoundPlanner(std::vector<std::size_t> group_of, RoundsOptions options)
    : group_of_(std::move(group_of)), options_(options), units_(group_of_.size()) {
  if (options_.min_processes < 1) throw std::invalid_argument("RoundPlanner: min_processes < 1");
  options_.max_processes = std::max(options_.max_processes, options_.min_processes);
}

int RoundPlanner::planned(const UnitProgress& u) const {
  // The first stage (or the fixed count), then the two-stage total once known, plus one
  // replacement when a disturbed process was granted a re-measure.
  return std::max(options_.min_processes, u.planned_total) + u.replacement_rounds;
}

bool RoundPlanner::unit_satisfied(const UnitProgress& u) const {
  if (u.done || !u.failure.empty()) return true;
  if (u.processes >= options_.max_processes + u.replacement_rounds) return true;
  if (u.processes < planned(u)) return false;
  return options_.target_ci <= 0 || u.planned_total > 0;
}

std::pair<std::vector<double>, std::vector<double>> RoundPlanner::paired_means(
    std::size_t a, std::size_t b) const {
  const UnitProgress &ua = units_.at(a), &ub = units_.at(b);
  auto pairs =
      k3stats::pair_by_round(ua.clean_rounds, ua.clean_means, ub.clean_rounds, ub.clean_means);
  return {std::move(pairs.a), std::move(pairs.b)};
}

int RoundPlanner::group_total(std::size_t group) const {
  const int m = options_.min_processes;
  std::vector<std::size_t> members;
  for (std::size_t u = 0; u < units_.size(); ++u)
    if (group_of_[u] == group && units_[u].failure.empty() && !units_[u].done) members.push_back(u);
  if (members.empty()) return 0;
  for (std::size_t u : members)
    if (static_cast<int>(units_[u].clean_means.size()) < m &&
        units_[u].processes < options_.max_processes + units_[u].replacement_rounds)
      return 0;  // the first stage is still running
  int total = m;
  auto stage_one = [m](const std::vector<double>& x) {
    return std::vector<double>(x.begin(), x.begin() + std::min<std::size_t>(x.size(), m));
  };
  if (options_.paired && members.size() >= 2) {
    // At least as many rounds as the signed-rank test needs to be able to reject at all (6 at
    // 95%): a constant, so N still depends on the first stage only.
    total = std::max(total, std::min(options_.max_processes,
                                     k3stats::signed_rank_min_rounds(1 - options_.confidence)));
    for (std::size_t i = 1; i < members.size(); ++i) {
      const auto [a, b] = paired_means(members[0], members[i]);
      std::vector<double> log_ratio;
      for (std::size_t r = 0; r < a.size(); ++r) log_ratio.push_back(std::log(b[r] / a[r]));
      const auto first = stage_one(log_ratio);
      if (first.size() < 2) return options_.max_processes;
      total = std::max(total, k3stats::stein_total(
                                  k3stats::sample_stddev(first), static_cast<int>(first.size()),
                                  options_.target_ci, options_.confidence, options_.max_processes));
    }
  } else {
    for (std::size_t u : members) {
      const auto first = stage_one(units_[u].clean_means);
      if (first.size() < 2) return options_.max_processes;
      const double rel_sd = k3stats::sample_stddev(first) / k3stats::mean(first);
      total = std::max(
          total, k3stats::stein_total(rel_sd, static_cast<int>(first.size()), options_.target_ci,
                                      options_.confidence, options_.max_processes));
    }
  }
  return total;
}

bool RoundPlanner::mde_mode(std::size_t group) const {
  if (!(options_.target_mde > 0) || !options_.paired) return false;
  return std::count(group_of_.begin(), group_of_.end(), group) >= 2;
}

double RoundPlanner::group_mde(std::size_t group) const {
  std::vector<std::size_t> members;
  for (std::size_t u = 0; u < units_.size(); ++u)
    if (group_of_[u] == group && units_[u].failure.empty()) members.push_back(u);
  double worst = 0;
  for (std::size_t i = 1; i < members.size(); ++i) {
    const auto [a, b] = paired_means(members[0], members[i]);
    std::vector<double> log_ratio;
    for (std::size_t r = 0; r < a.size(); ++r) log_ratio.push_back(std::log(b[r] / a[r]));
    worst = std::max(
        worst, k3stats::signed_rank_mde_from_magnitudes(log_ratio, options_.alpha, options_.power));
  }
  return members.size() >= 2 ? worst : std::numeric_limits<double>::infinity();
}

bool RoundPlanner::group_reaches_target(std::size_t group) const {
  std::vector<std::size_t> members;
  for (std::size_t u = 0; u < units_.size(); ++u)
    if (group_of_[u] == group && units_[u].failure.empty()) members.push_back(u);
  if (members.size() < 2) return false;
  for (std::size_t i = 1; i < members.size(); ++i) {
    const auto [a, b] = paired_means(members[0], members[i]);
    std::vector<double> log_ratio;
    for (std::size_t r = 0; r < a.size(); ++r) log_ratio.push_back(std::log(b[r] / a[r]));
    if (k3stats::signed_rank_power_from_magnitudes(log_ratio, options_.target_mde, options_.alpha) <
        options_.power)
      return false;
  }
  return true;
}

void RoundPlanner::end_all(const std::string& reason) {
  for (auto& u : units_) {
    if (u.done) continue;
    u.done = true;
    u.stop_reason = u.failure.empty() ? reason : "failed: " + u.failure;
  }
}

void RoundPlanner::update_group(std::size_t group) {
  if (mde_mode(group)) {
    // Sequential: the group stops after a complete round once every pair's sign-free MDE is
    // within the target (the first stage at least), or at the ceiling.
    bool all = true, at_max = false;
    for (std::size_t u = 0; u < units_.size(); ++u) {
      if (group_of_[u] != group || !units_[u].failure.empty() || units_[u].done) continue;
      const UnitProgress& p = units_[u];
      if (p.processes >= options_.max_processes + p.replacement_rounds) at_max = true;
      if (p.processes < options_.min_processes + p.replacement_rounds) all = false;
    }
    int fewest = std::numeric_limits<int>::max(), most = 0;
    for (std::size_t u = 0; u < units_.size(); ++u) {
      if (group_of_[u] != group || !units_[u].failure.empty()) continue;
      fewest = std::min(fewest, units_[u].processes);
      most = std::max(most, units_[u].processes);
    }
    const bool round_complete = fewest == most;
    const bool reached = all && round_complete && group_reaches_target(group);
    stop_units(group, [&](const UnitProgress&) -> const char* {
      if (reached) return "MDE within target";
      if (at_max && round_complete) return "max processes (MDE not reached)";
      return nullptr;
    });
    return;
  }
  // Two-stage: once the first stage of the group is in, fix N for all its units (once).
  if (options_.target_ci > 0) {
    bool unplanned = false;
    for (std::size_t u = 0; u < units_.size(); ++u)
      if (group_of_[u] == group && units_[u].planned_total == 0) unplanned = true;
    if (unplanned) {
      if (const int n = group_total(group); n > 0) {
        for (std::size_t u = 0; u < units_.size(); ++u)
          if (group_of_[u] == group) units_[u].planned_total = n;
      }
    }
  }
  bool all = true;
  for (std::size_t u = 0; u < units_.size(); ++u)
    if (group_of_[u] == group && !unit_satisfied(units_[u])) all = false;
  // A failed unit stops on its own; the others of its group go on (their own figures stand).
  stop_units(group, [&](const UnitProgress& p) -> const char* {
    if (!all) return nullptr;
    if (options_.target_ci <= 0) return "fixed count";
    if (p.planned_total >= options_.max_processes)
      return "max processes (the two-stage N wanted more)";
    return "CI within target";
  });
}

void RoundPlanner::stop_units(std::size_t group,
                              const std::function<const char*(const UnitProgress&)>& why_stop) {
  for (std::size_t u = 0; u < units_.size(); ++u) {
    UnitProgress& p = units_[u];
    if (group_of_[u] != group || p.done) continue;
    if (!p.failure.empty()) {
      p.done = true;
      p.stop_reason = "failed: " + p.failure;
    } else if (const char* why = why_stop(p)) {
      p.done = true;
      p.stop_reason = why;
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
  // Without re-measuring, a disturbed process counts like any other (it is still flagged).
  if (!options_.remeasure_disturbed) disturbed = false;
  if (disturbed) {
    ++u.disturbed;
    grant_replacement(unit);
  } else {
    u.clean_rounds.push_back(u.processes - 1);
    u.clean_means.push_back(mean);
  }
  update_group(group_of_[unit]);
}

void RoundPlanner::grant_replacement(std::size_t unit) {
  const std::size_t group = group_of_[unit];
  std::vector<std::size_t> members;
  for (std::size_t v = 0; v < units_.size(); ++v)
    if (group_of_[v] == group) members.push_back(v);
  if (!options_.paired || members.size() < 2) {
    units_[unit].replacement_rounds = 1;  // once per unit: a second disturbance gets no more
    return;
  }
  // A paired group counts rounds, not processes: a round with a disturbed process on either side
  // is no pair, so every such round (however many of its processes were disturbed) buys the group
  // one more round, up to the first stage's count. One replacement per unit (the unpaired rule)
  // left a busy machine's A/B with one pair of three: A disturbed in rounds 0 and 1, B in round 2.
  auto& rounds = disturbed_rounds_[group];
  rounds.insert(units_[unit].processes - 1);
  const int granted = std::min<int>(static_cast<int>(rounds.size()), options_.min_processes);
  for (std::size_t v : members) units_[v].replacement_rounds = granted;
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

}  // namespace k3bench
