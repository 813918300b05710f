// Microkernel contract of quantise + pack (driver: drivers/quantize_pack.cpp).
#pragma once

#include <cstdint>

#include "common/quantize_contract.h"

namespace k3k::ukernel {

// Quantises one row of k floats (k a positive multiple of 64) under the numerics contract of
// k3k/quantize.h: writes sa, the 64 codes of block b at codes + b * block_stride, and their sum
// at block_sums[b]. Every layer produces the same bits (the contract fixes the float operations).
using QuantizeRowFn = void (*)(const float* src, std::int64_t k, std::int8_t* codes,
                               std::int64_t block_stride, std::int32_t* block_sums, float* sa);

// The row loop every layer shares: the contract's row scale, then one block at a time. A layer
// instantiates it in its own translation unit with its absmax and block functions (inlined there).
template <float (*RowAbsmax)(const float*, std::int64_t),
          std::int32_t (*Block)(const float*, detail::RowQuant, std::int8_t*)>
inline void quantize_row_with(const float* src, std::int64_t k, std::int8_t* codes,
                              std::int64_t block_stride, std::int32_t* block_sums, float* sa) {
  const detail::RowQuant rq = detail::row_scales(RowAbsmax(src, k), *sa);
  for (std::int64_t b = 0; b < k / 64; ++b) {
    block_sums[b] = Block(src + b * 64, rq, codes + b * block_stride);
  }
}

struct Quantize {
  const char* name;  // <op>-<layout>-<layer>, e.g. "quantize_pack-f32-i8b64-rvv"
  QuantizeRowFn row;
};

}  // namespace k3k::ukernel
