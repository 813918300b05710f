#include <stdexcept>
#include <string>

#include "generic/op_checks.h"
#include "k3k/embedding.h"

namespace k3k::generic {

void embedding_lookup_w4b64(const W4B64Packed& table, const std::int32_t* tokens, std::int64_t count,
                            float* out, WorkerPool& pool) {
  generic_detail::check_embedding("embedding_lookup_w4b64", table, tokens, count);
  const std::int64_t k = table.k, nb = table.blocks_per_row();
  // Row r lives in row tile r / 32 at lane r % 32 of every (j, row) byte pair (see W4B64Packed).
  pool.parallel_for(count, [&](std::int64_t t, int) {
    const std::int64_t row = tokens[t];
    const std::int64_t tile = row / kW4RowTile, lane = row % kW4RowTile;
    float* dst = out + t * k;
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::int64_t block = tile * nb + b;
      const float s = table.scale[static_cast<std::size_t>(block * kW4RowTile + lane)];
      const float beta = table.beta[static_cast<std::size_t>(block * kW4RowTile + lane)];
      const std::uint8_t* c = table.codes.data() + block * 32 * kW4RowTile + lane;
      float* d = dst + b * 64;
      for (int j = 0; j < 32; ++j) {
        const std::uint8_t byte = c[j * kW4RowTile];
        d[j] = s * static_cast<float>((byte & 0x0F) - 8) + beta;
        d[32 + j] = s * static_cast<float>((byte >> 4) - 8) + beta;
      }
    }
  });
}

}  // namespace k3k::generic
