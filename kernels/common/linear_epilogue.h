// The direct epilogue of every Linear driver: block accumulator -> final value, stored once in the
// requested layout; and the Linear argument checks.
#pragma once

#include <algorithm>

#include "k3k/linear.h"

namespace k3k::detail {

// acc is sum_b (s*D + beta*S) for output (row, col); applies sa, bias, residual, clamp in that
// order.
inline void store_linear_output(const LinearEpilogue& ep, float* out, std::int64_t m,
                                std::int64_t n, std::int64_t row, std::int64_t col, float sa,
                                float acc) {
  const std::int64_t idx = output_index(ep.layout, m, n, row, col);
  float y = sa * acc;
  if (ep.bias != nullptr) y += ep.bias[col];
  if (ep.residual != nullptr) y += ep.residual[idx];
  out[idx] = std::min(std::max(y, ep.clamp_min), ep.clamp_max);
}

// C4 lanes past N are defined as zero so the output buffer is fully written.
void zero_c4_padding(const LinearEpilogue& ep, float* out, std::int64_t m, std::int64_t n);

// Output columns per Linear task: tile_n rounded up to whole weight tiles of `rows` rows. A tile
// body computes all rows of its tile, so a task covering part of a tile would compute the rest
// for nothing (twice the work at tile_n 64 with 128-row tiles); outputs do not depend on it.
inline std::int64_t whole_weight_tiles(std::int64_t tile_n, std::int64_t rows) {
  return (tile_n + rows - 1) / rows * rows;
}

// Throws std::invalid_argument naming `who`; weights whose layout the microkernel `ukernel` does
// not read (reads_layout false) are refused with both names.
void validate_linear_args(const char* who, const PackedActivations& a, const W4B64Packed& w,
                          const LinearEpilogue& ep, const float* out, const LinearTiling& tiling,
                          const char* ukernel, bool reads_layout);

}  // namespace k3k::detail
