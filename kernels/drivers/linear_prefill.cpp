// Prefill Linear: a task is (tile_n output columns) x (group of group_rows activation rows),
// ordered column-range major so a worker keeps the same weight tiles hot in L1/L2 while it walks
// groups. Per weight tile (w.row_tile rows) the layer's body returns the block-reduced accumulators
// of the group's rows; the direct epilogue stores each output once. Each output's blocks are
// reduced by one task in ascending order, so results are bitwise identical for every worker count
// and tile_n.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/linear_epilogue.h"
#include "drivers/drivers.h"

namespace k3k::driver {

void linear_prefill(const ukernel::LinearPrefill& uk, const PackedActivations& a,
                    const W4B64Packed& w, const LinearEpilogue& ep, float* out, WorkerPool& pool,
                    const LinearTiling& tiling) {
  constexpr const char* who = "linear_prefill_w4b64";
  detail::validate_linear_args(who, a, w, ep, out, tiling, uk.name, uk.reads(w));
  if (a.layout != ActivationLayout::kRowsM4) {
    throw std::invalid_argument(std::string(who) +
                                ": activations must use the M4 (prefill) layout");
  }
  const std::unique_ptr<ukernel::PrefillTileBody> body = uk.bind(a, w, pool);
  const std::int64_t m = a.m, n = w.n, rows_per_tile = w.row_tile;
  const int group_rows = uk.group_rows;
  const std::int64_t groups = (m + group_rows - 1) / group_rows;
  const std::int64_t tile_n = detail::whole_weight_tiles(tiling.tile_n, rows_per_tile);
  const std::int64_t col_tiles = (n + tile_n - 1) / tile_n;
  const ukernel::StoreTileFn store = detail::store_tile_of(uk);
  const ukernel::TileStrides at = ukernel::TileStrides::of(w);
  // Tiles per body call: the body's, as many as the accumulators below hold.
  const std::int64_t span_tiles = std::max<std::int64_t>(
      1, std::min(body->tiles_per_call(), std::int64_t{kMaxRowTile} / rows_per_tile));
  const std::int64_t tiles = (n + rows_per_tile - 1) / rows_per_tile;

  pool.parallel_for_on(tiling.max_workers, groups * col_tiles, [&](std::int64_t task, int) {
    const std::int64_t group = task % groups;
    const std::int64_t col0 = (task / groups) * tile_n;
    const std::int64_t col1 = std::min<std::int64_t>(n, col0 + tile_n);
    const std::int64_t row0 = group * group_rows;
    const int rows = static_cast<int>(std::min<std::int64_t>(group_rows, m - row0));
    alignas(64) float acc[ukernel::kMaxGroupRows * kMaxRowTile];
    const std::int64_t t1 = std::min(tiles, (col1 + rows_per_tile - 1) / rows_per_tile);
    for (std::int64_t t = col0 / rows_per_tile; t < t1; t += span_tiles) {
      const std::int64_t count = std::min(span_tiles, t1 - t);
      const std::uint8_t* codes = w.codes.data() + t * at.code_bytes;
      const float* scale = w.scale.data() + t * at.floats;
      const float* beta = w.beta.data() + t * at.floats;
      if (span_tiles == 1) {
        body->run(group, rows, codes, scale, beta, acc);
      } else {
        body->run_tiles(group, rows, codes, scale, beta, count, at, acc);
      }
      const std::int64_t lo = std::max(col0, t * rows_per_tile);
      const std::int64_t hi = std::min(col1, (t + count) * rows_per_tile);
      store(ep, out, m, n, row0, rows, lo, hi - lo, a.scale.data() + row0,
            acc + (lo - t * rows_per_tile), count * rows_per_tile);
    }
  });
  detail::zero_c4_padding(ep, out, m, n);
}

}  // namespace k3k::driver
