// Embedding lookup of a kIme2 table (a tied embedding packed for the IME2 lm_head, so one copy of
// the matrix serves both): per block, the row's code bytes sit in two runs of 16 (one per K-step)
// of the unit's B registers (w4b64_ime2_layout.h), read by the RVV layer's block dequantisation;
// other layouts go to the RVV lookup.
#include "ime2/microkernels.h"
#include "ime2/w4b64_ime2_layout.h"
#include "rvv/microkernels.h"

namespace k3k::ime2 {

namespace {

// Byte 16n + jj of register 4 ks + sub holds kRowTile32 byte (j = 16 ks + jj, row 8 sub + n).
ukernel::EmbeddingBlock ime2_block(const W4B64Packed& table, std::int64_t row, std::int64_t b) {
  const std::int64_t lane = row % kW4RowTile;
  const std::int64_t unit = row / kW4RowTile * table.blocks_per_row() + b;
  const std::int64_t at = unit * kW4RowTile + lane;
  return {packed_scale(table.pairs.data(), at),
          packed_beta(table.pairs.data(), at),
          table.codes.data() + unit * kUnitBytes + (lane / kGroupRows) * kRegBytes +
              16 * (lane % kGroupRows),
          1,
          kHalfUnitBytes,
          0};
}

}  // namespace

bool embedding_reads(const W4B64Packed& w) {
  return w.layout == W4B64Layout::kIme2 || ukernel::reads_rows_layouts(w);
}

void embedding_row(const W4B64Packed& table, std::int64_t row, float* dst) {
  if (table.layout != W4B64Layout::kIme2) {
    rvv::embedding_row(table, row, dst);
    return;
  }
  for (std::int64_t b = 0; b < table.blocks_per_row(); ++b)
    rvv::embedding_block_row(ime2_block(table, row, b), dst + b * 64);
}

}  // namespace k3k::ime2
