// Microkernel contract of the embedding lookup (driver: drivers/embedding.cpp).
#pragma once

#include <cstdint>

#include "k3k/w4b64.h"

namespace k3k::ukernel {

// Block b of table row `row` (kRowTile32): the row sits at lane row % 32 of every (j, row) byte
// pair of its row tile, so its 32 code bytes are kW4RowTile apart starting at `codes` (low nibble:
// k = 64b + j, high nibble: k = 64b + 32 + j).
struct EmbeddingBlock {
  float scale, beta;
  const std::uint8_t* codes;
};
inline EmbeddingBlock embedding_block(const W4B64Packed& table, std::int64_t row, std::int64_t b) {
  const std::int64_t block = row / kW4RowTile * table.blocks_per_row() + b;
  const auto at = static_cast<std::size_t>(block * kW4RowTile + row % kW4RowTile);
  return {table.scale[at], table.beta[at],
          table.codes.data() + block * 32 * kW4RowTile + row % kW4RowTile};
}

struct Embedding {
  const char* name;  // e.g. "embedding-w4b64-rowtile32-rvv"
  // dst[0..k) = s * (q - 8) + beta of table row `row` (kRowTile32 layout), two roundings each.
  void (*row)(const W4B64Packed& table, std::int64_t row, float* dst);
};

}  // namespace k3k::ukernel
