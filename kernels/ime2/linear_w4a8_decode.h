// IME2 decode core (one activation row): both nibble halves of the int8 activation ride in rows of
// ONE vmadotu, so a 64-element block of an 8-row weight slice costs 2 IME2 instructions (one per
// K-step) instead of 4 (README.md §3.2).
//
// Identity. x = int8 activation code, q = unsigned 4-bit weight code, per 64-block and weight row
// n:
//   x = 16*h + l,  h = x >> 4 (arithmetic, in [-8, 7]),  l = x & 15 (in [0, 15])
//   x + 128 = 16*(h + 8) + l   with h + 8 = (x >> 4 & 15) ^ 8 in [0, 15]: both halves unsigned
// so one unsigned x unsigned instruction (vmadotu int4) with A rows
//   lo row: l,   hi row: h + 8,   ones row: 1
// gives  C_lo = sum l*q,  C_hi = sum (h+8)*q,  C_one = Q = sum q  and, with S = sum x (block sum),
//   D = sum x*(q - 8) = C_lo + 16*C_hi - 128*C_one - 8*S.
// (The low half is non-negative but is NOT a valid *signed int4* operand, so a shared signed
// instruction is impossible; the unsigned form costs the weight sum Q, which the ones row
// computes in the same instruction.) Bounds: C_lo, C_hi <= 64*15*15 = 14400, C_one <= 960,
// |D| < 2^17: exact in int32 and in float, the same D as the two-instruction form, so the float
// steps (t = s*D, t += beta*S fused, acc += t, blocks ascending) give bitwise the same outputs.
//
// Decode A image, per 64-block: 512 bytes = 4 vs1 registers, then the block's terms (below),
// kDecodeImageStride bytes apart
//   [0,128) E ks0 | [128,256) O ks0 | [256,384) E ks1 | [384,512) O ks1
// E ("even" weight slices 0, 2): row 0 = lo, row 2 = hi+8, row 4 = ones; O (slices 1, 3): rows 1,
// 3, 5; every other row zero. Row m = bytes 16m..16m+15; byte jj of the K-step-ks lo row =
// (x[16ks+jj] & 15) | (x[32+16ks+jj] & 15) << 4, of the hi row the same nibbles of h+8 (the
// nibble order of the weight units, w4b64_ime2_layout.h). Slice pair (0,1) accumulates into one
// C tile X and (2,3) into Y: lane p = 8m + n of X holds, for tile rows r = 0..15 (r = 8*slice + n),
// lo at p = r, hi+8 at p = 16 + r, ones at p = 32 + r; Y the same for tile rows 16..31.
#pragma once

#include <cstdint>

#include "k3k/aligned_buffer.h"
#include "k3k/fp16.h"
#include "k3k/quantize.h"

namespace k3k::ime2::detail {

inline constexpr int kDecodeImageBytes = 512;   // the A registers of a block
inline constexpr int kDecodeTermsOffset = 512;  // then its BlockTerms
inline constexpr int kDecodeImageStride = 576;  // per block (64-byte aligned)

// The decode A images of row 0 of `a`: [K/64 blocks][kDecodeImageStride bytes], in the calling
// thread's scratch (valid until its next call of this function, as make_images_decode's).
const std::uint8_t* make_images_decode_paired(const PackedActivations& a);

// One 32-row weight tile (codes: its nb units; pairs: its nb x 32 (beta, scale) fp16 pairs)
// against the decode images; block_sum: the row's nb block sums S. out[r] = sum over blocks of
// s*D + beta*S for tile row r (before the epilogue). transpose: the codes are kRowTile32
// (permuted per unit).
void decode_tile_outputs(const std::uint8_t* images, const std::int32_t* block_sum,
                         const std::uint8_t* codes, const fp16_t* pairs, std::int64_t nb,
                         bool transpose, float out[32]);

// A block's terms of the combination, after its image: -8*S (integer) and S (as the float the
// beta term multiplies), read by the two-tile loop with two loads off the image pointer.
struct BlockTerms {
  std::int32_t minus_8s;
  float s;
};

// Two neighbouring tiles (kIme2 layout) in one pass over the blocks: out[0..32) the first tile's
// decode_tile_outputs, out[32..64) the second's, bitwise. The second tile's codes and pairs are
// code_stride bytes and pair_stride pairs after the first's.
void decode_tile_pair_outputs(const std::uint8_t* images, const std::uint8_t* codes,
                              const fp16_t* pairs, std::int64_t nb, std::int64_t code_stride,
                              std::int64_t pair_stride, float out[64]);

}  // namespace k3k::ime2::detail
