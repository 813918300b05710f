// Statistics of k3tune measurements: the library the CLI, the tuner and the reports share.
//
// Method. A cell (op x shape x params x build x target) is measured by P independent runner
// processes x R repetitions each (after warm-up). Repetitions inside one process are not
// independent (same memory layout, same page placement, same frequency state), so the unit of
// inference is the process:
//   1. per-process mean of its R repetitions;
//   2. the cell estimate is the mean of the P process means;
//   3. 95% confidence interval: Student t on the P process means, df = P - 1, quantile from
//      boost::math::students_t. With P = 3 the interval is wide (t = 4.30) -- that is honest:
//      three processes carry little information about between-process variation. A hierarchical
//      bootstrap was rejected: with P = 3 it has only 10 distinct resamples at the top level and
//      badly under-covers.
//   4. CV: standard deviation of the process means over their mean (between-process spread), and
//      the CV of all repetitions (within + between), both reported;
//   5. min and median over all repetitions;
//   6. outliers: repetitions outside Tukey's fences (Q1 - 1.5 IQR, Q3 + 1.5 IQR) of their own
//      process are FLAGGED and kept in every figure above -- never dropped;
//   7. a warning flag when the CI half-width exceeds a configurable fraction of the mean.
// A/B comparison: Welch's t-test (unequal variances, Welch-Satterthwaite df) on the two sets of
// process means, two-sided at alpha (default 0.05), AND a minimum relative effect size (default
// 2%): a difference is called only when it is both significant and at least that large, so
// tiny-but-significant drifts do not churn the tuner.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace k3stats {

// Two-sided Student t quantile: the t with P(|T| <= t) = confidence for df degrees of freedom.
double t_critical(double confidence, double df);
double mean(const std::vector<double>& x);
double sample_stddev(const std::vector<double>& x);  // n - 1 denominator; 0 for n < 2
double median(std::vector<double> x);
// Linear-interpolation quantile (type 7, as R and NumPy default), q in [0, 1].
double quantile(std::vector<double> x, double q);

struct ConfidenceInterval {
  double mean = 0, low = 0, high = 0;
  double half_width = 0;
  double rel_half_width = 0;  // half_width / mean
  double df = 0;
};
// Student-t interval of the mean of x (n >= 2; with n == 1 the interval is infinite).
ConfidenceInterval t_interval(const std::vector<double>& x, double confidence = 0.95);

// The interval of a time's (or a ratio's) mean that such a quantity can have: the Student-t
// interval of ln(x), df = n - 1, applied as a factor around the arithmetic mean, so the low end is
// never negative and a spread that is a fraction of the mean stays that fraction on both sides.
// Below `min_count` values (the count the rule needs: 3 processes for a time) the interval is
// infinite and `too_few` is set: outputs say so in words instead of printing an interval. Values
// that are not all positive fall back to the Student interval on x.
struct LogInterval : ConfidenceInterval {
  bool too_few = false;
};
inline constexpr std::size_t kMinProcessesForInterval = 3;
LogInterval log_interval(const std::vector<double>& x, double confidence = 0.95,
                         std::size_t min_count = kMinProcessesForInterval);

// Indices of values outside Tukey's fences (k = 1.5) within one process's repetitions.
std::vector<std::size_t> tukey_outliers(const std::vector<double>& x, double k = 1.5);

struct CellSummaryOptions {
  double confidence = 0.95;
  double wide_ci_threshold = 0.05;  // warn when the CI half-width exceeds this fraction of the mean
};

struct CellSummary {
  std::size_t processes = 0, samples = 0;
  std::vector<double> process_means;
  double mean = 0;  // mean of process means
  LogInterval ci;   // log-space interval of the mean; infinite (too_few) below 3 processes
  double cv_between = 0;  // stddev of process means / mean
  double cv_all = 0;      // stddev of all repetitions / their mean
  double min = 0, median = 0;
  // outlier_flags[p][r]: repetition r of process p is outside its process's Tukey fences.
  std::vector<std::vector<bool>> outlier_flags;
  std::size_t outliers = 0;
  bool wide_ci = false;
  std::string method =
      "student-t on ln(process means), df=P-1, as a factor around the mean (3 processes or more); "
      "Tukey 1.5 IQR outlier flags";
};
// per_process[p] = the R repetition values of process p (ns). Throws std::invalid_argument when
// empty or when a process has no repetitions.
CellSummary summarize_cell(const std::vector<std::vector<double>>& per_process,
                           const CellSummaryOptions& opt = {});

struct Comparison {
  double mean_a = 0, mean_b = 0;
  double rel_diff = 0;  // (mean_b - mean_a) / mean_a: > 0 means B is slower
  double t = 0, df = 0, p_value = 1;
  bool significant = false;  // p < alpha
  bool meaningful = false;   // |rel_diff| >= min_effect
  // The smallest relative difference this comparison detects with the requested power, at the
  // data's own spread and process counts (power.h); "no difference" means "unchanged within +-mde".
  double mde = 0;
  // The paired estimator's 100(1-alpha)% interval of the shift on the log scale (ln b/a), and the
  // estimator and test that produced the figures (named in every verdict text).
  double log_shift_low = 0, log_shift_high = 0;
  std::string method;     // in full, e.g. "Hodges-Lehmann shift, Wilcoxon signed-rank (exact)"
  std::string estimator;  // short, for verdict texts: "Hodges-Lehmann/Wilcoxon", "mean/paired t"
  enum class Verdict { kNoDifference, kBFaster, kBSlower } verdict = Verdict::kNoDifference;
};
// The estimator and test of a paired comparison (compare_paired_rounds). kMeanT: the mean log
// ratio and the one-sample t-test (exact with Stein's first stage when the ratios are normal).
// kHodgesLehmann: the Hodges-Lehmann shift and the Wilcoxon signed-rank test (signed_rank.h),
// which keeps its level and most of its power when rare rounds are far off; the default, chosen by
// the false-positive rate and power measured on the synthetic runner (docs/measurement.md).
enum class PairedEstimator { kMeanT, kHodgesLehmann };
const char* to_string(PairedEstimator e);
// "mean" or "hodges-lehmann"; invalid_argument naming the accepted names otherwise.
PairedEstimator paired_estimator_from(const std::string& name);

struct CompareOptions {
  double alpha = 0.05;
  double min_effect = 0.02;  // smallest relative difference ever called a change
  double power = 0.8;        // for the minimum detectable effect
  PairedEstimator estimator = PairedEstimator::kHodgesLehmann;  // paired comparisons only
};
// Welch's t-test on process means of A and B (each needs >= 2 processes).
Comparison compare_processes(const std::vector<double>& means_a, const std::vector<double>& means_b,
                             const CompareOptions& opt = {});
// Paired test for interleaved runs: A and B measured in the same rounds (ABAB...), process p of A
// adjacent in time to process p of B. A one-sample t-test (df = P - 1) on the per-round log ratios
// ln(b_p / a_p) cancels drift that moves both sides of a round together, which Welch's test on
// the pooled means cannot. rel_diff = exp(mean log ratio) - 1. Sizes must match (>= 2).
// With first_stage = m (2 <= m < P: the process count was chosen by Stein's two-stage procedure
// from the first m rounds, sequential.h), the spread is that of the first m log ratios and the
// degrees of freedom m - 1, which keeps the false-positive rate at exactly alpha for normal ratios.
// With opt.estimator == kHodgesLehmann the same ratios are judged by the Wilcoxon signed-rank test
// on all rounds instead (first_stage is not used: its null distribution is exact for any fixed
// count of rounds whose ratios are symmetric about 0), rel_diff = exp(HL shift) - 1, t holds the
// signed-rank z and df = rounds - 1; the minimum detectable effect is the t-based one at the
// standard error the Walsh interval implies (an approximation, stated in docs/measurement.md).
Comparison compare_paired_rounds(const std::vector<double>& means_a,
                                 const std::vector<double>& means_b, const CompareOptions& opt = {},
                                 int first_stage = 0);
const char* to_string(Comparison::Verdict v);

}  // namespace k3stats
