#include "harness/host/stats/distribution_changes.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "harness/host/stats/e_divisive.h"

namespace k3stats {
namespace {

void check_nights(const std::vector<std::vector<double>>& nights) {
  const std::string what = "distribution change points: night ";
  for (std::size_t n = 0; n < nights.size(); ++n) {
    if (nights[n].empty())
      throw std::invalid_argument(what + std::to_string(n) + " has no figures");
    for (std::size_t p = 0; p < nights[n].size(); ++p)
      if (!std::isfinite(nights[n][p]))
        throw std::invalid_argument(what + std::to_string(n) + ", figure " + std::to_string(p) +
                                    " is not finite");
  }
}

}  // namespace

std::vector<DistributionChangePoint> find_distribution_changes(
    const std::vector<std::vector<double>>& nights, const DistributionChangeOptions& opt) {
  if (opt.min_segment < 2)
    throw std::invalid_argument("distribution change points: min_segment must be at least 2");
  check_nights(nights);
  EDivisiveOptions split;
  split.exponent = opt.exponent;
  split.test = SplitSignificance::kPermutation;
  split.max_p_value = opt.max_p_value;
  split.permutations = opt.permutations;
  split.seed = opt.seed;
  split.min_segment = opt.min_segment;
  const auto found = e_divisive(nights, split);  // validates the options

  std::vector<DistributionChangePoint> out;
  for (std::size_t k = 0; k < found.size(); ++k) {
    DistributionChangePoint c;
    c.index = found[k].index;
    c.p_value = found[k].p_value;
    c.q_hat = found[k].q_hat;
    c.segment_begin = k == 0 ? 0 : found[k - 1].index;
    c.segment_end = k + 1 == found.size() ? nights.size() : found[k + 1].index;
    const auto first = nights.begin();
    const std::vector<std::vector<double>> before(first + std::ptrdiff_t(c.segment_begin),
                                                  first + std::ptrdiff_t(c.index));
    const std::vector<std::vector<double>> after(first + std::ptrdiff_t(c.index),
                                                 first + std::ptrdiff_t(c.segment_end));
    ClassifyOptions classify = opt.classify;
    classify.energy_exponent = opt.exponent;
    classify.seed = opt.classify.seed + c.index;  // each change point its own draws
    c.what = classify_change(before, after, classify);
    out.push_back(std::move(c));
  }
  return out;
}

std::string describe(const DistributionChangePoint& c) {
  const auto& w = c.what;
  char text[256];
  std::snprintf(text, sizeof text,
                "night %zu: %s; level x%.3f (p %.3g); spread x%.2f (p %.3g); shape %.3f (p %.3g);"
                " split p %.3g",
                c.index, to_string(w.kind), w.level.size, w.level.p_value, w.spread.size,
                w.spread.p_value, w.shape.size, w.shape.p_value, c.p_value);
  return text;
}

}  // namespace k3stats
