// Bit-exact software models of the IME2 integer matmul instructions, on register images of the
// K3 A100 (VLEN 1024: one vector register = 128 bytes, little-endian). The emulation build
// (K3_IME2_EMULATION) executes these in place of the instructions, so the IME2 kernels' dataflow
// runs under qemu-user and on any RVV machine with VLEN 1024. Pure C++: no vector code here.
//
// Semantics (kernels/ime2/README.md §2), C = vd||vd+1 as 64 int32 lanes, lane p = 8m + n:
//   C[m][n] += sum_{k<K} A[m][k] * B[n][k]       (wrapping int32 adds, no saturation)
//   int8: K = 16, A[m][k] = byte 16m+k of vs1, B[n][k] = byte 16n+k of vs2
//   int4: K = 32, element e = nibble e of the register, even e in the LOW nibble of byte e/2
//   slide s (int8 only, s = 1..3): A is read from the 256-byte pair vs1||vs1+1 starting s rows
//   later.
//
// Code placement: every function of the model (and of the emulation's register plumbing,
// ime2_emulate.cpp) is linked into the section `k3_ime2_model`, whose bounds the linker exports as
// __start_k3_ime2_model / __stop_k3_ime2_model; the instruction-count plugin skips that address
// range, so an emulation build's qemu count holds only the instructions a real build would run
// besides the IME2 ones plus the calls of the model (call_instructions()); executed() counts the
// IME2 ones.
#pragma once

#include <cstdint>
#include <string>

namespace k3k::ime2::model {

inline constexpr int kRegisterBytes = 128;  // VLENB the instruction shapes are defined for
inline constexpr int kTileM = 8, kTileN = 8;

enum class ElemBits { kInt4 = 4, kInt8 = 8 };

struct Operands {
  bool a_signed = true;
  bool b_signed = true;
};

// c: 256 bytes (64 int32 lanes). a: 128 bytes, or 256 bytes when slide > 0. b: 128 bytes.
void vmadot(std::uint8_t* c, const std::uint8_t* a, const std::uint8_t* b, ElemBits bits,
            Operands sign, int slide = 0);

// Element e of a register image as an integer (the model's only way to read operands).
int element(const std::uint8_t* reg, int e, ElemBits bits, bool is_signed);

// Block-scale `.hp` (vmadot{,u,us,su}.hp, MCPM.BF16 = 0: fp16), on 64 fp16 lanes d[p], p = 8m + n:
//   t = sum_k A[m][k] * B[n][k]          (exact integer; |t| <= 7200 for int4, see below)
//   s = scales[8 * imm3 + n]             (one fp16 scale per output column, group imm3 of v0/v1)
//   literal (default): d = rne(d + rne(rne(t) * s))      fused: d = rne(d + rne(t) * s)
// rne = IEEE binary16 round-to-nearest-even with subnormals and overflow to inf. The open points
// (reference AMBIG-5: int16 vs int32 partial t, identical for int4; AMBIG-6: which steps round;
// AMBIG-9: fp16 vs bf16, assumed fp16 because MCPM is machine-mode) are the knobs below, so a
// board run of the selftest picks the reading the silicon implements.
enum class HpRounding { kLiteral, kFused };
void vmadot_hp(std::uint16_t* d, const std::uint8_t* a, const std::uint8_t* b,
               const std::uint16_t* scales, int imm3, ElemBits bits, Operands sign,
               HpRounding rounding = HpRounding::kLiteral);

// IEEE binary16 round-to-nearest-even of a double (exact for any double input: no double rounding
// through float). Exposed for tests.
std::uint16_t round_to_fp16(double x);

// Executed instructions per kind, process-wide (relaxed atomics: exact once the threads are
// joined): every call of vmadot and vmadot_hp counts one. Kind k = hp<<5 | int8<<4 | slide<<2 |
// signs, with signs = 2*a_signed + b_signed; kind_name(k) is the mnemonic, e.g. "vmadotu i4",
// "vmadot2 i8", "vmadotus.hp i4".
inline constexpr int kKinds = 64;
std::uint64_t executed(int kind);
std::string kind_name(int kind);
void reset_executed();

// Emulation builds only (ime2_emulate.cpp): instructions the call sites spent calling the model
// (1 or 2 per emulated instruction), which a real build does not execute.
std::uint64_t call_instructions();
void reset_call_instructions();

// [begin, end) of the section holding the model's code (see the top of this file).
struct CodeRange {
  std::uintptr_t begin = 0, end = 0;
};
CodeRange code_range();

}  // namespace k3k::ime2::model
