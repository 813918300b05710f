// Microkernel contract of the embedding lookup (driver: drivers/embedding.cpp). A tied embedding is
// the lm_head's matrix, packed for the layer that runs the lm_head, so a layer's lookup reads that
// layer's packing too: a row's 32 code bytes of a block are located by an EmbeddingBlock.
#pragma once

#include <cstddef>
#include <cstdint>

#include "k3k/w4b64.h"

namespace k3k::ukernel {

// Block b of one table row: its code byte j (0..31; low nibble: k = 64b + j, high nibble:
// k = 64b + 32 + j, as in kRowTile32) is codes[(j % 16) * j_stride + (j / 16) * half_offset] ^
// flip, and its pair is (beta, scale).
struct EmbeddingBlock {
  float scale, beta;
  const std::uint8_t* codes;
  std::ptrdiff_t j_stride, half_offset;
  std::uint8_t flip;
};

// The block in the layouts of w4b64.h with R rows per tile: kRowTile32 (R = 32) and kSignedRows,
// whose row is lane row % R of its tile's (j, row) bytes (stride R, K-step halves 16 R apart; the
// kSignedRows codes stored XOR 0x88). The pair is converted exactly.
inline EmbeddingBlock embedding_block(const W4B64Packed& table, std::int64_t row, std::int64_t b) {
  const std::int64_t rows = table.row_tile, lane = row % rows;
  const std::int64_t unit = row / rows * table.blocks_per_row() + b;
  const std::int64_t at = unit * rows + lane;
  return {packed_scale(table.pairs.data(), at),
          packed_beta(table.pairs.data(), at),
          table.codes.data() + unit * 32 * rows + lane,
          rows,
          16 * rows,
          static_cast<std::uint8_t>(table.layout == W4B64Layout::kSignedRows ? 0x88 : 0)};
}
inline bool reads_rows_layouts(const W4B64Packed& w) {
  return w.layout == W4B64Layout::kRowTile32 || w.layout == W4B64Layout::kSignedRows;
}

struct Embedding {
  const char* name;  // e.g. "embedding-w4b64-rvv"
  // Whether the layer's row function reads tables packed like `w`.
  bool (*reads)(const W4B64Packed& w);
  // dst[0..k) = s * (q - 8) + beta of table row `row`, two roundings each.
  void (*row)(const W4B64Packed& table, std::int64_t row, float* dst);
};

}  // namespace k3k::ukernel
