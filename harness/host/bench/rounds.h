// Which processes to run next, round by round. A sweep measures units (one cell on one build) in
// interleaved rounds: round r runs one process of every unit still measuring, in a fixed order
// (A B A B ... when a baseline build is compared), so slow drifts of the machine hit all units
// alike. Without a target CI every unit gets exactly min processes. With one (adaptive mode) the
// count follows Stein's two-stage procedure (stats/sequential.h): the first min processes are the
// first stage, their spread fixes the total N that makes the interval +-target wide (at most max),
// and the group runs to N. N depends on the first stage only, which keeps the verdicts exact. A
// paired group runs at least the rounds the signed-rank test needs to be able to reject (6 at 95%).
//
// Units of one group (the same cell on several builds, or the configurations of one selfcheck
// trial) start and stop together, one process each per round, so an A/B comparison always has as
// many processes on both sides and process r of A ran next to process r of B. The machine's speed
// drifts slowly (measured: neighbouring processes are correlated, 0.6 at lag 1, for about a
// minute), so differences taken within a round cancel most of the process-to-process spread; with
// `paired`, a group of two or more units stops when the interval of every unit's per-round log
// ratio against the group's first unit will be narrow enough, the interval an A/B verdict uses;
// otherwise each unit's own relative spread sets N. A process whose repetitions were
// disturbed (a frequency change, a temperature rise, a migration of pinned threads) is kept but
// not counted: the unit is measured once more in its place, once per unit. A paired group (A/B)
// replaces rounds instead: each round with a disturbed process on any side is run again by the
// whole group (its processes are no pair), up to min_processes replacement rounds.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace k3bench {

struct RoundsOptions {
  int min_processes = 3;
  int max_processes = 3;  // == min_processes: fixed count
  double target_ci = 0;   // relative CI half-width to reach; 0: no adaptive extension
  double confidence = 0.95;
  bool remeasure_disturbed = true;  // false: disturbed processes count like the others
  bool paired = false;              // groups size N on the paired (per-round) spread, see above
  // > 0 (paired groups; bench --mde): instead of Stein's N, add rounds until the minimum detectable
  // effect of the signed-rank test, from the magnitudes of the per-round log ratios only
  // (k3stats::signed_rank_mde_from_magnitudes), is at most this for every pair of the group, or
  // max_processes, or end_all() (the caller's wall-time budget). Looking at magnitudes only keeps
  // the test's null distribution exact however often it looks.
  double target_mde = 0;
  double alpha = 0.05, power = 0.8;  // of that minimum detectable effect
};

struct UnitProgress {
  std::vector<double> clean_means;  // process means of successful, undisturbed processes
  std::vector<int> clean_rounds;    // the round (process index) of each clean mean
  int disturbed = 0;                // successful but disturbed processes (kept, not counted)
  int processes = 0;                // processes run or adopted, all outcomes
  int planned_total = 0;  // N of the two-stage procedure once the first stage is in (0: not yet)
  int replacement_rounds = 0;  // extra processes granted in place of disturbed ones
  std::string failure;         // non-empty: the unit failed and is not measured further
  bool done = false;
  std::string stop_reason;  // "fixed count", "CI within target", "MDE within target", "max
                            // processes ...", "wall-time budget ...", failure, ...
};

class RoundPlanner {
 public:
  // group_of[u]: the group of unit u (units of a group advance together).
  RoundPlanner(std::vector<std::size_t> group_of, RoundsOptions options);

  // Units to run in the next round, in unit order; empty when every unit is done. A unit's group
  // can finish in the middle of a round: skip a unit whose unit(u).done became true meanwhile.
  std::vector<std::size_t> next_round();
  // The outcome of one process of `unit`: ok with its mean, or a failure reason.
  void record_ok(std::size_t unit, double mean, bool disturbed);
  void record_failure(std::size_t unit, const std::string& reason);
  // Processes taken over from an interrupted earlier run (resume), before the first round.
  void adopt(std::size_t unit, double mean, bool disturbed) { record_ok(unit, mean, disturbed); }
  // Ends a unit without measuring it (already measured by an earlier run: --resume).
  void skip(std::size_t unit, const std::string& reason);
  // Ends every unit still measuring with `reason` (a wall-time budget ran out).
  void end_all(const std::string& reason);
  // The largest over the group's pairs (each unit against the group's first) of the sign-free
  // minimum detectable effect (target_mde mode); infinite while a pair has too few rounds.
  double group_mde(std::size_t group) const;
  // Whether every pair of the group detects target_mde with the requested power (the same model,
  // one power evaluation per pair instead of a root search: the rule runs after every round).
  bool group_reaches_target(std::size_t group) const;
  // Processes still planned at least (for the progress estimate): the minimum left of every unit.
  int processes_left_at_least() const;

  const UnitProgress& unit(std::size_t u) const { return units_[u]; }
  // The clean means of a and b from the rounds where both are clean, aligned round by round.
  std::pair<std::vector<double>, std::vector<double>> paired_means(std::size_t a,
                                                                   std::size_t b) const;
  std::size_t units() const { return units_.size(); }
  const RoundsOptions& options() const { return options_; }

 private:
  // Processes the unit still needs before the stopping rule may end it.
  int planned(const UnitProgress& u) const;
  bool unit_satisfied(const UnitProgress& u) const;
  bool mde_mode(std::size_t group) const;
  // After the first stage of a group: the total N its spread calls for (0 while the stage runs).
  int group_total(std::size_t group) const;
  void update_group(std::size_t group);
  // Ends each unit of `group` still measuring: a failed one with its failure, any other when
  // `why_stop` gives it a stop reason (nullptr: it goes on).
  void stop_units(std::size_t group,
                  const std::function<const char*(const UnitProgress&)>& why_stop);
  // A disturbed process of `unit` (its latest): grant the replacement the rules above give.
  void grant_replacement(std::size_t unit);

  std::vector<std::size_t> group_of_;
  RoundsOptions options_;
  std::vector<UnitProgress> units_;
  std::map<std::size_t, std::set<int>> disturbed_rounds_;  // paired group -> its disturbed rounds
};

}  // namespace k3bench
