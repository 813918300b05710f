// Decode Linear, "M1" kernel: one activation row, tasks of tile_n output rows of W. Each task
// streams its weight rows once (the whole call is memory-bound: 4.5 bits of weight per MAC);
// the activation row (K bytes) stays in L1. The 64-block is consumed as its two 32-element
// halves, matching the packed layout (low nibbles = first half, high nibbles = second half).
#include <algorithm>
#include <stdexcept>

#include "generic/linear_epilogue.h"

namespace k3k::generic {

void linear_decode_w4b64(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep,
                         float* out, WorkerPool& pool, const LinearTiling& tiling) {
  validate_linear_args("linear_decode_w4b64", a, w, ep, out, tiling);
  if (a.layout != ActivationLayout::kRowK256 || a.m != 1) {
    throw std::invalid_argument("linear_decode_w4b64: activations must be one row in the K256 (decode) layout");
  }
  const std::int64_t n = w.n, nb = w.blocks_per_row();
  const std::int64_t col_tiles = (n + tiling.tile_n - 1) / tiling.tile_n;
  const std::int8_t* act = a.codes.data();
  const std::int32_t* sums = a.block_sum.data();
  const float sa = a.scale[0];

  pool.parallel_for(col_tiles, [&](std::int64_t task, int) {
    const std::int64_t col0 = task * tiling.tile_n;
    const std::int64_t col1 = std::min<std::int64_t>(n, col0 + tiling.tile_n);
    for (std::int64_t col = col0; col < col1; ++col) {
      const std::uint8_t* codes = w.codes.data() + col * nb * 32;
      const float* scale = w.scale.data() + col * nb;
      const float* beta = w.beta.data() + col * nb;
      float acc = 0.0f;
      for (std::int64_t b = 0; b < nb; ++b) {
        const std::uint8_t* c = codes + b * 32;
        const std::int8_t* x = act + b * 64;
        std::int32_t dot = 0;  // sum qa * q over the pair of halves, exact in int32
        for (int j = 0; j < 32; ++j) {
          dot += static_cast<std::int16_t>(x[j]) * static_cast<std::int16_t>(c[j] & 0x0F) +
                 static_cast<std::int16_t>(x[32 + j]) * static_cast<std::int16_t>(c[j] >> 4);
        }
        const std::int32_t d = dot - 8 * sums[b];
        acc += scale[b] * static_cast<float>(d) + beta[b] * static_cast<float>(sums[b]);
      }
      store_linear_output(ep, out, 1, n, 0, col, sa, acc);
    }
  });
  zero_c4_padding(ep, out, 1, n);
}

}  // namespace k3k::generic
