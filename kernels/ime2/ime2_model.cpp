#include "ime2/ime2_model.h"

#include <cstring>
#include <stdexcept>

namespace k3k::ime2::model {

int element(const std::uint8_t* reg, int e, ElemBits bits, bool is_signed) {
  int v = 0;
  int width = 8;
  if (bits == ElemBits::kInt8) {
    v = reg[e];
  } else {
    v = (reg[e >> 1] >> (4 * (e & 1))) & 0x0F;  // element 2i: low nibble of byte i
    width = 4;
  }
  if (is_signed && v >= (1 << (width - 1))) v -= 1 << width;
  return v;
}

void vmadot(std::uint8_t* c, const std::uint8_t* a, const std::uint8_t* b, ElemBits bits, Operands sign,
            int slide) {
  if (slide < 0 || slide > 3 || (slide > 0 && bits != ElemBits::kInt8)) {
    throw std::invalid_argument("ime2::model::vmadot: slides 1..3 exist for int8 only");
  }
  const int k_depth = bits == ElemBits::kInt8 ? 16 : 32;
  for (int m = 0; m < kTileM; ++m) {
    for (int n = 0; n < kTileN; ++n) {
      const int p = kTileN * m + n;
      std::uint32_t lane;
      std::memcpy(&lane, c + 4 * p, 4);  // little-endian host and target
      for (int k = 0; k < k_depth; ++k) {
        const int prod = element(a, (m + slide) * k_depth + k, bits, sign.a_signed) *
                         element(b, n * k_depth + k, bits, sign.b_signed);
        lane += static_cast<std::uint32_t>(prod);  // two's-complement wrap, modulo 2^32
      }
      std::memcpy(c + 4 * p, &lane, 4);
    }
  }
}

}  // namespace k3k::ime2::model
