// Where the IME2 layer's operands come from (see README.md "Layouts").
//
// Weights, per (row tile t, block b) unit of 1024 bytes = 8 IME2 B registers (vs2) of 128 bytes:
//   register g = 4*ks + sub  (ks: K-step 0/1 of the block, sub: 8-row slice of the 32-row tile)
//   byte 16n + jj of register g = kRowTile32 byte (j = 16ks + jj, row = 8sub + n)
// i.e. column n of the int4 B tile holds weight row 8sub+n; its nibble 2jj is the code of
// k = 64b + 16ks + jj and nibble 2jj+1 the code of k = 64b + 32 + 16ks + jj (codes unsigned,
// 0..15).
//
// Activations ("A image"), per (8-row group, block) unit of kImageBytes = 2560 bytes:
//   [0,128) A_lo ks0 | [128,256) A_hi ks0 | [256,384) A_lo ks1 | [384,512) A_hi ks1   (vs1 images)
//   [512,1536)  int32 lanes -8*S[m]   | [1536,2560) float lanes S[m]
// for the 256 lanes p = 64*sub + 8m + n of four 8x8 C tiles (sub-tiles 0..3 of a 32-row weight
// tile) as one e32m8 group, so the prefill loop starts the low-nibble sums at -8*S and multiplies
// by S in whole-group instructions; the first 64 lanes are one C tile's.
// A_lo byte 16m + jj = (x[m][16ks+jj] & 15) | (x[m][32+16ks+jj] & 15) << 4     (unsigned nibbles)
// A_hi byte 16m + jj = (x[m][16ks+jj] >> 4 & 15) | (x[m][32+16ks+jj] & 0xF0)  (signed nibbles)
// with x = int8 activation codes (so x = 16 * sx4(hi) + lo) and S[m] the row's block sum.
#pragma once

#include <array>
#include <cstdint>

namespace k3k::ime2 {

inline constexpr int kUnitBytes = 1024;          // one (tile, block) weight unit / one A-image unit
inline constexpr int kHalfUnitBytes = 512;       // one K-step: 4 B registers
inline constexpr int kRegBytes = 128;            // one vector register at VLEN 1024
inline constexpr int kGroupRows = 8;             // IME2 tile M: activation rows per A image
inline constexpr int kImageLanes = 256;          // four C tiles of 64 int32 / float lanes
inline constexpr int kImageMinus8SOffset = 512;  // int32 -8*S lanes
inline constexpr int kImageSumsFOffset = kImageMinus8SOffset + 4 * kImageLanes;  // float S lanes
inline constexpr int kImageBytes = kImageSumsFOffset + 4 * kImageLanes;          // one A image

// kRowTile32 byte offset, within a 512-byte K-step half, of IME2 byte i of that half.
constexpr std::uint16_t rowtile32_offset_in_half(int i) {
  const int sub = i / kRegBytes, n = (i / 16) % 8, jj = i % 16;
  return static_cast<std::uint16_t>(jj * 32 + 8 * sub + n);
}
inline constexpr std::array<std::uint16_t, kHalfUnitBytes> kTransposeHalf = [] {
  std::array<std::uint16_t, kHalfUnitBytes> t{};
  for (int i = 0; i < kHalfUnitBytes; ++i)
    t[static_cast<std::size_t>(i)] = rowtile32_offset_in_half(i);
  return t;
}();

// A image: 8 rows x 64 bytes viewed as 64 u64 (row m = elements 8m..8m+7) gathered so that
// output register c (= 16-byte chunk c of every row: k 16c..16c+15) holds rows 0..7 in order.
inline constexpr std::array<std::uint64_t, 64> kChunkGather = [] {
  std::array<std::uint64_t, 64> t{};
  for (int o = 0; o < 64; ++o) {
    const int c = o / 16, m = (o % 16) / 2, h = o % 2;
    t[static_cast<std::size_t>(o)] = static_cast<std::uint64_t>(8 * m + 2 * c + h);
  }
  return t;
}();

}  // namespace k3k::ime2
