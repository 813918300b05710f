// The IME2 instructions the kernels use, as inline functions on RVV register values.
//   real build:      one `vsetvli t0, zero, e8, m1` (the IME2 rule: LMUL 1, vl = VLMAX, vl*SEW = VLEN)
//                    followed by `.insn r 0x2b, funct3, funct7, vd, vs1, vs2` words from ime2_encoding.h;
//   emulation build: (K3_IME2_EMULATION) the operands are stored, ime2_model.h runs, C is reloaded.
// Both need VLEN = 1024 (vlenb 128): callers gate on it (k3k::ime2::usable()).
//
// Register binding: C is a vint32m2_t "+vr" operand, so the compiler gives it an even-aligned pair
// vd, vd+1 (MUL_C = 2) that it knows is written; A and B are vuint8m1_t "vr" inputs, live across the
// asm, so they never share a register with C (the IME2 no-overlap rule). LLVM treats inline asm as
// leaving vl/vtype unknown and re-issues vsetvli before the next intrinsic.
#pragma once

#include <riscv_vector.h>

#include <cstdint>

#include "ime2/ime2_encoding.h"
#if defined(K3_IME2_EMULATION)
#include "ime2/ime2_model.h"
#endif

namespace k3k::ime2 {

using encoding::ElemBits;
using encoding::Sign;

#if defined(K3_IME2_EMULATION)
namespace detail {
inline model::Operands operands_of(Sign s) {
  return {s == Sign::kSU || s == Sign::kSS, s == Sign::kUS || s == Sign::kSS};
}
inline vint32m2_t emulate(vint32m2_t c, vuint8m1_t a, vuint8m1_t b, ElemBits bits, Sign sign) {
  alignas(64) std::uint8_t ca[256], aa[128], ba[128];
  __riscv_vse32_v_i32m2(reinterpret_cast<std::int32_t*>(ca), c, 64);
  __riscv_vse8_v_u8m1(aa, a, 128);
  __riscv_vse8_v_u8m1(ba, b, 128);
  model::vmadot(ca, aa, ba, bits == ElemBits::kInt4 ? model::ElemBits::kInt4 : model::ElemBits::kInt8,
                operands_of(sign));
  return __riscv_vle32_v_i32m2(reinterpret_cast<const std::int32_t*>(ca), 64);
}
}  // namespace detail
#endif

// c += a * b^T with the tile of `Bits` (int8: 8x16x8, int4: 8x32x8) and operand signedness `S`.
template <ElemBits Bits, Sign S>
inline vint32m2_t vmadot(vint32m2_t c, vuint8m1_t a, vuint8m1_t b) {
#if defined(K3_IME2_EMULATION)
  return detail::emulate(c, a, b, Bits, S);
#else
  asm volatile(
      "vsetvli t0, zero, e8, m1, ta, ma\n\t"
      ".insn r 0x2b, %3, %4, %0, %1, %2"
      : "+vr"(c)
      : "vr"(a), "vr"(b), "i"(encoding::vmadot_funct3(S)), "i"(encoding::vmadot_funct7(Bits))
      : "t0");
  return c;
#endif
}

// One 64-element W4B64 block for an 8 x 8 output tile, int8 activations split into nibbles:
//   lo += A_lo[0] * B[0]^T + A_lo[1] * B[1]^T   (vmadotu  i4: unsigned low nibbles x unsigned codes)
//   hi += A_hi[0] * B[0]^T + A_hi[1] * B[1]^T   (vmadotsu i4: signed high nibbles x unsigned codes)
// so that sum_k a * q = 16 * hi + lo exactly. One vsetvli for the four instructions.
inline void w4a8_block(vint32m2_t& lo, vint32m2_t& hi, vuint8m1_t a_lo0, vuint8m1_t a_hi0, vuint8m1_t a_lo1,
                       vuint8m1_t a_hi1, vuint8m1_t b0, vuint8m1_t b1) {
#if defined(K3_IME2_EMULATION)
  lo = vmadot<ElemBits::kInt4, Sign::kUU>(lo, a_lo0, b0);
  hi = vmadot<ElemBits::kInt4, Sign::kSU>(hi, a_hi0, b0);
  lo = vmadot<ElemBits::kInt4, Sign::kUU>(lo, a_lo1, b1);
  hi = vmadot<ElemBits::kInt4, Sign::kSU>(hi, a_hi1, b1);
#else
  asm volatile(
      "vsetvli t0, zero, e8, m1, ta, ma\n\t"
      ".insn r 0x2b, %8, %10, %0, %2, %6\n\t"
      ".insn r 0x2b, %9, %10, %1, %3, %6\n\t"
      ".insn r 0x2b, %8, %10, %0, %4, %7\n\t"
      ".insn r 0x2b, %9, %10, %1, %5, %7"
      : "+vr"(lo), "+vr"(hi)
      : "vr"(a_lo0), "vr"(a_hi0), "vr"(a_lo1), "vr"(a_hi1), "vr"(b0), "vr"(b1),
        "i"(encoding::vmadot_funct3(Sign::kUU)), "i"(encoding::vmadot_funct3(Sign::kSU)),
        "i"(encoding::vmadot_funct7(ElemBits::kInt4))
      : "t0");
#endif
}

}  // namespace k3k::ime2
