// Shared core of the IME2 W4B64 Linear kernels (decode M1 and prefill M8 use the same 8-row tile).
#pragma once

#include <cstdint>

#include "k3k/aligned_buffer.h"
#include "k3k/quantize.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"

namespace k3k::ime2::detail {

// A images (w4b64_ime2_layout.h) of all 8-row groups: [groups][K/64 blocks][kImageBytes].
// Decode: one group whose rows 1..7 are zero. Prefill: groups of 8 rows = two M4 groups.
// The images live in the calling thread's scratch for that purpose (k3k::reused_for_overwrite):
// valid until the thread's next call of the same function, which is the next Linear call it drives.
const std::uint8_t* make_images_decode(const PackedActivations& a);
const std::uint8_t* make_images_prefill(const PackedActivations& a, WorkerPool& pool);

// One 32-row weight tile (codes: its nb units; pairs: its nb x 32 (beta, scale) fp16 pairs)
// against one group's images: tile[sub][8m + n] is the block-reduced sum of output row m, weight
// row 8*sub + n, before the epilogue. transpose: the codes are kRowTile32 (permuted into IME2 order
// per unit).
void tile_outputs(const std::uint8_t* images, const std::uint8_t* codes, const fp16_t* pairs,
                  std::int64_t nb, bool transpose, float tile[4][64]);

// The same sums for kIme2 weights, `tiles` consecutive tiles (codes nb units apart, pairs nb x 32
// apart), written by output row: out[row_stride * m + 32 * t + i] for output
// row m (all 8; rows past the group's are zero activations), tile t and its weight row i. One asm
// loop over the tiles and blocks with the four sub-tiles' accumulators as e32m8 groups
// (linear_w4a8.cpp).
void tile_outputs_by_row(const std::uint8_t* images, const std::uint8_t* codes, const fp16_t* pairs,
                         std::int64_t nb, std::int64_t tiles, float* out, std::int64_t row_stride);

}  // namespace k3k::ime2::detail
