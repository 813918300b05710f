// IME2 instruction words (custom-1 opcode 0x2B, R-type fields). The single source of the bit
// patterns the IME2 layer emits: the inline-asm wrappers take funct3/funct7 from here, and the
// static_asserts below pin the encoder to the worked examples listed in kernels/ime2/README.md.
//   word = funct7 << 25 | rs2 << 20 | rs1 << 15 | funct3 << 12 | rd << 7 | 0x2B
//   funct7 = bit31 (1) | DT [30:29] (10 = int4, 11 = int8) | sub-op [28:26] | bit25
#pragma once

#include <cstdint>

namespace k3k::ime2::encoding {

inline constexpr std::uint32_t kOpcodeCustom1 = 0x2B;

enum class ElemBits { kInt4, kInt8 };
// Signedness of the (A = vs1, B = vs2) operands; C is always signed int32.
enum class Sign { kUU, kUS, kSU, kSS };

// Base integer matmul vmadot{u,us,su,} (C += A * B^T, int32 accumulators in vd, vd+1).
constexpr std::uint32_t vmadot_funct7(ElemBits bits) { return bits == ElemBits::kInt4 ? 0x61u : 0x71u; }
constexpr std::uint32_t vmadot_funct3(Sign sign) {
  switch (sign) {
    case Sign::kUU: return 0;
    case Sign::kUS: return 1;
    case Sign::kSU: return 2;
    case Sign::kSS: return 3;
  }
  return 0;
}
// Sliding-window int8 variants vmadot1/2/3: funct7 0x73, funct3 = {slide[0], sign[1:0]},
// slide[1] rides in the low bit of the rs1 field (vs1 is even).
constexpr std::uint32_t vmadot_slide_funct7() { return 0x73u; }
constexpr std::uint32_t vmadot_slide_code(int slide /*1..3*/) { return static_cast<std::uint32_t>(slide - 1); }

// Block-scale (.hp) variants: sub-op order is NOT the base order (u=011, ss=100, su=101, us=110);
// bit25 selects the scale register (v0/v1); funct3 = imm3.
constexpr std::uint32_t vmadot_hp_funct7(ElemBits bits, Sign sign, int scale_reg /*0|1*/) {
  const std::uint32_t dt = bits == ElemBits::kInt4 ? 0b10u : 0b11u;
  std::uint32_t sub = 0;
  switch (sign) {
    case Sign::kUU: sub = 0b011; break;
    case Sign::kSS: sub = 0b100; break;
    case Sign::kSU: sub = 0b101; break;
    case Sign::kUS: sub = 0b110; break;
  }
  return (1u << 6) | (dt << 4) | (sub << 1) | static_cast<std::uint32_t>(scale_reg & 1);
}

constexpr std::uint32_t word(std::uint32_t funct7, std::uint32_t funct3, std::uint32_t rd, std::uint32_t rs1,
                             std::uint32_t rs2) {
  return (funct7 << 25) | ((rs2 & 31) << 20) | ((rs1 & 31) << 15) | ((funct3 & 7) << 12) | ((rd & 31) << 7) |
         kOpcodeCustom1;
}

// Mask selecting funct7 | funct3 | opcode (register fields cleared): what identifies an operation
// in a disassembly regardless of register allocation.
inline constexpr std::uint32_t kOperationMask = 0xFE00707Fu;
constexpr std::uint32_t operation(std::uint32_t funct7, std::uint32_t funct3) { return word(funct7, funct3, 0, 0, 0); }

// Worked examples (vd = v16, vs1 = v8, vs2 = v9 unless noted), restated in kernels/ime2/README.md.
static_assert(word(vmadot_funct7(ElemBits::kInt8), vmadot_funct3(Sign::kSS), 16, 8, 9) == 0xE294382Bu,
              "smt.vmadot v16,v8,v9,i8");
static_assert(word(vmadot_funct7(ElemBits::kInt4), vmadot_funct3(Sign::kSU), 16, 8, 9) == 0xC294282Bu,
              "smt.vmadotsu v16,v8,v9,i4");
static_assert(word(vmadot_hp_funct7(ElemBits::kInt4, Sign::kSU, 1), 5, 16, 8, 9) == 0xD694582Bu,
              "smt.vmadotsu.hp v16,v8,v9,v1,5,i4");
static_assert(word(vmadot_hp_funct7(ElemBits::kInt8, Sign::kSS, 1), 4, 16, 2, 8) == 0xF281482Bu,
              "smt.vmadot.hp v16,v2,v8,v1,4,i8 (LLVM-MC)");
static_assert(word(vmadot_funct7(ElemBits::kInt4), vmadot_funct3(Sign::kSS), 2, 3, 4) == 0xC241B12Bu,
              "smt.vmadot v2,v3,v4,i4 (GNU as test)");
static_assert(word(vmadot_slide_funct7(), (vmadot_slide_code(2) & 1) << 2 | vmadot_funct3(Sign::kUU), 16,
                   8 | (vmadot_slide_code(2) >> 1), 9) == 0xE694482Bu,
              "smt.vmadot2u v16,v8,v9");
static_assert(word(vmadot_slide_funct7(), (vmadot_slide_code(3) & 1) << 2 | vmadot_funct3(Sign::kSS), 16,
                   8 | (vmadot_slide_code(3) >> 1), 9) == 0xE694B82Bu,
              "smt.vmadot3 v16,v8,v9");
static_assert(word(vmadot_slide_funct7(), (vmadot_slide_code(3) & 1) << 2 | vmadot_funct3(Sign::kUU), 2,
                   4 | (vmadot_slide_code(3) >> 1), 5) == 0xE652812Bu,
              "smt.vmadot3u v2,v4,v5 (GNU as test)");
static_assert(word(vmadot_hp_funct7(ElemBits::kInt4, Sign::kSU, 0), 0, 2, 3, 4) == 0xD441812Bu,
              "smt.vmadotsu.hp v2,v3,v4,v0,0,i4 (GNU as test)");

// The .hp funct7 column of the reference's table (v0 forms), for the sub-ops the `.hp` kernel uses.
static_assert(vmadot_hp_funct7(ElemBits::kInt4, Sign::kUU, 0) == 0x66u, "vmadotu.hp v0 i4");
static_assert(vmadot_hp_funct7(ElemBits::kInt4, Sign::kSS, 0) == 0x68u, "vmadot.hp v0 i4");
static_assert(vmadot_hp_funct7(ElemBits::kInt4, Sign::kUS, 0) == 0x6Cu, "vmadotus.hp v0 i4");
static_assert(vmadot_hp_funct7(ElemBits::kInt8, Sign::kUS, 1) == 0x7Du, "vmadotus.hp v1 i8");

}  // namespace k3k::ime2::encoding
