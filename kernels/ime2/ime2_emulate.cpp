// Emulation builds: the register plumbing between the IME2 instruction wrappers (ime2_insn.h) and
// the software model. Linked into the model's code section (ime2_model.h), so the instruction
// counter skips these stores and reloads too: they stand for one instruction of a real build.
#include "ime2/ime2_insn.h"

#if defined(K3_IME2_EMULATION)

#include "ime2/ime2_model.h"

#pragma clang section text = "k3_ime2_model"

namespace k3k::ime2::detail {

namespace {
model::Operands operands_of(Sign s) {
  return {s == Sign::kSU || s == Sign::kSS, s == Sign::kUS || s == Sign::kSS};
}
}  // namespace

vint32m2_t emulate(vint32m2_t c, vuint8m1_t a, vuint8m1_t b, ElemBits bits, Sign sign) {
  alignas(64) std::uint8_t ca[256], aa[128], ba[128];
  __riscv_vse32_v_i32m2(reinterpret_cast<std::int32_t*>(ca), c, 64);
  __riscv_vse8_v_u8m1(aa, a, 128);
  __riscv_vse8_v_u8m1(ba, b, 128);
  model::vmadot(ca, aa, ba,
                bits == ElemBits::kInt4 ? model::ElemBits::kInt4 : model::ElemBits::kInt8,
                operands_of(sign));
  return __riscv_vle32_v_i32m2(reinterpret_cast<const std::int32_t*>(ca), 64);
}

vuint16m1_t emulate_hp(vuint16m1_t c, vuint8m1_t a, vuint8m1_t b, vuint16m1_t scales, int imm3,
                       Sign sign) {
  alignas(64) std::uint16_t ca[64], sa[64];
  alignas(64) std::uint8_t aa[128], ba[128];
  __riscv_vse16_v_u16m1(ca, c, 64);
  __riscv_vse16_v_u16m1(sa, scales, 64);
  __riscv_vse8_v_u8m1(aa, a, 128);
  __riscv_vse8_v_u8m1(ba, b, 128);
  model::vmadot_hp(ca, aa, ba, sa, imm3, model::ElemBits::kInt4, operands_of(sign));
  return __riscv_vle16_v_u16m1(ca, 64);
}

}  // namespace k3k::ime2::detail

#endif  // K3_IME2_EMULATION
