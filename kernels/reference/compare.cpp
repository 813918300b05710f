#include "k3k/reference/compare.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace k3k::reference {

CompareResult compare_to_reference(std::span<const float> got, std::span<const double> ref,
                                   std::span<const double> bound) {
  if (got.size() != ref.size() || got.size() != bound.size()) {
    std::ostringstream os;
    os << "compare_to_reference: sizes differ: got (" << got.size() << "), ref (" << ref.size()
       << "), bound (" << bound.size() << ")";
    throw std::invalid_argument(os.str());
  }
  CompareResult r;
  r.count = static_cast<std::int64_t>(got.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double b = bound[i];
    if (!(b >= 0.0)) {
      std::ostringstream os;
      os << "compare_to_reference: bound[" << i << "] (" << b << ") is negative or NaN";
      throw std::invalid_argument(os.str());
    }
    const double g = got[i];
    double err = std::fabs(g - ref[i]);
    if (!std::isfinite(g)) err = std::numeric_limits<double>::infinity();
    const double rel = err / std::fmax(std::fabs(ref[i]), CompareResult::kRelFloor);
    double ratio = 0.0;
    if (err > 0.0) ratio = b > 0.0 ? err / b : std::numeric_limits<double>::infinity();
    if (!std::isfinite(g)) ratio = std::numeric_limits<double>::infinity();
    const bool ok = std::isfinite(g) && err <= b;
    if (!ok) {
      if (r.failures == 0) r.first_failure = static_cast<std::int64_t>(i);
      ++r.failures;
      r.pass = false;
    }
    if (err > r.max_abs_err) r.max_abs_err = err;
    if (rel > r.max_rel_err) r.max_rel_err = rel;
    if (r.worst_index < 0 || ratio > r.worst_ratio) {
      r.worst_ratio = ratio;
      r.worst_index = static_cast<std::int64_t>(i);
      r.worst_got = g;
      r.worst_ref = ref[i];
      r.worst_bound = b;
    }
  }
  return r;
}

std::string describe(const CompareResult& r, std::span<const float> got,
                     std::span<const double> ref, std::span<const double> bound) {
  std::ostringstream os;
  os.precision(6);
  os << (r.pass ? "PASS" : "FAIL") << ": " << r.failures << "/" << r.count
     << " outside bound; max_abs_err " << r.max_abs_err << ", max_rel_err " << r.max_rel_err
     << ", max err/bound " << r.worst_ratio;
  const auto at = [&](std::int64_t i) {
    const auto k = static_cast<std::size_t>(i);
    if (i < 0 || k >= got.size() || k >= ref.size() || k >= bound.size()) return;
    os.precision(9);
    os << " [" << i << "] got " << got[k] << " ref " << ref[k] << " bound " << bound[k];
  };
  os << "; worst";
  at(r.worst_index);
  if (!r.pass && r.first_failure != r.worst_index) {
    os << "; first failure";
    at(r.first_failure);
  }
  return os.str();
}

}  // namespace k3k::reference
