// Which processes to run next, round by round. A sweep measures units (one cell on one build) in
// interleaved rounds: round r runs one process of every unit still measuring, in a fixed order
// (A B A B ... when a baseline build is compared), so slow drifts of the machine hit all units
// alike. With a target CI (adaptive mode) a unit keeps getting processes until the Student-t
// interval of its clean process means is narrower than the target (stats/sequential.h), between
// min and max processes; without it, every unit gets exactly min processes.
//
// Units of one group (the same cell on several builds) start and stop together, so an A/B
// comparison always has as many processes on both sides. A process whose repetitions were
// disturbed (a frequency change, a temperature rise, a migration of pinned threads) is kept but
// not counted: the unit is measured once more in its place, once per unit.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace k3tune {

struct RoundsOptions {
  int min_processes = 3;
  int max_processes = 3;    // == min_processes: fixed count
  double target_ci = 0;     // relative CI half-width to reach; 0: no adaptive extension
  double confidence = 0.95;
  bool remeasure_disturbed = true;
};

struct UnitProgress {
  std::vector<double> clean_means;  // process means of successful, undisturbed processes
  int disturbed = 0;                // successful but disturbed processes (kept, not counted)
  int processes = 0;                // processes run or adopted, all outcomes
  bool remeasure_granted = false;   // the one extra process for a disturbed one was granted
  std::string failure;              // non-empty: the unit failed and is not measured further
  bool done = false;
  std::string stop_reason;  // "fixed count", "CI within target", "max processes", failure, ...
};

class RoundPlanner {
 public:
  // group_of[u]: the group of unit u (units of a group advance together).
  RoundPlanner(std::vector<std::size_t> group_of, RoundsOptions options);

  // Units to run in the next round, in unit order; empty when every unit is done.
  std::vector<std::size_t> next_round();
  // The outcome of one process of `unit`: ok with its mean, or a failure reason.
  void record_ok(std::size_t unit, double mean, bool disturbed);
  void record_failure(std::size_t unit, const std::string& reason);
  // Processes taken over from an interrupted earlier run (resume), before the first round.
  void adopt(std::size_t unit, double mean, bool disturbed) { record_ok(unit, mean, disturbed); }
  // Ends a unit without measuring it (already measured by an earlier run: --resume).
  void skip(std::size_t unit, const std::string& reason);
  // Processes still planned at least (for the progress estimate): the minimum left of every unit.
  int processes_left_at_least() const;

  const UnitProgress& unit(std::size_t u) const { return units_[u]; }
  std::size_t units() const { return units_.size(); }
  const RoundsOptions& options() const { return options_; }

 private:
  // Processes the unit still needs before the stopping rule may end it.
  int planned(const UnitProgress& u) const;
  bool unit_satisfied(const UnitProgress& u) const;
  void update_group(std::size_t group);

  std::vector<std::size_t> group_of_;
  RoundsOptions options_;
  std::vector<UnitProgress> units_;
};

}  // namespace k3tune
