// One tuning: a search space on one op and shape, a strategy, an objective and a budget of
// measurements. Every measurement is stored as it is taken (k3store::TuningSessionStore); asking
// again for the same session replays the stored measurements -- the strategy makes the same
// decisions on the same numbers -- and measures only what is missing. A disturbed process is kept
// and measured once more in its place; a rejected configuration (accuracy, unsupported) is never
// chosen.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/bench/catalog.h"
#include "harness/host/bench/grid.h"
#include "harness/host/store/tuning_sessions.h"
#include "tuner/objective.h"
#include "tuner/space.h"
#include "tuner/strategy.h"

namespace k3tuner {

struct TuneRequest {
  const SearchSpace* space = nullptr;
  const k3bench::Catalog* catalog = nullptr;
  nlohmann::json shape;                      // normalised shape of the op
  std::map<std::string, std::string> fixed;  // parameters held for every configuration
  k3bench::MeasureSettings settings;         // how each process measures
  Variables facts;                           // target and shape facts for the space
  std::set<std::string> flags;               // e.g. "allow-hp"
  std::set<std::string> exclude;             // configurations (config_key) left out, e.g. emulated
  // Knobs held at these values (tune --seed-table): only configurations that have them are
  // candidates, and the defaults (the evidence's reference).
  std::map<std::string, nlohmann::json> hold;
  std::string strategy = "racing";
  StrategyOptions options;
  int budget = 0;  // measurements allowed (0: unlimited)
  std::function<void(int used, const std::string& what)> progress;
  std::optional<int> stop_after;  // test hook: interrupt after this many new measurements
};

struct Evidence {
  double mean = 0, ci_low = 0, ci_high = 0;  // of the chosen configuration
  int processes = 0;
  double default_mean = 0;
  double speedup = 1, speedup_low = 1, speedup_high = 1;  // default mean / chosen mean, 95% CI
  bool paired = false;                                    // the CI is from per-round ratios
  int paired_rounds = 0;  // rounds in which both the chosen configuration and the defaults ran
  bool exact = false;     // a deterministic objective: one measurement each, no interval
  // Whether the speed-up is evidence: exact, or from enough paired rounds (fewer say nothing).
  bool conclusive() const { return exact || paired_rounds >= kMinEvidenceRounds; }
  static constexpr int kMinEvidenceRounds = 5;
  nlohmann::json to_json() const;
};

struct TuneResult {
  std::vector<Candidate> candidates;
  std::vector<k3bench::CellSpec> cells;  // per candidate
  SpaceCounts counts;
  std::size_t chosen = SIZE_MAX, defaults = SIZE_MAX;
  int measurements = 0;      // taken in all (stored or new; disturbed and rejected included)
  int new_measurements = 0;  // taken in this call
  std::string seed_note;     // --seed-table: what was held, or why the seed could not be used
  int disturbed = 0;    // processes a disturbance voided, each measured once more (not counted)
  int cache_hits = 0;   // of those, served by the measurement cache (exact objectives)
  int unavailable = 0;  // replay: asked for but not in the store (the candidate is left out)
  bool budget_exhausted = false;
  bool replay_exhausted =
      false;  // replay: the store held fewer measurements than the strategy asked for
  std::string summary;
  Evidence evidence;
  // One row per configuration measured or rejected (TuningSessionStore::finish).
  std::vector<k3store::TuningPointRecord> point_records(const std::string& op) const;
  nlohmann::json to_json() const;  // the session's result
};

// Thrown by the test hook: the tuning stopped on purpose after `stop_after` new measurements.
struct TuningInterrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The speed-up of `chosen` over `def` (default_mean / mean) with its 95% interval: from the
// per-round pairs when they share two or more rounds (paired = true), else from the two samples.
// Fills e.speedup, speedup_low/high, paired.
void speedup_interval(const Candidate& chosen, const Candidate& def, Evidence& e);

TuneResult run_tuning(const TuneRequest& request, Objective& objective,
                      k3store::TuningSessionStore* store, const std::string& session_id);

// The configuration's cell: fixed parameters, the knob values (op parameters) and the settings
// (with measurement knobs applied), normalised against the runner's catalog.
k3bench::CellSpec cell_of(const TuneRequest& request, const Config& config);

}  // namespace k3tuner
