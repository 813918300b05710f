// Generic embedding row: a block's 32 code bytes of the row through embedding_block (any packed
// layout); dequantised as s * (q - 8) + beta.
#include "generic/microkernels.h"

namespace k3k::generic {

void embedding_row(const W4B64Packed& table, std::int64_t row, float* dst) {
  for (std::int64_t b = 0; b < table.blocks_per_row(); ++b) {
    const ukernel::EmbeddingBlock e = ukernel::embedding_block(table, row, b);
    float* d = dst + b * 64;
    for (int j = 0; j < 32; ++j) {
      const std::uint8_t byte = e.codes[(j % 16) * e.j_stride + (j / 16) * e.half_offset] ^ e.flip;
      d[j] = e.scale * static_cast<float>((byte & 0x0F) - 8) + e.beta;
      d[32 + j] = e.scale * static_cast<float>((byte >> 4) - 8) + e.beta;
    }
  }
}

}  // namespace k3k::generic
