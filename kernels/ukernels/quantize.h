// Microkernel contract of quantise + pack (driver: drivers/quantize_pack.cpp).
#pragma once

#include <cstdint>

namespace k3k::ukernel {

// Quantises one row of k floats (k a positive multiple of 64) under the numerics contract of
// k3k/quantize.h: writes sa, the 64 codes of block b at codes + b * block_stride, and their sum
// at block_sums[b]. Every layer produces the same bits (the contract fixes the float operations).
using QuantizeRowFn = void (*)(const float* src, std::int64_t k, std::int8_t* codes,
                               std::int64_t block_stride, std::int32_t* block_sums, float* sa);

struct Quantize {
  const char* name;  // <op>-<layout>-<layer>, e.g. "quantize_pack-f32-i8b64-rvv"
  QuantizeRowFn row;
};

}  // namespace k3k::ukernel
