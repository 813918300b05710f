// Decode Linear ("M1"), weights read from DRAM: one activation row; a task covers tile_n output
// columns, computed one weight tile (w.row_tile rows) at a time by the layer's tile body. The call
// is memory-bound (4.5 bits of weight, codes and fp16 pairs, per multiply-add): the activation row
// stays in L1 and the weights are read exactly once, in order.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/linear_epilogue.h"
#include "drivers/drivers.h"

namespace k3k::driver {

void linear_decode(const ukernel::LinearDecode& uk, const PackedActivations& a,
                   const W4B64Packed& w, const LinearEpilogue& ep, float* out, WorkerPool& pool,
                   const LinearTiling& tiling) {
  constexpr const char* who = "linear_decode_w4b64";
  detail::validate_linear_args(who, a, w, ep, out, tiling, uk.name, uk.reads(w));
  if (a.layout != ActivationLayout::kRowK256 || a.m != 1) {
    throw std::invalid_argument(std::string(who) +
                                ": activations must be one row in the K256 (decode) layout");
  }
  const ukernel::BodyPtr<ukernel::DecodeTileBody> body = uk.bind(a, w, {tiling.prefetch_bytes});
  const std::int64_t n = w.n, rows = w.row_tile;
  const std::int64_t tile_n = detail::whole_weight_tiles(tiling.tile_n, rows);
  const std::int64_t col_tiles = (n + tile_n - 1) / tile_n;
  const float sa = a.scale[0];

  const ukernel::TileStrides at = ukernel::TileStrides::of(w);
  const ukernel::StoreTileFn store = detail::store_tile_of(uk, ep, 1);
  const std::int64_t span_tiles = detail::kDecodeSpanRows / rows;  // tiles per run_tiles call
  const std::int64_t tiles = (n + rows - 1) / rows;
  pool.parallel_for_on(tiling.max_workers, col_tiles, [&](std::int64_t task, int) {
    const std::int64_t col0 = task * tile_n;
    const std::int64_t col1 = std::min<std::int64_t>(n, col0 + tile_n);
    alignas(64) float acc[detail::kDecodeSpanRows];
    const std::int64_t t1 = std::min(tiles, (col1 + rows - 1) / rows);
    for (std::int64_t t = col0 / rows; t < t1; t += span_tiles) {
      const std::int64_t count = std::min(span_tiles, t1 - t);
      body->run_tiles(w.codes.data() + t * at.code_bytes, w.pairs.data() + 2 * t * at.pairs, count,
                      at, acc);
      const std::int64_t lo = std::max(col0, t * rows);
      const std::int64_t hi = std::min(col1, (t + count) * rows);
      store(ep, out, 1, n, 0, 1, lo, hi - lo, &sa, acc + (lo - t * rows), 0);
    }
  });
  detail::zero_c4_padding(ep, out, 1, n);
  body->finish();
}

}  // namespace k3k::driver
