// Integer core of the generic W4B64 kernels: for one 64-block of a 32-row weight tile and R
// activation rows, D[r][row] = sum_k qa[r][k] * (q[row][k] - 8), exact.
//
// Why 16-bit lanes are exact: |qa| <= 127 and |q - 8| <= 8, so one product is at most 1016 in
// magnitude and a half-block (32 products) at most 32512 < 2^15. Each half is summed in int16,
// the two halves are added in int32.
#pragma once

#include <cstdint>

#include "k3k/w4b64.h"

namespace k3k::generic {

template <int R>
inline void tile_block_dot(const std::uint8_t* codes /*[32 j][32 rows]*/, const std::int8_t* const* act /*R rows, 64 each*/,
                           std::int32_t (*d)[kW4RowTile] /*[R][32]*/) {
  std::int16_t lo[R][kW4RowTile] = {};
  std::int16_t hi[R][kW4RowTile] = {};
  for (int j = 0; j < 32; ++j) {
    const std::uint8_t* c = codes + j * kW4RowTile;
    std::int16_t wl[kW4RowTile], wh[kW4RowTile];
    for (int i = 0; i < kW4RowTile; ++i) {
      wl[i] = static_cast<std::int16_t>((c[i] & 0x0F) - 8);
      wh[i] = static_cast<std::int16_t>((c[i] >> 4) - 8);
    }
    for (int r = 0; r < R; ++r) {
      const std::int16_t xl = act[r][j], xh = act[r][32 + j];
      for (int i = 0; i < kW4RowTile; ++i) {
        lo[r][i] = static_cast<std::int16_t>(lo[r][i] + xl * wl[i]);
        hi[r][i] = static_cast<std::int16_t>(hi[r][i] + xh * wh[i]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < kW4RowTile; ++i) d[r][i] = static_cast<std::int32_t>(lo[r][i]) + hi[r][i];
}

}  // namespace k3k::generic
