// The regression verdict of a candidate against a baseline, cell by cell (configurations measured
// on both sides), as `k3tune report` and `k3tune compare` print it.
//
// Timing. Two sources of a verdict, never mixed:
//  - across runs (a baseline run and a candidate run taken at different times): Welch's t-test on
//    the two sets of process means. On a machine that drifts between runs this is a screening
//    test: what it flags is "suspected" until the confirm step re-measures it;
//  - within one run (bench --baseline-runner, or the confirm step's re-measurement): both builds
//    ran in the same rounds, A B A B, and the test is a paired test on per-round log ratios
//    (k3stats::compare_paired_rounds with the rules' estimator: the Hodges-Lehmann shift and the
//    Wilcoxon signed-rank test by default, or the mean with the paired t-test on Stein's first
//    stage when the run chose its process count).
// Either way a change is called only when significant at alpha AND at least the op's minimum
// effect (configs/regression.toml), raised to the target's measured noise floor when one is
// stored; "unchanged" carries the minimum detectable effect ("unchanged within +-x%").
// Accuracy: a worse worst error/bound ratio beyond the configured increase, or a changed output
// checksum for an op whose outputs must not change (same kernel path on both sides), is flagged.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/stats/stats.h"
#include "harness/host/store/results.h"
#include "harness/host/verdict/regression_config.h"
#include "harness/host/verdict/run_data.h"

namespace k3verdict {

enum class Outcome { kRegression, kImprovement, kUnchanged, kNotCompared };
// What happened to a suspected timing change: nobody asked (no --confirm), the interleaved
// re-measurement confirmed or refuted it, it could not be re-measured (why in the note), or the
// verdict already came from an interleaved run (nothing to confirm).
enum class Confirmation { kNotAsked, kConfirmed, kRefuted, kUnavailable, kInterleaved };

// Baseline time / candidate time (> 1: the candidate is faster) with its 95% interval (at 1 - the
// rules' alpha): from the paired comparison's interval of the per-round log ratios' shift (the
// t interval of their mean, or the Hodges-Lehmann shift's Walsh interval), or from Welch's
// interval of the difference relative to the baseline mean (across runs). `high` is infinite when
// the interval of the difference reaches -100%.
struct Speedup {
  double value = 1, low = 1, high = 1;
};
Speedup welch_speedup(const std::vector<double>& a, const std::vector<double>& b);
Speedup paired_speedup(const k3stats::Comparison& paired);

// Instruction counts (two `k3tune count` runs) are exact up to a measured per-process jitter:
// they are judged by a static rule, not a significance test. A change is a difference larger than
// twice the larger of the two runs' jitters; anything within it is "identical". Why twice: a
// case's jitter is the range of five identical processes, which sees most but not all of the
// spread a per-call figure (a difference of two processes' counts) can carry; simulated with
// normal per-process variation, twice the range of three calls 0.58% of identical cases changed,
// twice the range of five 0.02% (so a nightly's 16 cases almost never raise a false alarm).
struct ExactCount {
  double delta = 0;      // candidate - baseline, instructions per call
  double tolerance = 0;  // 2 x the larger jitter: the largest difference still "identical"
};

struct TimingVerdict {
  Outcome outcome = Outcome::kNotCompared;
  std::optional<ExactCount> exact;  // set: an instruction-count verdict (cmp holds the two figures)
  std::string not_compared;         // why, when kNotCompared
  k3stats::Comparison cmp;          // rel_diff > 0: the candidate is slower
  double threshold = 0;  // the minimum effect applied (op's, or the noise floor if larger)
  int processes_a = 0, processes_b = 0;
  Speedup speedup;  // of the deciding test (the re-measurement's once confirmed or refuted)
  Confirmation confirmation = Confirmation::kNotAsked;
  std::string confirm_note;  // re-measurement's verdict text, or why it could not run
  std::string confirm_run;   // the run that re-measured it
  std::optional<k3stats::Comparison> confirm_cmp;
};

struct AccuracyVerdict {
  std::optional<double> ratio_a, ratio_b;  // worst error/bound
  bool ratio_flagged = false;
  std::string checksum_a, checksum_b;
  bool checksum_required = false;  // the op's outputs must not change (and both ran the same path)
  bool checksum_flagged = false;
};

// The bytes a call streams from memory in two exact-count runs (CellFigures::streamed_bytes):
// no jitter, so any increase is a regression (decode speed on a K3 is bytes per token).
struct ExactBytes {
  double base = 0, cand = 0;
  double delta() const { return cand - base; }
};

struct CellVerdict {
  std::string config_key, label, op, model, shape;
  const CellFigures* a = nullptr;  // baseline
  const CellFigures* b = nullptr;  // candidate
  TimingVerdict timing;
  AccuracyVerdict accuracy;
  std::optional<ExactBytes> bytes;  // exact-count runs whose cells both say what they stream
  // Counted against the candidate: a timing regression (unless the interleaved re-measurement
  // refuted it; one that could not be re-measured still counts) or an accuracy flag.
  bool regression() const;
  bool timing_regression() const;
  bool accuracy_regression() const { return accuracy.ratio_flagged || accuracy.checksum_flagged; }
  bool bytes_regression() const { return bytes && bytes->delta() > 0; }
};

struct FailedCell {
  std::string label, op, reason;
  std::string side;  // "candidate" or "baseline"
};

struct Verdict {
  std::string baseline_run, candidate_run;  // equal for a verdict within one run
  std::string baseline_build, candidate_build;
  // "welch-across-runs", "exact-counts", "paired-rounds-within-run" (two builds in separate
  // processes of the same rounds) or "paired-within-process" (both builds in each process).
  std::string method;
  // Within one run of two builds: how they were measured and why, as the run stored it
  // ("" when the run says nothing, as runs from before the choice existed).
  std::string design;
  PerCall per_call;    // the candidate run's figures: time or instruction counts
  bool confirm_requested = false;
  RegressionConfig config;
  std::optional<k3store::NoiseFloorRecord> noise_floor;
  std::vector<CellVerdict> cells;
  std::vector<FailedCell> failed;
  std::vector<std::string> only_in_baseline, only_in_candidate;  // labels

  int regressions() const;
  int accuracy_regressions() const;
  int bytes_regressions() const;  // cells streaming more bytes per call (exact-count runs)
  int improvements() const;
  int unchanged() const;
  int suspected() const;  // timing regressions across runs awaiting or refused confirmation
};

// The exact rule for one pair of instruction counts (per call) with their jitters.
TimingVerdict exact_count_verdict(double base, double base_jitter, double cand, double cand_jitter);

// Cells of `base` (its own build) against the cells of `cand` (its own build) with the same
// configuration: Welch across runs; two instruction-count runs by the exact rule (method
// "exact-counts").
Verdict compare_runs(const RunData& base, const RunData& cand, const RegressionConfig& config,
                     const std::optional<k3store::NoiseFloorRecord>& noise_floor);

// A run that measured two builds interleaved (bench --baseline-runner): paired verdict per cell.
// `run.builds` must hold the baseline and the candidate (VerdictError otherwise).
Verdict compare_within_run(const RunData& run, const RegressionConfig& config,
                           const std::optional<k3store::NoiseFloorRecord>& noise_floor);

// A run that measured cells with a tuning table and the same cells without one (the runner's
// built-in defaults), interleaved (k3tune model --table, bench --grid table=none,T): each table
// cell against its defaults cell, paired by round; A is the defaults, B the table. Both sides are
// the run's own build. VerdictError when no cell has both sides.
Verdict compare_table_within_run(const RunData& run, const RegressionConfig& config,
                                 const std::optional<k3store::NoiseFloorRecord>& noise_floor);

// The smallest relative change a timing verdict of `op` calls: the op's minimum effect of the
// rules, raised to the target's noise floor when the rules use it (and one is stored).
double verdict_threshold(const std::string& op, const RegressionConfig& config,
                         const std::optional<k3store::NoiseFloorRecord>& noise_floor);

// One side of a within-run pair: the mean of each counted process and the round it ran in.
struct RoundMeans {
  const std::vector<int>& rounds;
  const std::vector<double>& means;
};

// The within-run timing verdict of one pair of configurations measured in the same rounds (A B,
// B A, ...): the one rule of every within-run A/B (bench --baseline-runner through
// compare_within_run, the confirm step, table verify). The paired test on per-round log ratios
// (the rules' estimator) at the rules' alpha; a change only when significant and at least the op's
// minimum effect raised to the noise floor. `first_stage` > 0: the process count came from Stein's
// two-stage procedure. B slower than A is kRegression, faster kImprovement; fewer than 2 rounds
// with both sides is kNotCompared with the reason.
TimingVerdict paired_timing_verdict(const std::string& op, RoundMeans a, RoundMeans b,
                                    const RegressionConfig& config,
                                    const std::optional<k3store::NoiseFloorRecord>& noise_floor,
                                    int first_stage = 0);

// The paired verdict of one cell measured interleaved (the confirm step uses it as well).
k3stats::Comparison paired_comparison(const CellFigures& a, const CellFigures& b,
                                      const RegressionConfig& config, double threshold,
                                      int first_stage, Speedup* speedup = nullptr);

// "unchanged within +-3.4%", "SLOWER +5.1%", "faster -4.0%", "not compared: ...".
std::string timing_text(const TimingVerdict& t);
const char* to_string(Outcome o);
const char* to_string(Confirmation c);

nlohmann::json to_json(const Verdict& v);

}  // namespace k3verdict
