// The IME2 instructions the kernels use, as inline functions on RVV register values.
//   real build:      one `vsetvli t0, zero, e8, m1` (the IME2 rule: LMUL 1, vl = VLMAX, vl*SEW =
//   VLEN)
//                    followed by `.insn r 0x2b, funct3, funct7, vd, vs1, vs2` words from
//                    ime2_encoding.h;
//   emulation build: (K3_IME2_EMULATION) the same asm, each IME2 word preceded by a call of the
//                    model's trampoline and its opcode changed from custom-1 (0x2B) to custom-0
//                    (0x0B, so no IME2 word is in the binary); the trampoline (ime2_emulate.cpp)
//                    reads the word at its return address, runs ime2_model.h on the saved register
//                    file, writes vd back and returns past the word. Register allocation and every
//                    other instruction are the real build's (the call clobbers only ra), which is
//                    what makes emulated instruction counts meaningful.
// Both need VLEN = 1024 (vlenb 128): callers gate on it (k3k::ime2::usable()).
//
// Register binding: C is a vint32m2_t "+vr" operand, so the compiler gives it an even-aligned pair
// vd, vd+1 (MUL_C = 2) that it knows is written; A and B are vuint8m1_t "vr" inputs, live across
// the asm, so they never share a register with C (the IME2 no-overlap rule). LLVM treats inline asm
// as leaving vl/vtype unknown and re-issues vsetvli before the next intrinsic.
#pragma once

#include <riscv_vector.h>

#include <cstddef>
#include <cstdint>

#include "ime2/ime2_encoding.h"

namespace k3k::ime2 {

using encoding::ElemBits;
using encoding::Sign;

// The instruction line prefix and the extra clobber of the emulation (see the top of this file).
#if defined(K3_IME2_EMULATION)
#define K3_IME2_INSN "call k3_ime2_emulate_insn\n\t.insn r 0x0b, "
#define K3_IME2_CLOBBER_RA , "ra"
#else
#define K3_IME2_INSN ".insn r 0x2b, "
#define K3_IME2_CLOBBER_RA
#endif

// c += a * b^T with the tile of `Bits` (int8: 8x16x8, int4: 8x32x8) and operand signedness `S`.
template <ElemBits Bits, Sign S>
inline vint32m2_t vmadot(vint32m2_t c, vuint8m1_t a, vuint8m1_t b) {
  asm volatile("vsetvli t0, zero, e8, m1, ta, ma\n\t" K3_IME2_INSN "%3, %4, %0, %1, %2"
               : "+vr"(c)
               : "vr"(a), "vr"(b), "i"(encoding::vmadot_funct3(S)),
                 "i"(encoding::vmadot_funct7(Bits))
               : "t0" K3_IME2_CLOBBER_RA);
  return c;
}

// The same instruction issued under vl = avl (e8, m1) instead of VLMAX. Only for the selftest's
// AMBIG-8 case (does the tile depend on vl?); the kernels always use vmadot above. The model
// ignores vl, as the v0.6 pseudocode does.
template <ElemBits Bits, Sign S>
inline vint32m2_t vmadot_at_vl(vint32m2_t c, vuint8m1_t a, vuint8m1_t b, std::size_t avl) {
  asm volatile("vsetvli t0, %3, e8, m1, ta, ma\n\t" K3_IME2_INSN "%4, %5, %0, %1, %2"
               : "+vr"(c)
               : "vr"(a), "vr"(b), "r"(avl), "i"(encoding::vmadot_funct3(S)),
                 "i"(encoding::vmadot_funct7(Bits))
               : "t0" K3_IME2_CLOBBER_RA);
  return c;
}

// Block-scale int4 `.hp` (MUL_C = 1): c (64 fp16 lanes, lane 8m+n) += fp16(A_m . B_n) * s[n],
// s[n] = fp16 lane 8*Imm3 + n of `scales`. The scale operand must sit in v0 or v1 and vd must not
// overlap them (AMBIG-14), so the asm copies `scales` into v0 itself and clobbers v0 and v1: the
// compiler then places none of c, a, b there. Encoding bit 25 = 0 selects v0.
template <Sign S, int Imm3>
inline vuint16m1_t vmadot_hp_i4(vuint16m1_t c, vuint8m1_t a, vuint8m1_t b, vuint16m1_t scales) {
  static_assert(Imm3 >= 0 && Imm3 < 8, "imm3 selects one of 8 groups of 8 scales");
  asm volatile(
      "vsetvli t0, zero, e8, m1, ta, ma\n\t"
      "vmv1r.v v0, %3\n\t" K3_IME2_INSN "%4, %5, %0, %1, %2"
      : "+vr"(c)
      : "vr"(a), "vr"(b), "vr"(scales), "i"(Imm3),
        "i"(encoding::vmadot_hp_funct7(ElemBits::kInt4, S, 0))
      : "t0", "v0", "v1" K3_IME2_CLOBBER_RA);
  return c;
}

// One 64-element block with fp16 block-scale accumulation (the `.hp` kernel): with B holding the
// SIGNED codes q - 8 and scales holding s in group Sub and 16*s in group 4 + Sub,
//   c += fp16(A_lo0.B0) * s + fp16(A_hi0.B0) * 16s + fp16(A_lo1.B1) * s + fp16(A_hi1.B1) * 16s
// i.e. c ~= s * sum_k x * (q - 8) in fp16 (vmadotus.hp: unsigned low nibbles x signed codes,
// vmadot.hp: signed high nibbles x signed codes). One vsetvli and one v0 copy for the four.
template <int Sub>
inline vuint16m1_t w4a8_block_hp(vuint16m1_t c, vuint8m1_t a_lo0, vuint8m1_t a_hi0,
                                 vuint8m1_t a_lo1, vuint8m1_t a_hi1, vuint8m1_t b0, vuint8m1_t b1,
                                 vuint16m1_t scales) {
  static_assert(Sub >= 0 && Sub < 4, "groups 0..3 hold s, 4..7 hold 16 s");
  asm volatile(
      "vsetvli t0, zero, e8, m1, ta, ma\n\t"
      "vmv1r.v v0, %7\n\t" K3_IME2_INSN "%8, %10, %0, %1, %5\n\t" K3_IME2_INSN
      "%9, %11, %0, %2, %5\n\t" K3_IME2_INSN "%8, %10, %0, %3, %6\n\t" K3_IME2_INSN
      "%9, %11, %0, %4, %6"
      : "+vr"(c)
      : "vr"(a_lo0), "vr"(a_hi0), "vr"(a_lo1), "vr"(a_hi1), "vr"(b0), "vr"(b1), "vr"(scales),
        "i"(Sub), "i"(4 + Sub), "i"(encoding::vmadot_hp_funct7(ElemBits::kInt4, Sign::kUS, 0)),
        "i"(encoding::vmadot_hp_funct7(ElemBits::kInt4, Sign::kSS, 0))
      : "t0", "v0", "v1" K3_IME2_CLOBBER_RA);
  return c;
}

// One 64-element W4B64 block for an 8 x 8 output tile, int8 activations split into nibbles:
//   lo += A_lo[0] * B[0]^T + A_lo[1] * B[1]^T   (vmadotu  i4: unsigned low nibbles x unsigned
//   codes) hi += A_hi[0] * B[0]^T + A_hi[1] * B[1]^T   (vmadotsu i4: signed high nibbles x unsigned
//   codes)
// so that sum_k a * q = 16 * hi + lo exactly. One vsetvli for the four instructions.
inline void w4a8_block(vint32m2_t& lo, vint32m2_t& hi, vuint8m1_t a_lo0, vuint8m1_t a_hi0,
                       vuint8m1_t a_lo1, vuint8m1_t a_hi1, vuint8m1_t b0, vuint8m1_t b1) {
  asm volatile("vsetvli t0, zero, e8, m1, ta, ma\n\t" K3_IME2_INSN
               "%8, %10, %0, %2, %6\n\t" K3_IME2_INSN "%9, %10, %1, %3, %6\n\t" K3_IME2_INSN
               "%8, %10, %0, %4, %7\n\t" K3_IME2_INSN "%9, %10, %1, %5, %7"
               : "+vr"(lo), "+vr"(hi)
               : "vr"(a_lo0), "vr"(a_hi0), "vr"(a_lo1), "vr"(a_hi1), "vr"(b0), "vr"(b1),
                 "i"(encoding::vmadot_funct3(Sign::kUU)), "i"(encoding::vmadot_funct3(Sign::kSU)),
                 "i"(encoding::vmadot_funct7(ElemBits::kInt4))
               : "t0" K3_IME2_CLOBBER_RA);
}

// One 64-element block of a 32-row weight tile for the decode row (linear_w4a8_decode.h): A images
// e = rows {lo, hi+8, ones} at 0/2/4, o = the same at rows 1/3/5 (per K-step), B = the unit's 8
// registers b[4*ks + slice]; slices 0, 1 accumulate into x and 2, 3 into y, all with vmadotu int4
// (unsigned activation halves x unsigned codes). 8 instructions and one vsetvli.
inline void w4a8_decode_block(vint32m2_t& x, vint32m2_t& y, vuint8m1_t e0, vuint8m1_t o0,
                              vuint8m1_t e1, vuint8m1_t o1, vuint8m1_t b0, vuint8m1_t b1,
                              vuint8m1_t b2, vuint8m1_t b3, vuint8m1_t b4, vuint8m1_t b5,
                              vuint8m1_t b6, vuint8m1_t b7) {
  asm volatile("vsetvli t0, zero, e8, m1, ta, ma\n\t" K3_IME2_INSN
               "%[f3], %[f7], %[x], %[e0], %[b0]\n\t" K3_IME2_INSN
               "%[f3], %[f7], %[x], %[o0], %[b1]\n\t" K3_IME2_INSN
               "%[f3], %[f7], %[y], %[e0], %[b2]\n\t" K3_IME2_INSN
               "%[f3], %[f7], %[y], %[o0], %[b3]\n\t" K3_IME2_INSN
               "%[f3], %[f7], %[x], %[e1], %[b4]\n\t" K3_IME2_INSN
               "%[f3], %[f7], %[x], %[o1], %[b5]\n\t" K3_IME2_INSN
               "%[f3], %[f7], %[y], %[e1], %[b6]\n\t" K3_IME2_INSN
               "%[f3], %[f7], %[y], %[o1], %[b7]"
               : [x] "+vr"(x), [y] "+vr"(y)
               : [e0] "vr"(e0), [o0] "vr"(o0), [e1] "vr"(e1), [o1] "vr"(o1), [b0] "vr"(b0),
                 [b1] "vr"(b1), [b2] "vr"(b2), [b3] "vr"(b3), [b4] "vr"(b4), [b5] "vr"(b5),
                 [b6] "vr"(b6), [b7] "vr"(b7), [f3] "i"(encoding::vmadot_funct3(Sign::kUU)),
                 [f7] "i"(encoding::vmadot_funct7(ElemBits::kInt4))
               : "t0" K3_IME2_CLOBBER_RA);
}

}  // namespace k3k::ime2
