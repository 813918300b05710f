// The direct epilogue of every Linear driver: block accumulator -> final value, stored once in the
// requested layout; and the Linear argument checks.
#pragma once

#include <algorithm>

#include "k3k/linear.h"
#include "ukernels/linear.h"

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

// Accumulators a decode task computes before it stores them (a few weight tiles of any row_tile).
inline constexpr std::int64_t kDecodeSpanRows = 4 * kMaxRowTile;

// store_linear_output for the outputs (row0 + r, col0 + i) from acc[r * acc_stride + i] and sa[r]
// (ukernel::StoreTileFn): the scalar epilogue of the generic layer, one loop per row over its
// contiguous outputs (row-major, or C4 with one row), output by output where C4 spreads them.
void store_linear_tile(const LinearEpilogue& ep, float* out, std::int64_t m, std::int64_t n,
                       std::int64_t row0, int rows, std::int64_t col0, std::int64_t count,
                       const float* sa, const float* acc, std::int64_t acc_stride);

// The variant's epilogue bound to one call's (ep, M), or the scalar one.
inline ukernel::StoreTileFn store_tile_of(ukernel::BindStoreFn bind, const LinearEpilogue& ep,
                                          std::int64_t m) {
  return bind != nullptr ? bind(ep, m) : store_linear_tile;
}
template <typename Variant>
ukernel::StoreTileFn store_tile_of(const Variant& uk, const LinearEpilogue& ep, std::int64_t m) {
  return store_tile_of(uk.bind_store, ep, m);
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
