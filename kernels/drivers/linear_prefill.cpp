// Prefill Linear: a task is (tile_n output columns) x (group of group_rows activation rows),
// ordered column-range major so a worker keeps the same weight tiles hot in L1/L2 while it walks
// groups (a pool task takes a run of them). Per weight tile (w.row_tile rows) the layer's body
// returns the block-reduced accumulators of the group's rows; the direct epilogue stores each
// output once. Each output's blocks are reduced by one task in ascending order, so results are
// bitwise identical for every worker count and tile_n.
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
  const ukernel::BodyPtr<ukernel::PrefillTileBody> body = uk.bind(a, w, pool);
  const std::int64_t m = a.m, n = w.n, rows_per_tile = w.row_tile;
  const int group_rows = uk.group_rows;
  const std::int64_t groups = (m + group_rows - 1) / group_rows;
  const std::int64_t tile_n = detail::whole_weight_tiles(tiling.tile_n, rows_per_tile);
  const std::int64_t col_tiles = (n + tile_n - 1) / tile_n;
  const ukernel::StoreTileFn store = detail::store_tile_of(uk, ep, m);
  const ukernel::TileStrides at = ukernel::TileStrides::of(w);
  // Tiles per body call: the body's, as many as the accumulators below hold.
  const std::int64_t span_tiles = std::max<std::int64_t>(
      1, std::min(body->tiles_per_call(), std::int64_t{kMaxRowTile} / rows_per_tile));
  const std::int64_t tiles = (n + rows_per_tile - 1) / rows_per_tile;

  // A pool task walks a run of consecutive groups of one column range (the weight tiles stay hot
  // and the column range's set-up is paid once per run): runs as long as leaves kRunsPerWorker of
  // them per worker, so the dynamic split still balances. Within a run, the body computes up to
  // kChunkRows rows of a span per call and the epilogue stores them with one call.
  constexpr std::int64_t kRunsPerWorker = 8;
  constexpr std::int64_t kChunkRows = 64;
  static_assert(kChunkRows % ukernel::kMaxGroupRows == 0 && kChunkRows % kPrefillRowsPerTask == 0);
  const std::int64_t workers =
      tiling.max_workers > 0 ? std::min(tiling.max_workers, pool.size()) : pool.size();
  const std::int64_t runs_per_col =
      std::clamp<std::int64_t>((kRunsPerWorker * workers + col_tiles - 1) / col_tiles, 1, groups);
  const std::int64_t run_groups = (groups + runs_per_col - 1) / runs_per_col;
  const std::int64_t chunk_groups = kChunkRows / group_rows;

  // The loop below runs once per chunk of groups and span: it works on copies (locals stay in
  // registers across the body and epilogue calls; references into the caller's frame are
  // reloaded).
  const ukernel::PrefillTileBody* const tile_body = body.get();
  const std::uint8_t* const codes0 = w.codes.data();
  const fp16_t* const pairs0 = w.pairs.data();
  const float* const row_scale = a.scale.data();
  pool.parallel_for_on(
      tiling.max_workers, col_tiles * runs_per_col, [=, &ep](std::int64_t job, int) {
        const std::int64_t col0 = (job / runs_per_col) * tile_n;
        const std::int64_t col1 = std::min<std::int64_t>(n, col0 + tile_n);
        const std::int64_t g0 = (job % runs_per_col) * run_groups;
        const std::int64_t g1 = std::min(groups, g0 + run_groups);
        const std::int64_t t0 = col0 / rows_per_tile;
        const std::int64_t t1 = std::min(tiles, (col1 + rows_per_tile - 1) / rows_per_tile);
        alignas(64) float acc[kChunkRows * kMaxRowTile];
        for (std::int64_t group = g0; group < g1; group += chunk_groups) {
          const std::int64_t chunk = std::min(chunk_groups, g1 - group);
          const std::int64_t row0 = group * group_rows;
          const int rows = static_cast<int>(std::min<std::int64_t>(chunk * group_rows, m - row0));
          for (std::int64_t t = t0; t < t1; t += span_tiles) {
            const std::int64_t count = std::min(span_tiles, t1 - t);
            tile_body->run_groups(group, chunk, group_rows, m, codes0 + t * at.code_bytes,
                                  pairs0 + 2 * t * at.pairs, count, at, acc);
            const std::int64_t lo = std::max(col0, t * rows_per_tile);
            const std::int64_t hi = std::min(col1, (t + count) * rows_per_tile);
            store(ep, out, m, n, row0, rows, lo, hi - lo, row_scale + row0,
                  acc + (lo - t * rows_per_tile), count * rows_per_tile);
          }
        }
      });
  detail::zero_c4_padding(ep, out, m, n);
}

}  // namespace k3k::driver
