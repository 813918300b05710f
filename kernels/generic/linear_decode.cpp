// Decode Linear, "M1" kernel: one activation row; a task covers tile_n output columns, computed
// 32 weight rows (one packed row tile) at a time. The call is memory-bound (4.5 bits of weight
// per multiply-add), so the kernel's job is to consume the weight stream as fast as it arrives:
// the activation row (K bytes) stays in L1 and the weights are read exactly once, in order.
#include <algorithm>
#include <stdexcept>

#include "generic/linear_decode_tile.h"
#include "generic/linear_epilogue.h"
#include "generic/w4b64_tile_dot.h"

namespace k3k::generic {

void decode_row_tile(const std::uint8_t* codes, const float* scale, const float* beta, const std::int8_t* x,
                     const std::int32_t* sums, std::int64_t nb, float acc[kW4RowTile]) {
  for (int i = 0; i < kW4RowTile; ++i) acc[i] = 0.0f;
  std::int32_t d[1][kW4RowTile];
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::int8_t* xb = x + b * 64;
    tile_block_dot<1>(codes + b * 32 * kW4RowTile, &xb, d);
    const float s_b = static_cast<float>(sums[b]);
    const float* sc = scale + b * kW4RowTile;
    const float* be = beta + b * kW4RowTile;
    for (int i = 0; i < kW4RowTile; ++i) acc[i] += sc[i] * static_cast<float>(d[0][i]) + be[i] * s_b;
  }
}

void linear_decode_w4b64(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep,
                         float* out, WorkerPool& pool, const LinearTiling& tiling) {
  validate_linear_args("linear_decode_w4b64", a, w, ep, out, tiling);
  if (a.layout != ActivationLayout::kRowK256 || a.m != 1) {
    throw std::invalid_argument("linear_decode_w4b64: activations must be one row in the K256 (decode) layout");
  }
  const std::int64_t n = w.n, nb = w.blocks_per_row();
  const std::int64_t col_tiles = (n + tiling.tile_n - 1) / tiling.tile_n;
  const std::int32_t* sums = a.block_sum.data();
  const float sa = a.scale[0];

  pool.parallel_for(col_tiles, [&](std::int64_t task, int) {
    const std::int64_t col0 = task * tiling.tile_n;
    const std::int64_t col1 = std::min<std::int64_t>(n, col0 + tiling.tile_n);
    for (std::int64_t t = col0 / kW4RowTile; t * kW4RowTile < col1; ++t) {
      float acc[kW4RowTile];
      decode_row_tile(w.codes.data() + t * nb * 32 * kW4RowTile, w.scale.data() + t * nb * kW4RowTile,
                      w.beta.data() + t * nb * kW4RowTile, a.codes.data(), sums, nb, acc);
      const std::int64_t lo = std::max(col0, t * kW4RowTile);
      const std::int64_t hi = std::min(col1, (t + 1) * kW4RowTile);
      for (std::int64_t col = lo; col < hi; ++col) {
        store_linear_output(ep, out, 1, n, 0, col, sa, acc[col - t * kW4RowTile]);
      }
    }
  });
  zero_c4_padding(ep, out, 1, n);
}

}  // namespace k3k::generic
