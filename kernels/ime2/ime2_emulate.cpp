// Emulation builds: the decoder that runs the model for each emulated IME2 instruction
// (ime2_insn.h) on a register image, called by the trampoline (ime2_emulate_trampoline.cpp). All of
// it is linked into the model's code section (ime2_model.h), which the instruction counter skips.
//
// Call site:   call k3_ime2_emulate_insn      (auipc+jalr, or jal once the linker relaxes it)
//              .4byte <IME2 word, opcode 0x0B>  (custom-0: never executed, skipped on return)
// Trampoline:  saves x1, x3..x31, f0..f31, vl, vtype, fcsr and vcsr on the stack, calls
//              k3_ime2_emulate_word(word address, register image, vlenb), restores them and
//              returns to the word address + 4. The decoder copies into the image only the vector
//              registers the instruction reads and copies back only those it writes (vd, vd+1):
//              qemu-user moves a register an element at a time, and moving all 32 both ways was
//              nine tenths of an emulated instruction's time. The decoder and the model are
//              compiled without V (kernels/CMakeLists.txt), so no other vector register changes.
//              The registers move as 64-bit elements (vse64 / vl1re64): bytes made a copy eight
//              times longer.
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

// The register rules a real A100 enforces by raising illegal-instruction (IME2 spec, "Register
// rules"): a kernel that breaks one must not pass here and fault on the board. The image holds 32
// registers, so an odd vd of a two-register C (vd = 31: vd + 1 past it) is refused before any copy.
[[noreturn]] void illegal(std::uint32_t word, const char* rule) {
  std::fprintf(stderr, "k3 IME2 emulation: illegal instruction %#010x: %s\n", word, rule);
  std::abort();
}
void check_pair_c(std::uint32_t word, std::uint32_t vd, std::uint32_t a_lo, std::uint32_t a_hi,
                  std::uint32_t b) {
  if (vd % 2 != 0) illegal(word, "vd must be even (C is vd, vd+1)");
  for (std::uint32_t c : {vd, vd + 1})
    if (c == a_lo || c == a_hi || c == b) illegal(word, "vd, vd+1 overlap a source");
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

// Vector register r to / from the 128 bytes at p (below: a jump into a table of one entry per
// register). They change vl and vtype, which the trampoline restores.
extern "C" void k3_ime2_save_vreg(std::uint32_t r, std::uint8_t* p);
extern "C" void k3_ime2_load_vreg(std::uint32_t r, const std::uint8_t* p);

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
  auto in = [&](std::uint32_t r) {  // a register the instruction reads, into the image
    k3_ime2_save_vreg(r, reg(r));
    return reg(r);
  };
  if (sub == 0 && bit25 == 1) {  // vmadot{u,us,su,}: C = vd||vd+1 += A (vs1) B (vs2)
    check_pair_c(w, vd, vs1, vs1, vs2);
    in(vd), in(vd + 1);
    vmadot(reg(vd), in(vs1), in(vs2), bits, signs(f3));
  } else if (sub == 1 && bit25 == 1 && bits == ElemBits::kInt8) {  // vmadot1/2/3: slide code S-1
    const int slide = static_cast<int>(((vs1 & 1) << 1 | f3 >> 2) + 1);
    check_pair_c(w, vd, vs1 & ~1u, (vs1 & ~1u) + 1, vs2);
    in(vd), in(vd + 1), in((vs1 & ~1u) + 1);  // A: the pair vs1||vs1+1
    vmadot(reg(vd), in(vs1 & ~1u), in(vs2), bits, signs(f3 & 3), slide);
  } else if (sub >= 3 && sub <= 6) {  // .hp: sub-ops u=011, ss=100, su=101, us=110; imm3 = funct3
    static constexpr std::uint32_t kHpSigns[4] = {0, 3, 2, 1};
    if (vd == vs1 || vd == vs2) illegal(w, "vd overlaps a source");
    vmadot_hp(reinterpret_cast<std::uint16_t*>(in(vd)), in(vs1), in(vs2),
              reinterpret_cast<const std::uint16_t*>(in(bit25)), static_cast<int>(f3), bits,
              signs(kHpSigns[sub - 3]));
    k3_ime2_load_vreg(vd, reg(vd));  // 64 fp16 lanes: vd alone
    return;
  } else {
    unknown(w);
  }
  k3_ime2_load_vreg(vd, reg(vd));
  k3_ime2_load_vreg(vd + 1, reg(vd + 1));
}

#endif  // K3_IME2_EMULATION
