// What changed between two segments of a series -- the nights before a change point and the nights
// after it, each night a sample of per-process figures (ns per call) -- and by how much.
//
// Three questions, each with its own test, nights (never single processes) as the unit because
// processes of one night share that night's machine:
//   level   did the typical figure move? Size: the ratio of the sides' interquartile means (Tukey's
//           midmean, the mean of the central half of the pooled figures: robust to a quarter of
//           far-off processes at either end and, unlike the median, steady when the figures split
//           into two modes with nothing between them). Test: Welch's t on the nights'
//           interquartile means (compare_processes). Welch, because a change of spread alone
//           changes the variance of the night figures but not their centre, and a
//           pooled-variance test would then misstate the level.
//   spread  did the dispersion about the side's own centre change? Size: the ratio of the
//           sides' median absolute deviations from their interquartile means (the mean absolute
//           deviation where that median is 0, as with discrete figures). Test: each side
//           centred on its own interquartile mean, then a permutation test of
//           |ln(spread after / spread before)| over the assignments of whole nights to the two
//           sides. Centring first takes a level change out of this question.
//   shape   is there a difference that level and spread do not explain? Each side standardised
//           (centred, divided by its spread), then a permutation test of the energy statistic
//           (energy_distance.h, exponent energy_exponent) between the standardised sides. Size:
//           that statistic, in units of the spread (0 for the same shape, slightly negative by
//           chance: it is unbiased). A pure level step or a pure spread change standardise
//           away; a unimodal series turning bimodal with the same centre and spread does not.
// The spread and shape tests are aligned permutation tests: the centres and scales are estimated,
// so the nights are exchangeable under each null only approximately (P. Good, Permutation,
// Parametric and Bootstrap Tests of Hypotheses, 3rd ed., 2005). p-values are
// (1 + #{permuted >= observed}) / (R + 1). A side of a single night leaves all three untested
// (p = 1): one night cannot separate a change from that night's machine state. On sides a change
// point detector chose to make as different as it could, these p-values attribute a change that
// the detector's own test found; they do not confirm it (on a split the detector found by chance
// they come out small too).
//
// The kind -- the one word a chart shows -- and why in this order:
//   level   the level test passes at alpha AND |level ratio - 1| >= min_level_effect: the
//           typical time is what a kernel team acts on, and the level ratio stays meaningful
//           whatever else changed;
//   shape   else the shape test passes: once the standardised shapes differ no single ratio
//           describes the change (a bimodal split can move the spread too; "spread" would hide
//           the second mode);
//   spread  else the spread test passes AND the spread ratio is at least min_spread_ratio either
//           way;
//   none    else: the difference the change-point test saw is not attributed at these sizes.
// So a pure spread doubling is "spread", never "level": its centres agree, the level test keeps
// its nominal rate on the night figures, and the standardised shapes agree. Every component's
// figures are reported whatever the kind: a slowdown that also doubled the spread shows both.
#pragma once

#include <cstdint>
#include <vector>

namespace k3stats {

enum class ChangeKind { kLevel, kSpread, kShape, kNone };
const char* to_string(ChangeKind kind);  // "level", "spread", "shape", "none"

struct ChangeComponent {
  double size = 0;      // level, spread: after / before; shape: the energy statistic
  double p_value = 1;   // of its test
  bool passes = false;  // significant at alpha and (level, spread) at least its minimum size
};

struct ChangeClassification {
  ChangeKind kind = ChangeKind::kNone;
  ChangeComponent level, spread, shape;
  double level_before = 0, level_after = 0;    // interquartile means of each side's figures
  double spread_before = 0, spread_after = 0;  // median absolute deviations about them
};

struct ClassifyOptions {
  double alpha = 0.05;             // each component's test
  double min_level_effect = 0.02;  // relative; the op's minimum effect of the mean rule
  double min_spread_ratio = 1.25;  // spread ratio, either way
  int permutations = 199;
  std::uint64_t seed = 1;
  double energy_exponent = 0.5;  // of the shape test's statistic (distribution_changes.h: why 0.5)
};

// before and after: the nights on each side, each night its per-process figures (non-empty,
// finite: invalid_argument otherwise, as for an empty side).
ChangeClassification classify_change(const std::vector<std::vector<double>>& before,
                                     const std::vector<std::vector<double>>& after,
                                     const ClassifyOptions& options = {});

}  // namespace k3stats
