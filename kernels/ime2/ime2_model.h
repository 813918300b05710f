// Bit-exact software models of the IME2 integer matmul instructions, on register images of the
// K3 A100 (VLEN 1024: one vector register = 128 bytes, little-endian). The emulation build
// (K3_IME2_EMULATION) executes these in place of the instructions, so the IME2 kernels' dataflow
// runs under qemu-user and on any RVV machine with VLEN 1024. Pure C++: no vector code here.
//
// Semantics (kernels/ime2/README.md §2), C = vd||vd+1 as 64 int32 lanes, lane p = 8m + n:
//   C[m][n] += sum_{k<K} A[m][k] * B[n][k]       (wrapping int32 adds, no saturation)
//   int8: K = 16, A[m][k] = byte 16m+k of vs1, B[n][k] = byte 16n+k of vs2
//   int4: K = 32, element e = nibble e of the register, even e in the LOW nibble of byte e/2
//   slide s (int8 only, s = 1..3): A is read from the 256-byte pair vs1||vs1+1 starting s rows later.
#pragma once

#include <cstdint>

namespace k3k::ime2::model {

inline constexpr int kRegisterBytes = 128;  // VLENB the instruction shapes are defined for
inline constexpr int kTileM = 8, kTileN = 8;

enum class ElemBits { kInt4 = 4, kInt8 = 8 };

struct Operands {
  bool a_signed = true;
  bool b_signed = true;
};

// c: 256 bytes (64 int32 lanes). a: 128 bytes, or 256 bytes when slide > 0. b: 128 bytes.
void vmadot(std::uint8_t* c, const std::uint8_t* a, const std::uint8_t* b, ElemBits bits, Operands sign,
            int slide = 0);

// Element e of a register image as an integer (the model's only way to read operands).
int element(const std::uint8_t* reg, int e, ElemBits bits, bool is_signed);

}  // namespace k3k::ime2::model
