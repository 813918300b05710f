// W4B64 asymmetric weights (HQQ-style): W[N][K] in blocks of 64 along K; per (row n, block b) 4-bit
// codes q in [0, 15], a float scale s and a float zero z. Dequantised:
//     w = s * (q - z) = s * (q - 8) + beta,   beta = s * (8 - z).
// Two forms exist: the MNN-compatible storage form (what model files hold and what --dump writes)
// and the packed kernel layouts (what the Linear kernels read). Packed layouts keep each (beta,
// scale) pair in fp16 (4 bytes per 64 weights: 4.5 bits per weight with the codes, the format's
// floor and what MNN's K3 decode layout and llama.cpp's Q4_0 stream) and compute in fp32; packing
// rounds the storage form's pairs to fp16 (w4b64_pair_value), and the float64 reference
// dequantises from those same fp16 values.
#pragma once

#include <cstdint>
#include <span>

#include "k3k/aligned_buffer.h"
#include "k3k/fp16.h"

namespace k3k {

inline constexpr int kW4BlockK = 64;  // elements of K per quantisation block
inline constexpr std::uint32_t kPairScaledMask = 0x8FFFE000u;  // see "Scaled pairs" below

// The value a packed layout holds for a storage-form scale or beta: x rounded to fp16 (nearest
// even), as a float. Packing refuses pairs whose fp16 is not finite (|x| >= 65520, NaN).
inline float w4b64_pair_value(float x) {
  return fp16_to_fp32(fp32_to_fp16(x));
}

// Storage form, identical to MNN's HQQ export:
//   codes: [N][K/2] bytes, two codes per byte, the FIRST element of each pair in the HIGH nibble;
//   alpha: [N][K/64][2] floats, each pair (beta, scale) in that order, blocks row-major (n, b).
struct W4B64Storage {
  std::int64_t n = 0;
  std::int64_t k = 0;
  AlignedBuffer<std::uint8_t> codes;
  AlignedBuffer<float> alpha;

  // A deep copy (a test mutates one and keeps the original).
  W4B64Storage deep_copy() const {
    W4B64Storage c;
    c.n = n;
    c.k = k;
    c.codes = AlignedBuffer<std::uint8_t>::copy_of(codes.span());
    c.alpha = AlignedBuffer<float>::copy_of(alpha.span());
    return c;
  }

  std::int64_t blocks_per_row() const { return k / kW4BlockK; }
  std::uint8_t code(std::int64_t row, std::int64_t col) const {
    const std::uint8_t byte = codes[static_cast<std::size_t>(row * (k / 2) + col / 2)];
    return (col % 2 == 0) ? (byte >> 4) : (byte & 0x0F);
  }
  float beta(std::int64_t row, std::int64_t block) const {
    return alpha[static_cast<std::size_t>((row * blocks_per_row() + block) * 2)];
  }
  float scale(std::int64_t row, std::int64_t block) const {
    return alpha[static_cast<std::size_t>((row * blocks_per_row() + block) * 2 + 1)];
  }
};

// Generic kernel layout: output rows in tiles of 32 (the IME2 layer uses the same row grouping),
// N padded to a multiple of 32 with rows whose codes are 8 and scales 0 (they contribute nothing).
//   codes: [N/32 tiles][K/64 blocks][32 j][32 rows] bytes; byte (j, r) holds the code of
//          k = 64b + j in its LOW nibble and of k = 64b + 32 + j in its HIGH nibble;
//   pairs: [N/32 tiles][K/64 blocks][32 rows][2] fp16 (finite): (beta, scale) of each row, one
//          32-bit little-endian word per row with beta in its low half and scale in its high one.
// A kernel then multiplies one broadcast activation by 32 contiguous row codes at a time: no
// horizontal reductions, and loops that compilers vectorise across rows with 16-bit lanes.
//
// Scaled pairs: vector kernels turn a pair word w into floats with integer operations on 32-bit
// lanes only (no fp16 instructions in rv64gcv, and no change of element width):
//   scale' = float bits of (w >>a 3) & kPairScaledMask,   beta' = of ((w << 16) >>a 3) & mask,
// which are scale * 2^-112 and beta * 2^-112 exactly (k3k/fp16.h fp16_scaled_2m112), then run the
// float steps t = s' D, t += S beta', acc += t and store acc * 2^112. The bits are those of the
// same steps on the pairs' values: every exact intermediate (s D, S beta, their sums) is a
// multiple of 2^-24 (a half's quantum times integers), so scaled by 2^-112 it is a multiple of
// 2^-136; where the scaled value falls below float's normal range (2^-126) it is exact there, as
// is the unscaled one (< 2^-14 with at most 10 significant bits), and above it scaling by a power
// of two commutes with rounding. So every rounding agrees and acc * 2^112 is the unscaled sum.
inline constexpr int kW4RowTile = 32;

// Byte order of the codes inside each (row tile, block) unit. kRowTile32 is the layout above, read
// by every layer. kIme2 is a permutation of each unit into the IME2 matmul operand order, made by
// k3k::ime2::pack_w4b64 and read only by the IME2 layer (kernels/ime2/README.md). kSignedRows is
// the RVV layer's layout (pack_w4b64_signed_rows): the same arrays with R = row_tile rows per tile
// (chosen at load time for the running VLEN, recorded in row_tile) and pre-biased codes:
//   codes: [N/R tiles][K/64 blocks][32 j][R rows] bytes; byte (j, r) holds q - 8 of k = 64b + j as
//          a signed (two's complement) nibble in its LOW half and q - 8 of k = 64b + 32 + j in its
//          HIGH half, i.e. the kRowTile32 byte XOR 0x88 (padding rows: 0, pair 0);
//   pairs: [N/R tiles][K/64 blocks][R rows][2] fp16.
// A vector kernel then gets q - 8 of the high half with one arithmetic shift and of the low half
// with a shift pair, all at 8-bit element width (kernels/rvv/w4b64_strip.h). The pairs are the
// same values in every layout. Kernels reject a layout they do not read.
enum class W4B64Layout { kRowTile32, kIme2, kSignedRows };
const char* to_string(W4B64Layout layout);

// Rows per tile kSignedRows accepts (the RVV strips are whole multiples of 16 rows).
inline constexpr int kMinSignedRows = 16, kMaxRowTile = 256;

struct W4B64Packed {
  std::int64_t n = 0;
  std::int64_t k = 0;
  W4B64Layout layout = W4B64Layout::kRowTile32;
  int row_tile = kW4RowTile;  // R: rows per tile (32 except for kSignedRows)
  AlignedBuffer<std::uint8_t> codes;
  AlignedBuffer<fp16_t> pairs;  // 2 per (tile, block, row): beta, then scale

  // A deep copy: packing for a layer consumes its argument, and a benchmark or a test that packs
  // the same weights several ways keeps the original.
  W4B64Packed deep_copy() const {
    W4B64Packed p;
    p.n = n;
    p.k = k;
    p.layout = layout;
    p.row_tile = row_tile;
    p.codes = AlignedBuffer<std::uint8_t>::copy_of(codes.span());
    p.pairs = AlignedBuffer<fp16_t>::copy_of(pairs.span());
    return p;
  }

  std::int64_t blocks_per_row() const { return k / kW4BlockK; }
  std::int64_t row_tiles() const { return (n + row_tile - 1) / row_tile; }
  // Bytes of one tile's codes (all blocks) and its (beta, scale) pairs (all blocks).
  std::int64_t tile_code_bytes() const { return blocks_per_row() * 32 * row_tile; }
  std::int64_t tile_pairs() const { return blocks_per_row() * row_tile; }
  // Pair i = (tile * blocks_per_row() + block) * row_tile + row, as floats.
  float beta_at(std::int64_t i) const {
    return fp16_to_fp32(pairs[static_cast<std::size_t>(2 * i)]);
  }
  float scale_at(std::int64_t i) const {
    return fp16_to_fp32(pairs[static_cast<std::size_t>(2 * i + 1)]);
  }
  // Bytes of the codes and of the (beta, scale) pairs of an N x K matrix in this form (N padded
  // to whole row tiles), and their sum.
  static std::int64_t packed_code_bytes(std::int64_t n, std::int64_t k, int rows = kW4RowTile) {
    return (n + rows - 1) / rows * (k / kW4BlockK) * 32 * rows;
  }
  static std::int64_t packed_pair_bytes(std::int64_t n, std::int64_t k, int rows = kW4RowTile) {
    return (n + rows - 1) / rows * (k / kW4BlockK) * rows * 2 *
           static_cast<std::int64_t>(sizeof(fp16_t));
  }
  static std::int64_t packed_bytes(std::int64_t n, std::int64_t k, int rows = kW4RowTile) {
    return packed_code_bytes(n, k, rows) + packed_pair_bytes(n, k, rows);
  }
  // Bytes a kernel reads to consume the whole matrix once: codes, pairs (scale + beta), both.
  std::int64_t code_bytes() const { return static_cast<std::int64_t>(codes.size_bytes()); }
  std::int64_t pair_bytes() const { return static_cast<std::int64_t>(pairs.size_bytes()); }
  std::int64_t bytes() const { return code_bytes() + pair_bytes(); }
};

// Pair i of a packed pairs array as floats, exactly and branch-free (the generic layer's reading).
inline float packed_scale(const fp16_t* pairs, std::int64_t i) {
  return fp16_finite_to_fp32(pairs[2 * i + 1]);
}
inline float packed_beta(const fp16_t* pairs, std::int64_t i) {
  return fp16_finite_to_fp32(pairs[2 * i]);
}

// Realistic synthetic float weights, seeded: normal(0, stddev) with a small fraction of large
// outliers (the heavy tail that makes per-block asymmetric scales worthwhile).
struct SyntheticWeightSpec {
  std::uint64_t seed = 1;
  double stddev = 0.02;
  double outlier_fraction = 0.002;
  double outlier_scale = 12.0;  // outliers are normal(0, stddev * outlier_scale)
};
AlignedBuffer<float> make_synthetic_weights(std::int64_t n, std::int64_t k,
                                            const SyntheticWeightSpec&);

// HQQ quantisation (half-quadratic proximal solver updating the zero only, as in MNN's exporter):
// initial scale 15/(max-min) and zero round(-min*scale); up to `iterations` refinement steps with
// an lp-shrinkage (p = 0.7, beta 10 growing by 1.01 per step), stopping when the block's mean abs
// error stops improving. The resulting zero is a float, not an integer. The pairs it stores are
// fp16 values (s rounded, then beta = s * (8 - z) rounded: HQQ models ship fp16 pairs), so the
// packed layouts hold them exactly. K must be a multiple of 64.
W4B64Storage quantize_w4b64_hqq(std::span<const float> weights, std::int64_t n, std::int64_t k,
                                int iterations = 20);

// Storage form -> generic kernel layout (a pure permutation of codes; the pairs rounded to fp16).
// Throws std::invalid_argument naming the row and block when a pair's fp16 is not finite.
W4B64Packed pack_w4b64_generic(const W4B64Storage& storage);

// kRowTile32 -> kSignedRows with `rows` rows per tile (a multiple of 16 in [16, 256]): codes
// XOR 0x88 and regrouped, pairs regrouped; throws std::invalid_argument otherwise.
W4B64Packed pack_w4b64_signed_rows(const W4B64Packed& rowtile32, int rows);

// kSignedRows -> kRowTile32: the inverse of pack_w4b64_signed_rows (throws std::invalid_argument
// for another layout).
W4B64Packed unpack_w4b64_signed_rows(const W4B64Packed& srows);

// Dequantised row of the storage form in float64 (the reference's view of the weights: the pairs
// as the packed layouts hold them, w4b64_pair_value).
void dequantize_w4b64_row(const W4B64Storage& storage, std::int64_t row, double* out);

}  // namespace k3k
