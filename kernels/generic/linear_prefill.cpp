// Prefill Linear, "M4" kernel: a task is (tile of tile_n output columns) x (group of 4 rows).
// Each weight block is unpacked once and reused by the 4 rows; tasks are ordered column-tile
// major so a worker keeps the same B tile hot in L1/L2 while it walks row groups.
#include <algorithm>
#include <stdexcept>

#include "generic/linear_epilogue.h"

namespace k3k::generic {

namespace {
constexpr int kRows = kPrefillRowsPerTask;

// Codes of one packed block (32 bytes) -> 64 values in natural K order.
inline void unpack_block(const std::uint8_t* src, std::int8_t* dst) {
  for (int j = 0; j < 32; ++j) {
    dst[j] = static_cast<std::int8_t>(src[j] & 0x0F);
    dst[32 + j] = static_cast<std::int8_t>(src[j] >> 4);
  }
}

// sum_j a[j] * w[j] with w the unsigned codes (0..15): at most 64*127*15, exact in int32.
inline std::int32_t dot64(const std::int8_t* a, const std::int8_t* w) {
  std::int32_t s = 0;
  for (int j = 0; j < 64; ++j) s += static_cast<std::int16_t>(a[j]) * static_cast<std::int16_t>(w[j]);
  return s;
}
}  // namespace

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
    const std::int8_t* a_group = a.codes.data() + group * nb * kRows * 64;
    const std::int32_t* sums = a.block_sum.data() + row0 * nb;
    alignas(64) std::int8_t wq[64];
    for (std::int64_t col = col0; col < col1; ++col) {
      const std::uint8_t* codes = w.codes.data() + col * nb * 32;
      const float* scale = w.scale.data() + col * nb;
      const float* beta = w.beta.data() + col * nb;
      float acc[kRows] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (std::int64_t b = 0; b < nb; ++b) {
        unpack_block(codes + b * 32, wq);
        const std::int8_t* ab = a_group + b * kRows * 64;
        for (int r = 0; r < kRows; ++r) {
          // Padded rows of the last group are zero codes: computing them keeps the loop uniform.
          const std::int32_t s_rb = r < rows ? sums[r * nb + b] : 0;
          const std::int32_t d = dot64(ab + r * 64, wq) - 8 * s_rb;  // D = sum qa*(q-8), exact
          acc[r] += scale[b] * static_cast<float>(d) + beta[b] * static_cast<float>(s_rb);
        }
      }
      for (int r = 0; r < rows; ++r) {
        store_linear_output(ep, out, m, n, row0 + r, col, a.scale[static_cast<std::size_t>(row0 + r)], acc[r]);
      }
    }
  });
  zero_c4_padding(ep, out, m, n);
}

}  // namespace k3k::generic
