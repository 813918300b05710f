#include "harness/host/stats/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include "harness/host/stats/power.h"
#include "harness/host/stats/signed_rank.h"

namespace k3stats {

double t_critical(double confidence, double df) {
  if (!(df > 0)) return std::numeric_limits<double>::infinity();
  boost::math::students_t dist(df);
  return boost::math::quantile(boost::math::complement(dist, (1.0 - confidence) / 2.0));
}

double mean(const std::vector<double>& x) {
  if (x.empty()) return 0.0;
  return std::accumulate(x.begin(), x.end(), 0.0) / double(x.size());
}

double sample_stddev(const std::vector<double>& x) {
  if (x.size() < 2) return 0.0;
  const double m = mean(x);
  double ss = 0;
  for (double v : x) ss += (v - m) * (v - m);
  return std::sqrt(ss / double(x.size() - 1));
}

double quantile(std::vector<double> x, double q) {
  if (x.empty()) return 0.0;
  std::sort(x.begin(), x.end());
  const double h = (double(x.size()) - 1.0) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, x.size() - 1);
  return x[lo] + (h - double(lo)) * (x[hi] - x[lo]);
}

double median(std::vector<double> x) {
  return quantile(std::move(x), 0.5);
}

ConfidenceInterval t_interval(const std::vector<double>& x, double confidence) {
  ConfidenceInterval ci;
  ci.mean = mean(x);
  ci.df = double(x.size()) - 1.0;
  if (x.size() < 2) {
    ci.half_width = std::numeric_limits<double>::infinity();
  } else {
    ci.half_width = t_critical(confidence, ci.df) * sample_stddev(x) / std::sqrt(double(x.size()));
  }
  ci.low = ci.mean - ci.half_width;
  ci.high = ci.mean + ci.half_width;
  ci.rel_half_width =
      ci.mean != 0 ? ci.half_width / std::fabs(ci.mean) : std::numeric_limits<double>::infinity();
  return ci;
}

LogInterval log_interval(const std::vector<double>& x, double confidence, std::size_t min_count) {
  LogInterval li;
  static_cast<ConfidenceInterval&>(li) = t_interval(x, confidence);
  const double inf = std::numeric_limits<double>::infinity();
  if (x.size() < std::max<std::size_t>(min_count, 2)) {
    li.too_few = true;
    li.half_width = li.rel_half_width = inf;
    li.low = -inf;
    li.high = inf;
    return li;
  }
  if (!std::all_of(x.begin(), x.end(), [](double v) { return v > 0; })) return li;
  std::vector<double> logs(x.size());
  std::transform(x.begin(), x.end(), logs.begin(), [](double v) { return std::log(v); });
  const double log_half = t_interval(logs, confidence).half_width;
  li.low = li.mean * std::exp(-log_half);
  li.high = li.mean * std::exp(log_half);
  li.half_width = (li.high - li.low) / 2;
  li.rel_half_width = li.half_width / li.mean;
  return li;
}

std::vector<std::size_t> tukey_outliers(const std::vector<double>& x, double k) {
  std::vector<std::size_t> out;
  if (x.size() < 4) return out;  // quartiles of fewer than 4 values say nothing
  const double q1 = quantile(x, 0.25), q3 = quantile(x, 0.75);
  const double lo = q1 - k * (q3 - q1), hi = q3 + k * (q3 - q1);
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i] < lo || x[i] > hi) out.push_back(i);
  return out;
}

CellSummary summarize_cell(const std::vector<std::vector<double>>& per_process,
                           const CellSummaryOptions& opt) {
  if (per_process.empty()) throw std::invalid_argument("summarize_cell: no processes");
  CellSummary s;
  std::vector<double> all;
  for (const auto& reps : per_process) {
    if (reps.empty()) throw std::invalid_argument("summarize_cell: a process has no repetitions");
    s.process_means.push_back(mean(reps));
    all.insert(all.end(), reps.begin(), reps.end());
    std::vector<bool> flags(reps.size(), false);
    for (std::size_t i : tukey_outliers(reps)) {
      flags[i] = true;
      ++s.outliers;
    }
    s.outlier_flags.push_back(std::move(flags));
  }
  s.processes = per_process.size();
  s.samples = all.size();
  s.ci = log_interval(s.process_means, opt.confidence);
  s.mean = s.ci.mean;
  s.cv_between = s.mean != 0 ? sample_stddev(s.process_means) / s.mean : 0.0;
  const double mean_all = mean(all);
  s.cv_all = mean_all != 0 ? sample_stddev(all) / mean_all : 0.0;
  s.min = *std::min_element(all.begin(), all.end());
  s.median = median(all);
  s.wide_ci = !(s.ci.rel_half_width <= opt.wide_ci_threshold);
  return s;
}

namespace {

void decide(Comparison& c, const CompareOptions& opt) {
  c.significant = c.p_value < opt.alpha;
  c.meaningful = std::fabs(c.rel_diff) >= opt.min_effect;
  if (c.significant && c.meaningful) {
    c.verdict = c.rel_diff > 0 ? Comparison::Verdict::kBSlower : Comparison::Verdict::kBFaster;
  }
}

}  // namespace

Comparison compare_processes(const std::vector<double>& a, const std::vector<double>& b,
                             const CompareOptions& opt) {
  if (a.size() < 2 || b.size() < 2) {
    throw std::invalid_argument("compare_processes: each side needs at least 2 process means");
  }
  Comparison c;
  c.mean_a = mean(a);
  c.mean_b = mean(b);
  c.rel_diff = c.mean_a != 0 ? (c.mean_b - c.mean_a) / c.mean_a : 0.0;
  const double va = std::pow(sample_stddev(a), 2) / double(a.size());
  const double vb = std::pow(sample_stddev(b), 2) / double(b.size());
  const double se = std::sqrt(va + vb);
  if (se == 0) {  // identical constant samples: no noise, any difference is exact
    c.t = c.mean_a == c.mean_b
              ? 0.0
              : std::copysign(std::numeric_limits<double>::infinity(), c.mean_b - c.mean_a);
    c.df = double(a.size() + b.size() - 2);
    c.p_value = c.mean_a == c.mean_b ? 1.0 : 0.0;
  } else {
    c.t = (c.mean_b - c.mean_a) / se;
    c.df =
        (va + vb) * (va + vb) /
        (va * va / double(a.size() - 1) + vb * vb / double(b.size() - 1));  // Welch-Satterthwaite
    boost::math::students_t dist(c.df);
    c.p_value = 2.0 * boost::math::cdf(boost::math::complement(dist, std::fabs(c.t)));
  }
  c.method = "Welch t on process means";
  c.estimator = "mean/Welch t";
  decide(c, opt);
  c.mde = c.mean_a != 0 ? minimum_detectable_difference(
                              sample_stddev(a), static_cast<int>(a.size()), sample_stddev(b),
                              static_cast<int>(b.size()), opt.alpha, opt.power) /
                              std::fabs(c.mean_a)
                        : std::numeric_limits<double>::infinity();
  return c;
}

namespace {

// Paired t on the log ratios d (Stein's first stage when first_stage selects one).
void paired_t(const std::vector<double>& d, const CompareOptions& opt, int first_stage,
              Comparison& c) {
  const double md = mean(d);
  c.rel_diff = std::exp(md) - 1.0;
  const bool stein = first_stage >= 2 && first_stage < static_cast<int>(d.size());
  const std::vector<double> stage1 =
      stein ? std::vector<double>(d.begin(), d.begin() + first_stage) : d;
  const double sd = sample_stddev(stage1);
  c.df = double(stage1.size() - 1);
  const double se = sd / std::sqrt(double(d.size()));
  if (se == 0) {
    c.t = md == 0 ? 0.0 : std::copysign(std::numeric_limits<double>::infinity(), md);
    c.p_value = md == 0 ? 1.0 : 0.0;
  } else {
    c.t = md / se;
    boost::math::students_t dist(c.df);
    c.p_value = 2.0 * boost::math::cdf(boost::math::complement(dist, std::fabs(c.t)));
  }
  const double half = t_critical(1 - opt.alpha, c.df) * se;
  c.log_shift_low = md - half;
  c.log_shift_high = md + half;
  c.mde = std::exp(minimum_detectable_shift(se, c.df, opt.alpha, opt.power)) - 1.0;
  c.method = stein ? "mean log ratio, paired t (Stein first stage)" : "mean log ratio, paired t";
  c.estimator = "mean/paired t";
}

std::string too_few_rounds(int rounds) {
  return " (" + std::to_string(rounds) + " rounds: too few for the signed-rank test)";
}

// Hodges-Lehmann shift of the log ratios, Wilcoxon signed-rank test on all rounds.
void paired_hodges_lehmann(const std::vector<double>& d, const CompareOptions& opt, Comparison& c) {
  const SignedRankTest w = wilcoxon_signed_rank(d);
  const ShiftEstimate hl = hodges_lehmann(d, 1 - opt.alpha);
  c.rel_diff = std::exp(hl.estimate) - 1.0;
  c.t = w.z;
  c.df = double(d.size() - 1);
  c.p_value = w.p_value;
  c.log_shift_low = hl.low;
  c.log_shift_high = hl.high;
  // The standard error the interval implies (its half-width over the normal quantile of its
  // coverage), put through the t-based power curve: the shift this test detects with `power`.
  // An unbounded interval (too few rounds for the confidence) detects nothing.
  const bool bounded = std::isfinite(hl.high - hl.low) && hl.confidence < 1;
  const double se = bounded ? 0.5 * (hl.high - hl.low) /
                                  boost::math::quantile(boost::math::complement(
                                      boost::math::normal(), (1 - hl.confidence) / 2))
                            : std::numeric_limits<double>::infinity();
  c.mde = std::isfinite(se) ? std::exp(minimum_detectable_shift(se, c.df, opt.alpha, opt.power)) - 1
                            : std::numeric_limits<double>::infinity();
  c.method = w.exact ? "Hodges-Lehmann shift, Wilcoxon signed-rank (exact)"
                     : "Hodges-Lehmann shift, Wilcoxon signed-rank (normal approximation)";
  c.estimator = "Hodges-Lehmann/Wilcoxon";
}

}  // namespace

Comparison compare_paired_rounds(const std::vector<double>& a, const std::vector<double>& b,
                                 const CompareOptions& opt, int first_stage) {
  if (a.size() != b.size() || a.size() < 2) {
    throw std::invalid_argument(
        "compare_paired_rounds: A and B need the same number (>= 2) of rounds");
  }
  std::vector<double> d;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(a[i] > 0) || !(b[i] > 0))
      throw std::invalid_argument("compare_paired_rounds: times must be positive");
    d.push_back(std::log(b[i] / a[i]));
  }
  Comparison c;
  c.mean_a = mean(a);
  c.mean_b = mean(b);
  // Below signed_rank_min_rounds the signed-rank test cannot reject at alpha whatever the data
  // (5 rounds: p >= 1/16): the verdict falls back to the t-test and its method says so.
  if (opt.estimator == PairedEstimator::kHodgesLehmann &&
      static_cast<int>(d.size()) >= signed_rank_min_rounds(opt.alpha)) {
    paired_hodges_lehmann(d, opt, c);
  } else {
    paired_t(d, opt, first_stage, c);
    if (opt.estimator == PairedEstimator::kHodgesLehmann)
      c.method += too_few_rounds(static_cast<int>(d.size()));
  }
  decide(c, opt);
  return c;
}

const char* to_string(PairedEstimator e) {
  return e == PairedEstimator::kHodgesLehmann ? "hodges-lehmann" : "mean";
}

PairedEstimator paired_estimator_from(const std::string& name) {
  if (name == "hodges-lehmann") return PairedEstimator::kHodgesLehmann;
  if (name == "mean") return PairedEstimator::kMeanT;
  throw std::invalid_argument("unknown estimator '" + name + "' (hodges-lehmann or mean)");
}

const char* to_string(Comparison::Verdict v) {
  switch (v) {
    case Comparison::Verdict::kNoDifference:
      return "no-difference";
    case Comparison::Verdict::kBFaster:
      return "b-faster";
    case Comparison::Verdict::kBSlower:
      return "b-slower";
  }
  return "?";
}

}  // namespace k3stats
