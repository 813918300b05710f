// Generic decode tile: one activation row against one 32-row weight tile, block by block, with the
// exact integer core of w4b64_tile_dot.h; the fp16 pairs are converted exactly (branch-free).
#include "generic/microkernels.h"
#include "generic/w4b64_tile_dot.h"

namespace k3k::generic {

void linear_decode_row_tile(const std::uint8_t* codes, const fp16_t* pairs, const std::int8_t* x,
                            const std::int32_t* sums, std::int64_t nb, float* acc) {
  for (int i = 0; i < kW4RowTile; ++i) acc[i] = 0.0f;
  std::int32_t d[1][kW4RowTile];
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::int8_t* xb = x + b * 64;
    tile_block_dot<1>(codes + b * 32 * kW4RowTile, &xb, d);
    const float s_b = static_cast<float>(sums[b]);
    const fp16_t* pb = pairs + 2 * b * kW4RowTile;
    for (int i = 0; i < kW4RowTile; ++i)
      acc[i] += packed_scale(pb, i) * static_cast<float>(d[0][i]) + packed_beta(pb, i) * s_b;
  }
}

}  // namespace k3k::generic
