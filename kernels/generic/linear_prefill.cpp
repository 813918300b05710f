// Prefill Linear, "M4" kernel: a task is (tile_n output columns) x (group of 4 activation rows).
// Each 32-row weight tile block is unpacked once and reused by the 4 rows. Tasks are ordered
// column-range major so a worker keeps the same weight tiles hot in L1/L2 while it walks groups.
#include <algorithm>
#include <stdexcept>

#include "generic/linear_epilogue.h"
#include "generic/w4b64_tile_dot.h"

namespace k3k::generic {

namespace {
constexpr int kRows = kPrefillRowsPerTask;
}

void linear_prefill_w4b64(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep,
                          float* out, WorkerPool& pool, const LinearTiling& tiling) {
  validate_linear_args("linear_prefill_w4b64", a, w, ep, out, tiling);
  if (a.layout != ActivationLayout::kRowsM4) {
    throw std::invalid_argument("linear_prefill_w4b64: activations must use the M4 (prefill) layout");
  }
  const std::int64_t m = a.m, n = w.n, nb = w.blocks_per_row();
  const std::int64_t groups = (m + kRows - 1) / kRows;
  const std::int64_t col_tiles = (n + tiling.tile_n - 1) / tiling.tile_n;

  pool.parallel_for(groups * col_tiles, [&](std::int64_t task, int) {
    const std::int64_t group = task % groups;
    const std::int64_t col0 = (task / groups) * tiling.tile_n;
    const std::int64_t col1 = std::min<std::int64_t>(n, col0 + tiling.tile_n);
    const std::int64_t row0 = group * kRows;
    const int rows = static_cast<int>(std::min<std::int64_t>(kRows, m - row0));
    std::int32_t sums[kRows][1] = {};
    for (std::int64_t t = col0 / kW4RowTile; t * kW4RowTile < col1; ++t) {
      const std::uint8_t* codes = w.codes.data() + t * nb * 32 * kW4RowTile;
      const float* scale = w.scale.data() + t * nb * kW4RowTile;
      const float* beta = w.beta.data() + t * nb * kW4RowTile;
      float acc[kRows][kW4RowTile] = {};
      std::int32_t d[kRows][kW4RowTile];
      for (std::int64_t b = 0; b < nb; ++b) {
        // The M4 pack keeps the 4 rows of a block contiguous (padded rows are zero codes).
        const std::int8_t* base = a.codes.data() + ((group * nb + b) * kRows) * 64;
        const std::int8_t* x[kRows] = {base, base + 64, base + 128, base + 192};
        tile_block_dot<kRows>(codes + b * 32 * kW4RowTile, x, d);
        const float* sc = scale + b * kW4RowTile;
        const float* be = beta + b * kW4RowTile;
        for (int r = 0; r < kRows; ++r) {
          sums[r][0] = r < rows ? a.block_sum[static_cast<std::size_t>((row0 + r) * nb + b)] : 0;
          const float s_rb = static_cast<float>(sums[r][0]);
          for (int i = 0; i < kW4RowTile; ++i) acc[r][i] += sc[i] * static_cast<float>(d[r][i]) + be[i] * s_rb;
        }
      }
      const std::int64_t lo = std::max(col0, t * kW4RowTile);
      const std::int64_t hi = std::min(col1, (t + 1) * kW4RowTile);
      for (int r = 0; r < rows; ++r) {
        const float sa = a.scale[static_cast<std::size_t>(row0 + r)];
        for (std::int64_t col = lo; col < hi; ++col) {
          store_linear_output(ep, out, m, n, row0 + r, col, sa, acc[r][col - t * kW4RowTile]);
        }
      }
    }
  });
  zero_c4_padding(ep, out, m, n);
}

}  // namespace k3k::generic
