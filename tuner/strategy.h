// Search strategies. A strategy sees the candidates (the valid configurations of the space, in
// enumeration order, defaults first) and what has been measured of each, and names the
// candidates to measure in the next round, one process (or count) each. Rounds are interleaved:
// the candidates of a round run one after the other, so a round's measurements share the
// machine's drift and compare paired (stats: per-round log ratios). Strategies are deterministic
// given their seed and the measurements, which is what makes an interrupted tuning resume to the
// same result: replaying the stored measurements replays the decisions.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "harness/host/stats/stats.h"
#include "tuner/space.h"

namespace k3tuner {

struct Candidate {
  Config config;
  std::string key;
  std::vector<double> values;  // measured objective per process (ns per call, or instructions)
  std::vector<int> rounds;     // the round of each value
  bool rejected = false;       // broke its accuracy bound, or the runner refused it
  bool is_default =
      false;  // the space's defaults: the reference a table entry's speed-up is against
  std::string reason;
  double mean() const;
  int measurements() const { return static_cast<int>(values.size()); }
};

struct StrategyOptions {
  std::uint64_t seed = 1;
  int processes = 8;   // per candidate (exhaustive, random, each line of coordinate descent)
  int min_rounds = 2;  // racing: rounds before the first elimination (noise pooled over candidates)
  int max_rounds = 12;       // racing: ceiling per candidate
  double race_error = 0.05;  // racing: probability of ever dropping the true best (Bonferroni)
  double min_effect = 0.02;  // racing: drop only when at least this much slower
  int random_samples = 0;    // random: candidates to sample (0: a quarter of the space)
  int max_sweeps = 3;        // coordinate descent: passes over the knobs
  int finalists = 4;         // coordinate descent: the best few, measured again together at the end
  bool deterministic = false;  // the objective is exact (instruction counts): one measurement each
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  // Candidates (indices) to measure in the next round; empty when the search is done.
  virtual std::vector<std::size_t> next_round(const std::vector<Candidate>& c) = 0;
  // The chosen candidate: the lowest mean among those the strategy still considers (default: every
  // measured, unrejected candidate).
  virtual std::size_t choose(const std::vector<Candidate>& c) const;
  // One line on how the search went (e.g. how many candidates racing dropped).
  virtual std::string summary() const { return ""; }
};

// What exhaustive search costs on these candidates: every valid one `processes` times (once when
// the objective is exact). No strategy is allowed to spend more (run_tuning caps it there).
int exhaustive_cost(const std::vector<Candidate>& c, const StrategyOptions& options);

// An upper bound of what coordinate descent spends on these candidates: every sweep measures each
// knob's line `processes` times, then the finalists are measured up to twice that. Where it reaches
// exhaustive's cost, descending is no cheaper than trying everything, and racing is used instead.
int coordinate_cost_bound(const SearchSpace& space, const std::vector<Candidate>& c,
                          const StrategyOptions& options);

// exhaustive | random | racing | coordinate
std::unique_ptr<Strategy> make_strategy(const std::string& name, const SearchSpace& space,
                                        const StrategyOptions& options);
const std::vector<std::string>& strategy_names();

// The lowest-mean measured, unrejected candidate among `allowed` (all when empty); SIZE_MAX if
// none.
std::size_t best_by_mean(const std::vector<Candidate>& c,
                         const std::vector<std::size_t>& allowed = {});

}  // namespace k3tuner
