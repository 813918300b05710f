// Element-wise comparison of a float kernel output with its float64 reference under per-element
// bounds. Shared by the tests and by k3bench's accuracy check.
#pragma once

#include <cstddef>
#include <span>

namespace k3k::reference {

struct CompareResult {
  double max_abs_err = 0.0;
  double max_rel_err = 0.0;   // abs err / max(|ref|, 1e-30)
  double worst_ratio = 0.0;   // max over elements of abs err / bound; pass iff <= 1
  double worst_bound = 0.0;   // the bound at that element
  std::size_t worst_index = 0;
  std::size_t count = 0;
  bool pass = true;           // also false on any NaN/Inf where the reference is finite
};

CompareResult compare_to_reference(std::span<const float> got, std::span<const double> ref,
                                   std::span<const double> bound);

}  // namespace k3k::reference
