// Emulation builds: the trampoline every emulated IME2 instruction calls (ime2_insn.h), and the
// decoder that runs the model on the saved register file. All of it is linked into the model's
// code section (ime2_model.h), which the instruction counter skips.
//
// Call site:   call k3_ime2_emulate_insn      (auipc+jalr, or jal once the linker relaxes it)
//              .4byte <IME2 word, opcode 0x0B>  (custom-0: never executed, skipped on return)
// Trampoline:  saves x1, x3..x31, f0..f31, vl, vtype, fcsr, vcsr and v0..v31 on the stack, calls
//              k3_ime2_emulate_word(word address, register image, vlenb), restores everything
//              (vd and vd+1 now hold the result) and returns to the word address + 4. The vector
//              registers move as 64-bit elements (vse64 / vl8re64): qemu-user copies a register
//              an element at a time, and bytes made the copy eight times longer than the model.
// Nothing but ra changes for the caller, so the caller's code is the real build's.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ime2/ime2_encoding.h"
#include "ime2/ime2_model.h"

#if defined(K3_IME2_EMULATION)

#pragma clang section text = "k3_ime2_model"

namespace k3k::ime2::model {

namespace {

std::atomic<std::uint64_t> g_call_instructions{0};

[[noreturn]] void unknown(std::uint32_t word) {
  std::fprintf(stderr, "k3 IME2 emulation: no model for instruction word %#010x\n", word);
  std::abort();
}

Operands signs(std::uint32_t code /* funct3 order: u, us, su, ss */) {
  return {code == 2 || code == 3, code == 1 || code == 3};
}

// Instructions the call site spent on the call: jal (1) or auipc + jalr (2), read back from the
// code before the word, so counts can take them out again.
int call_length(const std::uint8_t* word) {
  std::uint32_t before;
  std::memcpy(&before, word - 4, 4);
  return (before & 0x7F) == 0x6F ? 1 : 2;
}

}  // namespace

std::uint64_t call_instructions() {
  return g_call_instructions.load(std::memory_order_relaxed);
}
void reset_call_instructions() {
  g_call_instructions.store(0, std::memory_order_relaxed);
}

}  // namespace k3k::ime2::model

extern "C" void k3_ime2_emulate_word(const std::uint8_t* at, std::uint8_t* v, std::size_t vlenb) {
  using namespace k3k::ime2::model;
  std::uint32_t w;
  std::memcpy(&w, at, 4);
  if (vlenb != kRegisterBytes) {
    std::fprintf(stderr, "k3 IME2 emulation: vlenb %zu, the instructions are defined for 128\n",
                 vlenb);
    std::abort();
  }
  g_call_instructions.fetch_add(static_cast<std::uint64_t>(call_length(at)),
                                std::memory_order_relaxed);
  const std::uint32_t f7 = w >> 25, vs2 = (w >> 20) & 31, vs1 = (w >> 15) & 31, f3 = (w >> 12) & 7,
                      vd = (w >> 7) & 31;
  const std::uint32_t dt = (f7 >> 4) & 3, sub = (f7 >> 1) & 7, bit25 = f7 & 1;
  if ((f7 >> 6) != 1 || dt < 2) unknown(w);
  const ElemBits bits = dt == 2 ? ElemBits::kInt4 : ElemBits::kInt8;
  auto reg = [&](std::uint32_t r) { return v + r * kRegisterBytes; };
  if (sub == 0 && bit25 == 1) {  // vmadot{u,us,su,}
    vmadot(reg(vd), reg(vs1), reg(vs2), bits, signs(f3));
  } else if (sub == 1 && bit25 == 1 && bits == ElemBits::kInt8) {  // vmadot1/2/3: slide code S-1
    const int slide = static_cast<int>(((vs1 & 1) << 1 | f3 >> 2) + 1);
    vmadot(reg(vd), reg(vs1 & ~1u), reg(vs2), bits, signs(f3 & 3), slide);
  } else if (sub >= 3 && sub <= 6) {  // .hp: sub-ops u=011, ss=100, su=101, us=110; imm3 = funct3
    static constexpr std::uint32_t kHpSigns[4] = {0, 3, 2, 1};
    vmadot_hp(reinterpret_cast<std::uint16_t*>(reg(vd)), reg(vs1), reg(vs2),
              reinterpret_cast<const std::uint16_t*>(reg(bit25)), static_cast<int>(f3), bits,
              signs(kHpSigns[sub - 3]));
  } else {
    unknown(w);
  }
}

// The frame: [0, 544) scalar state (x_i at 8i, f_i at 256 + 8i, vl, vtype, fcsr, vcsr at
// 512..536), below it 32 * vlenb bytes of v0..v31.
asm(R"(
    .pushsection k3_ime2_model, "ax", @progbits
    .globl k3_ime2_emulate_insn
    .type k3_ime2_emulate_insn, @function
    .p2align 2
k3_ime2_emulate_insn:
    addi sp, sp, -544
)"
    "sd x1, 8(sp)\n"
    "sd x3, 24(sp)\n"
    "sd x4, 32(sp)\n"
    "sd x5, 40(sp)\n"
    "sd x6, 48(sp)\n"
    "sd x7, 56(sp)\n"
    "sd x8, 64(sp)\n"
    "sd x9, 72(sp)\n"
    "sd x10, 80(sp)\n"
    "sd x11, 88(sp)\n"
    "sd x12, 96(sp)\n"
    "sd x13, 104(sp)\n"
    "sd x14, 112(sp)\n"
    "sd x15, 120(sp)\n"
    "sd x16, 128(sp)\n"
    "sd x17, 136(sp)\n"
    "sd x18, 144(sp)\n"
    "sd x19, 152(sp)\n"
    "sd x20, 160(sp)\n"
    "sd x21, 168(sp)\n"
    "sd x22, 176(sp)\n"
    "sd x23, 184(sp)\n"
    "sd x24, 192(sp)\n"
    "sd x25, 200(sp)\n"
    "sd x26, 208(sp)\n"
    "sd x27, 216(sp)\n"
    "sd x28, 224(sp)\n"
    "sd x29, 232(sp)\n"
    "sd x30, 240(sp)\n"
    "sd x31, 248(sp)\n"
    "fsd f0, 256(sp)\n"
    "fsd f1, 264(sp)\n"
    "fsd f2, 272(sp)\n"
    "fsd f3, 280(sp)\n"
    "fsd f4, 288(sp)\n"
    "fsd f5, 296(sp)\n"
    "fsd f6, 304(sp)\n"
    "fsd f7, 312(sp)\n"
    "fsd f8, 320(sp)\n"
    "fsd f9, 328(sp)\n"
    "fsd f10, 336(sp)\n"
    "fsd f11, 344(sp)\n"
    "fsd f12, 352(sp)\n"
    "fsd f13, 360(sp)\n"
    "fsd f14, 368(sp)\n"
    "fsd f15, 376(sp)\n"
    "fsd f16, 384(sp)\n"
    "fsd f17, 392(sp)\n"
    "fsd f18, 400(sp)\n"
    "fsd f19, 408(sp)\n"
    "fsd f20, 416(sp)\n"
    "fsd f21, 424(sp)\n"
    "fsd f22, 432(sp)\n"
    "fsd f23, 440(sp)\n"
    "fsd f24, 448(sp)\n"
    "fsd f25, 456(sp)\n"
    "fsd f26, 464(sp)\n"
    "fsd f27, 472(sp)\n"
    "fsd f28, 480(sp)\n"
    "fsd f29, 488(sp)\n"
    "fsd f30, 496(sp)\n"
    "fsd f31, 504(sp)\n"
    R"(
    csrr t0, vl
    sd t0, 512(sp)
    csrr t0, vtype
    sd t0, 520(sp)
    frcsr t0
    sd t0, 528(sp)
    csrr t0, vcsr
    sd t0, 536(sp)
    csrr t1, vlenb
    slli t0, t1, 5
    sub sp, sp, t0
    slli t1, t1, 3
    mv t2, sp
    vsetvli t0, zero, e64, m8, ta, ma
    vse64.v v0, (t2)
    add t2, t2, t1
    vse64.v v8, (t2)
    add t2, t2, t1
    vse64.v v16, (t2)
    add t2, t2, t1
    vse64.v v24, (t2)
    mv a0, ra
    mv a1, sp
    csrr a2, vlenb
    call k3_ime2_emulate_word
    csrr t1, vlenb
    slli t1, t1, 3
    mv t2, sp
    vl8re64.v v0, (t2)
    add t2, t2, t1
    vl8re64.v v8, (t2)
    add t2, t2, t1
    vl8re64.v v16, (t2)
    add t2, t2, t1
    vl8re64.v v24, (t2)
    slli t1, t1, 2
    add sp, sp, t1
    ld t0, 512(sp)
    ld t1, 520(sp)
    vsetvl zero, t0, t1
    ld t0, 528(sp)
    fscsr t0
    ld t0, 536(sp)
    csrw vcsr, t0
)"
    "fld f0, 256(sp)\n"
    "fld f1, 264(sp)\n"
    "fld f2, 272(sp)\n"
    "fld f3, 280(sp)\n"
    "fld f4, 288(sp)\n"
    "fld f5, 296(sp)\n"
    "fld f6, 304(sp)\n"
    "fld f7, 312(sp)\n"
    "fld f8, 320(sp)\n"
    "fld f9, 328(sp)\n"
    "fld f10, 336(sp)\n"
    "fld f11, 344(sp)\n"
    "fld f12, 352(sp)\n"
    "fld f13, 360(sp)\n"
    "fld f14, 368(sp)\n"
    "fld f15, 376(sp)\n"
    "fld f16, 384(sp)\n"
    "fld f17, 392(sp)\n"
    "fld f18, 400(sp)\n"
    "fld f19, 408(sp)\n"
    "fld f20, 416(sp)\n"
    "fld f21, 424(sp)\n"
    "fld f22, 432(sp)\n"
    "fld f23, 440(sp)\n"
    "fld f24, 448(sp)\n"
    "fld f25, 456(sp)\n"
    "fld f26, 464(sp)\n"
    "fld f27, 472(sp)\n"
    "fld f28, 480(sp)\n"
    "fld f29, 488(sp)\n"
    "fld f30, 496(sp)\n"
    "fld f31, 504(sp)\n"
    "ld x1, 8(sp)\n"
    "ld x3, 24(sp)\n"
    "ld x4, 32(sp)\n"
    "ld x5, 40(sp)\n"
    "ld x6, 48(sp)\n"
    "ld x7, 56(sp)\n"
    "ld x8, 64(sp)\n"
    "ld x9, 72(sp)\n"
    "ld x10, 80(sp)\n"
    "ld x11, 88(sp)\n"
    "ld x12, 96(sp)\n"
    "ld x13, 104(sp)\n"
    "ld x14, 112(sp)\n"
    "ld x15, 120(sp)\n"
    "ld x16, 128(sp)\n"
    "ld x17, 136(sp)\n"
    "ld x18, 144(sp)\n"
    "ld x19, 152(sp)\n"
    "ld x20, 160(sp)\n"
    "ld x21, 168(sp)\n"
    "ld x22, 176(sp)\n"
    "ld x23, 184(sp)\n"
    "ld x24, 192(sp)\n"
    "ld x25, 200(sp)\n"
    "ld x26, 208(sp)\n"
    "ld x27, 216(sp)\n"
    "ld x28, 224(sp)\n"
    "ld x29, 232(sp)\n"
    "ld x30, 240(sp)\n"
    "ld x31, 248(sp)\n"
    R"(
    addi sp, sp, 544
    jalr zero, 4(ra)
    .size k3_ime2_emulate_insn, . - k3_ime2_emulate_insn
    .popsection
)");

#endif  // K3_IME2_EMULATION
