// Generic prefill tile ("M4"): each 32-row weight tile block is unpacked once and reused by the
// four rows of an M4 group.
#include "generic/microkernels.h"
#include "generic/w4b64_tile_dot.h"

namespace k3k::generic {

namespace {

// Accumulates in a local array (kept in registers / L1 by the compiler), copied out once.
void prefill_m4_tile(const ukernel::PrefillTileArgs& t, float* out) {
  float acc[kPrefillRowsPerTask][kW4RowTile] = {};
  std::int32_t d[kPrefillRowsPerTask][kW4RowTile];
  std::int32_t sums[kPrefillRowsPerTask][1] = {};
  for (std::int64_t b = 0; b < t.nb; ++b) {
    // The M4 pack keeps the 4 rows of a block contiguous (padded rows are zero codes).
    const std::int8_t* base = t.x + b * kPrefillRowsPerTask * 64;
    const std::int8_t* x[kPrefillRowsPerTask] = {base, base + 64, base + 128, base + 192};
    tile_block_dot<kPrefillRowsPerTask>(t.codes + b * 32 * kW4RowTile, x, d);
    float sc[kW4RowTile], be[kW4RowTile];  // the block's pairs, converted once for the 4 rows
    for (int i = 0; i < kW4RowTile; ++i) {
      sc[i] = packed_scale(t.pairs, b * kW4RowTile + i);
      be[i] = packed_beta(t.pairs, b * kW4RowTile + i);
    }
    for (int r = 0; r < kPrefillRowsPerTask; ++r) {
      sums[r][0] = r < t.rows ? t.sums[r * t.nb + b] : 0;
      const float s_rb = static_cast<float>(sums[r][0]);
      for (int i = 0; i < kW4RowTile; ++i)
        acc[r][i] += sc[i] * static_cast<float>(d[r][i]) + be[i] * s_rb;
    }
  }
  for (int r = 0; r < t.rows; ++r)
    for (int i = 0; i < kW4RowTile; ++i) out[r * kW4RowTile + i] = acc[r][i];
}

}  // namespace

ukernel::BodyPtr<ukernel::PrefillTileBody> bind_linear_prefill_m4(const PackedActivations& a,
                                                                  const W4B64Packed& w,
                                                                  WorkerPool&) {
  return ukernel::bind_prefill_tile<prefill_m4_tile>(a, w);
}

}  // namespace k3k::generic
