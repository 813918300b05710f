// Change points that see more than the mean: E-divisive means with its permutation test over the
// nights of a series (e_divisive.h), each change point then classified against its neighbouring
// change points -- level, spread or shape, with sizes and p-values (change_kind.h).
//
// Meant to sit next to the mean rule (reports/change_points.h: optimal partitioning of the nights'
// means, Welch's test per step), which sees a step of the mean only: a kernel whose spread doubles
// or that turns bimodal (two TCM placements, a thread sometimes descheduled) keeps its mean.
//
// Input: one entry per night (run) in time order, oldest first, each that night's per-process
// figures of one series (the cell's processes, e.g. kernel time per call in ns) -- the series the
// trend draws, with the processes in place of their mean. Output: the change points in night
// order. Deterministic: the permutations come from `seed`, the same on every platform.
//
// Cost: O(T^2 P^2) for the distances of T nights of P processes, then O(T^2) per permutation, per
// change point found and per classification test: on the development VM 9 ms for 30 nights of 10
// processes, 66 ms for 100, 0.66 s for 365 (199 permutations).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/host/stats/change_kind.h"

namespace k3stats {

struct DistributionChangeOptions {
  double max_p_value = 0.05;  // the E-divisive permutation test of each split
  int permutations = 199;     // per test; the smallest p-value is 1 / (permutations + 1)
  std::uint64_t seed = 1;
  // Nights on each side of a change (at least 2: a single night can be a bad night, and none of
  // the classification's tests can judge one); the mean rule also needs two.
  std::size_t min_segment = 2;
  // The energy distance's exponent (the paper's alpha, in (0, 2)). 0.5 rather than the paper's 1:
  // a smaller exponent weighs the many small distances more, which is where a bimodal split
  // differs from one mode (docs/measurement.md, 40 synthetic series of 15 + 15 nights of 10
  // processes: a bimodal split found in 28 at 0.5, in 4 at 1; a spread doubling in 36 and 28).
  double exponent = 0.5;
  ClassifyOptions classify;  // set min_level_effect to the op's minimum effect
};

struct DistributionChangePoint {
  std::size_t index = 0;  // the first night after the change
  double p_value = 1;     // E-divisive's permutation test when the split was found
  double q_hat = 0;
  // The sides classified: nights [segment_begin, index) against [index, segment_end), up to the
  // neighbouring change points.
  std::size_t segment_begin = 0, segment_end = 0;
  ChangeClassification what;
};

// invalid_argument (naming the night) for a night without figures or with a figure that is not
// finite, and for options out of range. Fewer than 2 min_segment nights: no change points.
std::vector<DistributionChangePoint> find_distribution_changes(
    const std::vector<std::vector<double>>& nights, const DistributionChangeOptions& options = {});

// One line, e.g. "night 15: spread; level x0.997 (p 0.724); spread x2.33 (p 0.005); shape 0.001
// (p 0.415); split p 0.005".
std::string describe(const DistributionChangePoint& change);

}  // namespace k3stats
