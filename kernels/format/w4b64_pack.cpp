#include "k3k/w4b64.h"

namespace k3k {

W4B64Packed pack_w4b64_generic(const W4B64Storage& storage) {
  W4B64Packed p;
  p.n = storage.n;
  p.k = storage.k;
  const std::int64_t nb = storage.blocks_per_row();
  const std::int64_t tiles = p.row_tiles();
  p.codes = AlignedBuffer<std::uint8_t>(static_cast<std::size_t>(tiles * nb * 32 * kW4RowTile));
  p.scale = AlignedBuffer<float>(static_cast<std::size_t>(tiles * nb * kW4RowTile));
  p.beta = AlignedBuffer<float>(static_cast<std::size_t>(tiles * nb * kW4RowTile));
  for (std::int64_t t = 0; t < tiles; ++t) {
    for (std::int64_t b = 0; b < nb; ++b) {
      std::uint8_t* dst = p.codes.data() + (t * nb + b) * 32 * kW4RowTile;
      float* scale = p.scale.data() + (t * nb + b) * kW4RowTile;
      float* beta = p.beta.data() + (t * nb + b) * kW4RowTile;
      for (int r = 0; r < kW4RowTile; ++r) {
        const std::int64_t row = t * kW4RowTile + r;
        const std::int64_t k0 = b * kW4BlockK;
        for (int j = 0; j < 32; ++j) {
          // Padding rows hold code 8 in both nibbles: (q - 8) = 0.
          const std::uint8_t lo = row < p.n ? storage.code(row, k0 + j) : 8;
          const std::uint8_t hi = row < p.n ? storage.code(row, k0 + 32 + j) : 8;
          dst[j * kW4RowTile + r] = static_cast<std::uint8_t>(lo | (hi << 4));
        }
        scale[r] = row < p.n ? storage.scale(row, b) : 0.0f;
        beta[r] = row < p.n ? storage.beta(row, b) : 0.0f;
      }
    }
  }
  return p;
}

void dequantize_w4b64_row(const W4B64Storage& storage, std::int64_t row, double* out) {
  const std::int64_t nb = storage.blocks_per_row();
  for (std::int64_t b = 0; b < nb; ++b) {
    const double s = storage.scale(row, b);
    const double beta = storage.beta(row, b);
    for (int j = 0; j < kW4BlockK; ++j) {
      const std::int64_t col = b * kW4BlockK + j;
      out[col] = s * (static_cast<double>(storage.code(row, col)) - 8.0) + beta;
    }
  }
}

}  // namespace k3k
