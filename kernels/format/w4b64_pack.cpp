#include "k3k/w4b64.h"

namespace k3k {

W4B64Packed pack_w4b64_generic(const W4B64Storage& storage) {
  W4B64Packed p;
  p.n = storage.n;
  p.k = storage.k;
  const std::int64_t nb = storage.blocks_per_row();
  p.codes = AlignedBuffer<std::uint8_t>(static_cast<std::size_t>(p.n * nb * 32));
  p.scale = AlignedBuffer<float>(static_cast<std::size_t>(p.n * nb));
  p.beta = AlignedBuffer<float>(static_cast<std::size_t>(p.n * nb));
  for (std::int64_t row = 0; row < p.n; ++row) {
    for (std::int64_t b = 0; b < nb; ++b) {
      std::uint8_t* dst = p.codes.data() + (row * nb + b) * 32;
      const std::int64_t k0 = b * kW4BlockK;
      for (int j = 0; j < 32; ++j) {
        const std::uint8_t lo = storage.code(row, k0 + j);
        const std::uint8_t hi = storage.code(row, k0 + 32 + j);
        dst[j] = static_cast<std::uint8_t>(lo | (hi << 4));
      }
      p.scale[static_cast<std::size_t>(row * nb + b)] = storage.scale(row, b);
      p.beta[static_cast<std::size_t>(row * nb + b)] = storage.beta(row, b);
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
