#include "harness/host/stats/change_kind.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "harness/host/stats/energy_distance.h"
#include "harness/host/stats/shuffle.h"
#include "harness/host/stats/stats.h"

namespace k3stats {
namespace {

using Nights = std::vector<std::vector<double>>;

std::vector<double> pooled(const Nights& nights) {
  std::vector<double> all;
  for (const auto& n : nights) all.insert(all.end(), n.begin(), n.end());
  return all;
}

// Tukey's midmean: the mean of the figures left after dropping floor(n / 4) from each end.
double interquartile_mean(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const std::size_t drop = x.size() / 4;
  const auto first = x.begin() + std::ptrdiff_t(drop), last = x.end() - std::ptrdiff_t(drop);
  return std::accumulate(first, last, 0.0) / double(last - first);
}

// Median absolute deviation about `centre`; the mean absolute deviation when that is 0 (more than
// half the figures equal the centre, as with discrete figures), 0 only for a constant side.
double spread_about(const std::vector<double>& x, double centre) {
  std::vector<double> dev;
  dev.reserve(x.size());
  for (double v : x) dev.push_back(std::fabs(v - centre));
  const double mad = median(dev);
  if (mad > 0) return mad;
  return std::accumulate(dev.begin(), dev.end(), 0.0) / double(dev.size());
}

double ratio(double after, double before) {
  if (before == 0) return after == 0 ? 1 : std::numeric_limits<double>::infinity();
  return after / before;
}

// |ln(after / before)| with 0/0 = 0 and x/0 = infinity.
double log_ratio_magnitude(double after, double before) {
  const double r = ratio(after, before);
  return r == 0 ? std::numeric_limits<double>::infinity() : std::fabs(std::log(r));
}

Nights transformed(const Nights& nights, double centre, double scale) {
  Nights out = nights;
  for (auto& n : out)
    for (auto& v : n) v = (v - centre) / scale;
  return out;
}

// Permutation p-value of statistic(first `split` nights of `order`, the rest) over random
// assignments of the nights [0, total) to the sides.
template <class Statistic>
double permutation_p(std::size_t split, std::size_t total, double observed, int permutations,
                     PortableShuffler& rng, Statistic statistic) {
  std::vector<std::size_t> order(total);
  std::iota(order.begin(), order.end(), std::size_t{0});
  int reached = 0;
  for (int r = 0; r < permutations; ++r) {
    rng.shuffle(order.begin(), order.end());
    const std::vector<std::size_t> x(order.begin(), order.begin() + std::ptrdiff_t(split));
    const std::vector<std::size_t> y(order.begin() + std::ptrdiff_t(split), order.end());
    if (statistic(x, y) >= observed) ++reached;
  }
  return double(reached + 1) / double(permutations + 1);
}

ChangeComponent level_component(const Nights& before, const Nights& after,
                                const ChangeClassification& c, const ClassifyOptions& opt) {
  ChangeComponent level;
  level.size = ratio(c.level_after, c.level_before);
  std::vector<double> mb, ma;
  for (const auto& n : before) mb.push_back(interquartile_mean(n));
  for (const auto& n : after) ma.push_back(interquartile_mean(n));
  level.p_value = compare_processes(mb, ma).p_value;
  level.passes = level.p_value < opt.alpha && std::fabs(level.size - 1) >= opt.min_level_effect;
  return level;
}

// The sides centred on their own interquartile means, nights [0, before) then [before, total).
ChangeComponent spread_component(const Nights& centred, std::size_t n_before,
                                 const ChangeClassification& c, const ClassifyOptions& opt,
                                 PortableShuffler& rng) {
  ChangeComponent spread;
  spread.size = ratio(c.spread_after, c.spread_before);
  auto group_spread = [&](const std::vector<std::size_t>& nights) {
    std::vector<double> v;
    for (std::size_t i : nights) v.insert(v.end(), centred[i].begin(), centred[i].end());
    return spread_about(v, 0);
  };
  auto statistic = [&](const std::vector<std::size_t>& x, const std::vector<std::size_t>& y) {
    return log_ratio_magnitude(group_spread(y), group_spread(x));
  };
  const double observed = log_ratio_magnitude(c.spread_after, c.spread_before);
  spread.p_value =
      permutation_p(n_before, centred.size(), observed, opt.permutations, rng, statistic);
  spread.passes = spread.p_value < opt.alpha &&
                  (spread.size >= opt.min_spread_ratio || spread.size <= 1 / opt.min_spread_ratio);
  return spread;
}

ChangeComponent shape_component(const Nights& standardised, std::size_t n_before,
                                const ClassifyOptions& opt, PortableShuffler& rng) {
  ChangeComponent shape;
  const ObservationDistances d(standardised, opt.energy_exponent);
  auto statistic = [&](const std::vector<std::size_t>& x, const std::vector<std::size_t>& y) {
    return energy_statistic(d, x, y);
  };
  std::vector<std::size_t> x(n_before), y(standardised.size() - n_before);
  std::iota(x.begin(), x.end(), std::size_t{0});
  std::iota(y.begin(), y.end(), n_before);
  shape.size = statistic(x, y);
  shape.p_value =
      permutation_p(n_before, standardised.size(), shape.size, opt.permutations, rng, statistic);
  shape.passes = shape.p_value < opt.alpha;
  return shape;
}

void check_side(const Nights& side, const char* name) {
  if (side.empty()) throw std::invalid_argument(std::string("classify change: no nights ") + name);
  for (std::size_t i = 0; i < side.size(); ++i) {
    if (side[i].empty())
      throw std::invalid_argument(std::string("classify change: night ") + std::to_string(i) + " " +
                                  name + " has no figures");
    for (double v : side[i])
      if (!std::isfinite(v))
        throw std::invalid_argument(std::string("classify change: night ") + std::to_string(i) +
                                    " " + name + " has a figure that is not finite");
  }
}

}  // namespace

const char* to_string(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kLevel:
      return "level";
    case ChangeKind::kSpread:
      return "spread";
    case ChangeKind::kShape:
      return "shape";
    case ChangeKind::kNone:
      break;
  }
  return "none";
}

ChangeClassification classify_change(const Nights& before, const Nights& after,
                                     const ClassifyOptions& opt) {
  check_side(before, "before the change");
  check_side(after, "after the change");
  if (opt.permutations < 1)
    throw std::invalid_argument("classify change: at least one permutation is needed");
  ChangeClassification c;
  const auto pb = pooled(before), pa = pooled(after);
  c.level_before = interquartile_mean(pb);
  c.level_after = interquartile_mean(pa);
  c.spread_before = spread_about(pb, c.level_before);
  c.spread_after = spread_about(pa, c.level_after);
  c.level.size = ratio(c.level_after, c.level_before);
  c.spread.size = ratio(c.spread_after, c.spread_before);
  if (before.size() < 2 || after.size() < 2) return c;  // one night a side: nothing testable

  PortableShuffler rng(opt.seed);
  c.level = level_component(before, after, c, opt);
  Nights centred = transformed(before, c.level_before, 1);
  const auto centred_after = transformed(after, c.level_after, 1);
  centred.insert(centred.end(), centred_after.begin(), centred_after.end());
  c.spread = spread_component(centred, before.size(), c, opt, rng);
  Nights standardised =
      transformed(before, c.level_before, c.spread_before > 0 ? c.spread_before : 1);
  const auto standardised_after =
      transformed(after, c.level_after, c.spread_after > 0 ? c.spread_after : 1);
  standardised.insert(standardised.end(), standardised_after.begin(), standardised_after.end());
  c.shape = shape_component(standardised, before.size(), opt, rng);

  if (c.level.passes)
    c.kind = ChangeKind::kLevel;
  else if (c.shape.passes)
    c.kind = ChangeKind::kShape;
  else if (c.spread.passes)
    c.kind = ChangeKind::kSpread;
  return c;
}

}  // namespace k3stats
