// IEEE 754 binary16 <-> binary32 conversion in portable integer code (round to nearest even),
// bit-exact on every target. The RVV layer's vfncvt/vfwcvt produce the same bits, which is
// what lets tests compare fp16 KV caches across layers exactly.
#pragma once

#include <bit>
#include <cstdint>

namespace k3k {

using fp16_t = std::uint16_t;  // raw binary16 bits

inline float fp16_to_fp32(fp16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  std::uint32_t bits;
  if (exp == 0x1F) {  // inf / nan
    bits = sign | 0x7F800000u | (mant << 13);
  } else if (exp != 0) {  // normal
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {  // zero
    bits = sign;
  } else {  // subnormal: normalise
    exp = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

inline fp16_t fp32_to_fp16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or nan (keep nan quiet and non-zero)
    return static_cast<fp16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477FF000u) return static_cast<fp16_t>(sign | 0x7C00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    if (abs < 0x33000000u) return static_cast<fp16_t>(sign);  // < 2^-25 rounds to zero
    const std::uint32_t e = abs >> 23;
    const std::uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
    const std::uint32_t shift = 126 - e;  // brings the value to units of 2^-24
    std::uint32_t half = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1);
    const std::uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<fp16_t>(sign | half);
  }
  std::uint32_t half = ((abs >> 13) - (112u << 10));
  const std::uint32_t rem = abs & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<fp16_t>(sign | half);
}

// A finite half times 2^-112, as a float, by integer operations only: the half sign-extended to 32
// bits and shifted left by 13 puts its exponent and mantissa in the float's bits 27..13 and its
// sign in bits 31..28; clearing bits 30..28 leaves a float whose exponent field is the half's
// (2^(e-15) becomes 2^(e-127)). Exact for every finite half: normal halves become normal floats,
// subnormal ones float subnormals (m 2^-24 becomes m 2^-136), zero stays zero; inf and NaN do not
// (the packed W4B64 pairs, which these convert, are finite by construction). Vector kernels do the
// same with one widening multiply by 2^13 and one and.
inline constexpr std::int32_t kFp16ScaledShift = 8192;  // 2^13
inline constexpr std::uint32_t kFp16ScaledMask = 0x8FFFFFFFu;
inline float fp16_scaled_2m112(fp16_t h) {
  const auto widened = static_cast<std::int32_t>(static_cast<std::int16_t>(h)) * kFp16ScaledShift;
  return std::bit_cast<float>(static_cast<std::uint32_t>(widened) & kFp16ScaledMask);
}
// The finite half's value (the scaled one times 2^112, exact), branch-free.
inline float fp16_finite_to_fp32(fp16_t h) {
  return fp16_scaled_2m112(h) * 0x1p112f;
}

}  // namespace k3k
