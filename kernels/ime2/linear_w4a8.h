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

// Where tile_outputs_by_row takes a block's (beta, scale) lanes from: the pair words, gathered
// and decoded per block (kGather); the same, also kept in `expanded` (kGatherAndKeep); or the
// lanes a kGatherAndKeep call kept for the same tiles (kExpanded: two plain loads a block in place
// of the gather and five decoding instructions, so further row groups of a span reuse them).
enum class PairSource { kGather, kGatherAndKeep, kExpanded };
// Bytes of one (tile, block)'s kept lanes: 256 scales then 256 betas, as floats times 2^-112.
inline constexpr std::int64_t kExpandedPairBytes = 2 * 256 * sizeof(float);

// The same sums for kIme2 weights, `tiles` consecutive tiles (codes nb units apart, pairs nb x 32
// apart), written by output row: out[row_stride * m + 32 * t + i] for output
// row m (all 8; rows past the group's are zero activations), tile t and its weight row i. One asm
// loop over the tiles and blocks with the four sub-tiles' accumulators as e32m8 groups
// (linear_w4a8.cpp). `expanded` (tiles * nb * kExpandedPairBytes, 64-byte aligned) is written by
// kGatherAndKeep and read by kExpanded; kGather ignores it. Every source gives the same bits.
void tile_outputs_by_row(const std::uint8_t* images, const std::uint8_t* codes, const fp16_t* pairs,
                         std::int64_t nb, std::int64_t tiles, float* out, std::int64_t row_stride,
                         PairSource source = PairSource::kGather, float* expanded = nullptr);

}  // namespace k3k::ime2::detail
