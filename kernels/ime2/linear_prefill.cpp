// IME2 prefill Linear: tasks are (tile_n output columns) x (8 activation rows = two M4 groups,
// the IME2 tile M), ordered column-range major like the other layers. The A images of all rows
// are built once per call (in parallel), so each task only streams weight units through vmadot.
#include <algorithm>
#include <stdexcept>

#include "generic/linear_epilogue.h"
#include "ime2/linear_w4a8.h"
#include "ime2/w4b64_ime2_layout.h"
#include "k3k/ime2.h"

namespace k3k::ime2 {

void linear_prefill_w4b64(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep,
                          float* out, WorkerPool& pool, const LinearTiling& tiling) {
  detail::validate("ime2::linear_prefill_w4b64", a, w, ep, out, tiling);
  if (a.layout != ActivationLayout::kRowsM4) {
    throw std::invalid_argument("ime2::linear_prefill_w4b64: activations must use the M4 (prefill) layout");
  }
  const AlignedBuffer<std::uint8_t> images = detail::make_images_prefill(a, pool);
  const std::int64_t m = a.m, n = w.n, nb = w.blocks_per_row();
  const std::int64_t groups = (m + kGroupRows - 1) / kGroupRows;
  const std::int64_t col_tiles = (n + tiling.tile_n - 1) / tiling.tile_n;
  pool.parallel_for(groups * col_tiles, [&](std::int64_t task, int) {
    const std::int64_t group = task % groups;
    const std::int64_t col0 = (task / groups) * tiling.tile_n;
    const std::int64_t col1 = std::min<std::int64_t>(n, col0 + tiling.tile_n);
    const std::int64_t row0 = group * kGroupRows;
    const int rows = static_cast<int>(std::min<std::int64_t>(kGroupRows, m - row0));
    detail::group_columns(a, images.data() + group * nb * kUnitBytes, w, ep, out, row0, rows, col0, col1);
  });
  generic::zero_c4_padding(ep, out, m, n);
}

}  // namespace k3k::ime2
