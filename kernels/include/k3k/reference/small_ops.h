// Float64 references for the small ops (k3k/small_ops.h) and their per-element error bounds
// (derivations in kernels/reference/small_ops_reference.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "k3k/small_ops.h"

namespace k3k::reference {

// y = x / sqrt(mean(x^2) + eps) * w per row, in double.
std::vector<double> rmsnorm(std::span<const float> x, std::span<const float> weight,
                            std::int64_t rows, int dim, float eps);
// Bound for a kernel whose sum of squares has `sum_depth` roundings per term (default: the
// generic layer's kGenericReductionLanes lanes + tree, ceil(dim/16) + 4); ref = rmsnorm(...).
std::vector<double> rmsnorm_bound(std::span<const double> ref, int dim, std::int64_t sum_depth = 0);

// silu(gate) * up in double.
std::vector<double> swiglu(std::span<const float> gate, std::span<const float> up);
std::vector<double> swiglu_bound(std::span<const float> gate, std::span<const float> up,
                                 std::span<const double> ref);

// a + b in double (exact).
std::vector<double> residual_add(std::span<const float> a, std::span<const float> b);
std::vector<double> residual_add_bound(std::span<const double> ref);

}  // namespace k3k::reference
