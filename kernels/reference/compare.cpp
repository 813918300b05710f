#include "k3k/reference/compare.h"

#include <cmath>
#include <stdexcept>

namespace k3k::reference {

CompareResult compare_to_reference(std::span<const float> got, std::span<const double> ref,
                                   std::span<const double> bound) {
  if (got.size() != ref.size() || ref.size() != bound.size()) {
    throw std::invalid_argument("compare_to_reference: got/ref/bound sizes differ");
  }
  CompareResult r;
  r.count = got.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i];
    double err = std::fabs(g - ref[i]);
    if (!std::isfinite(g) && std::isfinite(ref[i])) err = INFINITY;
    if (std::isnan(err)) err = INFINITY;
    const double rel = err / std::fmax(std::fabs(ref[i]), 1e-30);
    const double ratio = bound[i] > 0.0 ? err / bound[i] : (err > 0.0 ? INFINITY : 0.0);
    if (err > r.max_abs_err) r.max_abs_err = err;
    if (rel > r.max_rel_err) r.max_rel_err = rel;
    if (ratio > r.worst_ratio || i == 0) {
      r.worst_ratio = ratio;
      r.worst_bound = bound[i];
      r.worst_index = i;
    }
  }
  r.pass = r.worst_ratio <= 1.0;
  return r;
}

}  // namespace k3k::reference
