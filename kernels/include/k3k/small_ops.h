// Row-wise small ops of a transformer layer (the dispatched ops; KernelPath: k3k/dispatch.h). All
// split their work over rows or fixed element chunks, each task owning disjoint outputs, so results
// are bitwise identical for any WorkerPool size. Output spans may be the same span as an input (in
// place) but must not partially overlap one.
#pragma once

#include <cstdint>
#include <span>

#include "k3k/dispatch.h"
#include "k3k/worker_pool.h"

namespace k3k {

// Width of the fixed-order reductions of the generic layer (RMSNorm's sum of squares and the
// attention q.k dot products): element i goes to lane i % 16, lanes are summed by a pairwise tree.
// The float64 references derive their error bounds from this structure.
inline constexpr int kGenericReductionLanes = 16;

// y[r][i] = x[r][i] / sqrt(mean_i(x[r][i]^2) + eps) * weight[i] for r < rows, i < dim.
// Also the per-head QK norm: rows = tokens * heads, dim = head_dim. (Models whose norm scales by
// (1 + w) pass the pre-added weight.)
void rmsnorm(KernelPath path, std::span<const float> x, std::span<const float> weight,
             std::span<float> out, std::int64_t rows, int dim, float eps, WorkerPool& pool);

// out = silu(gate) * up, silu(g) = g / (1 + exp(-g)); gate, up, out: [rows][dim].
void swiglu(KernelPath path, std::span<const float> gate, std::span<const float> up,
            std::span<float> out, std::int64_t rows, std::int64_t dim, WorkerPool& pool);

// out = a + b elementwise over [rows][dim] (out may be a or b).
void residual_add(KernelPath path, std::span<const float> a, std::span<const float> b,
                  std::span<float> out, std::int64_t rows, std::int64_t dim, WorkerPool& pool);

// The greedy choice over logits: the first index of the largest value that is not NaN (0 when
// every value is NaN); the same index on every layer. One pass on the calling thread (a decode
// step's 150k logits are a few microseconds of streaming). Throws std::invalid_argument when x
// is empty.
std::int64_t argmax(KernelPath path, std::span<const float> x);

}  // namespace k3k
