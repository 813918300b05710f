// W4B64 asymmetric weights (HQQ-style): W[N][K] in blocks of 64 along K; per (row n, block b) 4-bit
// codes q in [0, 15], a float scale s and a float zero z. Dequantised:
//     w = s * (q - z) = s * (q - 8) + beta,   beta = s * (8 - z).
// Two forms exist: the MNN-compatible storage form (what model files hold and what --dump writes)
// and the generic kernel layout (what the generic Linear kernels read).
#pragma once

#include <cstdint>
#include <span>

#include "k3k/aligned_buffer.h"

namespace k3k {

inline constexpr int kW4BlockK = 64;  // elements of K per quantisation block

// Storage form, identical to MNN's HQQ export:
//   codes: [N][K/2] bytes, two codes per byte, the FIRST element of each pair in the HIGH nibble;
//   alpha: [N][K/64][2] floats, each pair (beta, scale) in that order, blocks row-major (n, b).
struct W4B64Storage {
  std::int64_t n = 0;
  std::int64_t k = 0;
  AlignedBuffer<std::uint8_t> codes;
  AlignedBuffer<float> alpha;

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
//   scale, beta: [N/32 tiles][K/64 blocks][32 rows] floats.
// A kernel then multiplies one broadcast activation by 32 contiguous row codes at a time: no
// horizontal reductions, and loops that compilers vectorise across rows with 16-bit lanes.
inline constexpr int kW4RowTile = 32;

// Byte order of the codes inside each (row tile, block) unit. kRowTile32 is the layout above, read
// by every layer. kIme2 is a permutation of each unit into the IME2 matmul operand order, made by
// k3k::ime2::pack_w4b64 and read only by the IME2 layer (kernels/ime2/README.md). kSignedRows is
// the RVV layer's layout (pack_w4b64_signed_rows): the same arrays with R = row_tile rows per tile
// (chosen at load time for the running VLEN, recorded in row_tile) and pre-biased codes:
//   codes: [N/R tiles][K/64 blocks][32 j][R rows] bytes; byte (j, r) holds q - 8 of k = 64b + j as
//          a signed (two's complement) nibble in its LOW half and q - 8 of k = 64b + 32 + j in its
//          HIGH half, i.e. the kRowTile32 byte XOR 0x88 (padding rows: 0, scale 0);
//   scale, beta: [N/R tiles][K/64 blocks][R rows] floats.
// A vector kernel then gets q - 8 of the high half with one arithmetic shift and of the low half
// with a shift pair, all at 8-bit element width (kernels/rvv/w4b64_strip.h). Scale and beta are
// the same values in every layout. Kernels reject a layout they do not read.
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
  AlignedBuffer<float> scale;
  AlignedBuffer<float> beta;

  std::int64_t blocks_per_row() const { return k / kW4BlockK; }
  std::int64_t row_tiles() const { return (n + row_tile - 1) / row_tile; }
  // Bytes of one tile's codes (all blocks) and floats of one tile's scale (or beta) array.
  std::int64_t tile_code_bytes() const { return blocks_per_row() * 32 * row_tile; }
  std::int64_t tile_floats() const { return blocks_per_row() * row_tile; }
  // Bytes of an N x K matrix in this form (codes + scale + beta, N padded to whole row tiles).
  static std::int64_t packed_bytes(std::int64_t n, std::int64_t k, int rows = kW4RowTile) {
    const std::int64_t units = (n + rows - 1) / rows * (k / kW4BlockK);
    return units * (32 * rows + 2 * rows * static_cast<std::int64_t>(sizeof(float)));
  }
  // Bytes a kernel reads to consume the whole matrix once (codes + scale + beta).
  std::int64_t bytes() const {
    return static_cast<std::int64_t>(codes.size_bytes() + scale.size_bytes() + beta.size_bytes());
  }
};

// Realistic synthetic float weights, seeded: normal(0, stddev) with a small fraction of large
// outliers (the heavy tail that makes per-block asymmetric scales worthwhile).
struct SyntheticWeightSpec {
  std::uint64_t seed = 1;
  double stddev = 0.02;
  double outlier_fraction = 0.002;
  double outlier_scale = 12.0;  // outliers are normal(0, stddev * outlier_scale)
};
AlignedBuffer<float> make_synthetic_weights(std::int64_t n, std::int64_t k, const SyntheticWeightSpec&);

// HQQ quantisation (half-quadratic proximal solver updating the zero only, as in MNN's exporter):
// initial scale 15/(max-min) and zero round(-min*scale); up to `iterations` refinement steps with
// an lp-shrinkage (p = 0.7, beta 10 growing by 1.01 per step), stopping when the block's mean abs
// error stops improving. The resulting zero is a float, not an integer. K must be a multiple of 64.
W4B64Storage quantize_w4b64_hqq(std::span<const float> weights, std::int64_t n, std::int64_t k,
                                int iterations = 20);

// Storage form -> generic kernel layout (a pure permutation of codes; scales copied).
W4B64Packed pack_w4b64_generic(const W4B64Storage& storage);

// kRowTile32 -> kSignedRows with `rows` rows per tile (a multiple of 16 in [16, 256]): codes
// XOR 0x88 and regrouped, scale and beta regrouped; throws std::invalid_argument otherwise.
W4B64Packed pack_w4b64_signed_rows(const W4B64Packed& rowtile32, int rows);

// Dequantised row of the storage form in float64 (the reference's view of the weights).
void dequantize_w4b64_row(const W4B64Storage& storage, std::int64_t row, double* out);

}  // namespace k3k
