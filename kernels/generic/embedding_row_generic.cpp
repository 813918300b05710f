// Generic embedding row: the row's codes sit at lane row % 32 of every (j, row) byte pair of its
// row tile (see W4B64Packed); dequantised as s * (q - 8) + beta.
#include "generic/microkernels.h"

namespace k3k::generic {

void embedding_row(const W4B64Packed& table, std::int64_t row, float* dst) {
  for (std::int64_t b = 0; b < table.blocks_per_row(); ++b) {
    const auto [s, beta, c] = ukernel::embedding_block(table, row, b);
    float* d = dst + b * 64;
    for (int j = 0; j < 32; ++j) {
      const std::uint8_t byte = c[j * kW4RowTile];
      d[j] = s * static_cast<float>((byte & 0x0F) - 8) + beta;
      d[32 + j] = s * static_cast<float>((byte >> 4) - 8) + beta;
    }
  }
}

}  // namespace k3k::generic
