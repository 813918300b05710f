// Dynamic activation quantisation fused with A packing (DESIGN numerics contract):
//   per row m: sa = absmax / 127,  qa = round_half_even(a * (127 / absmax)) clamped to [-127, 127],
//   and the per-(row, 64-block) integer sums of qa ("srcKernelSum") for the zero correction.
// The float arithmetic is fixed exactly as written (float division for 127/absmax, one float
// multiply, round-half-even), so every layer produces identical codes. A zero row gives sa = 0
// and all-zero codes. Rows with absmax < 127/FLT_MAX (where 127/absmax overflows) are first
// scaled by 2^64, exactly, and then quantised the same way.
#pragma once

#include <cstdint>

#include "k3k/aligned_buffer.h"
#include "k3k/dispatch.h"
#include "k3k/worker_pool.h"

namespace k3k {

inline constexpr int kPrefillRowsPerTask = 4;   // "M4": rows that share one B tile
inline constexpr int kDecodeSuperBlockK = 256;  // K256 super-block of the decode pack

enum class ActivationLayout {
  // Prefill: [ceil(M/4)][K/64][4 rows][64] int8; rows past M are zero. An M4 task reads one
  // contiguous 256-byte run per K block.
  kRowsM4,
  // Decode (M = 1): the row quantised and packed super-block by super-block (256 K, four blocks)
  // in the order the M1 kernel consumes them; for one row that is the natural K order.
  kRowK256,
};

struct PackedActivations {
  std::int64_t m = 0;
  std::int64_t k = 0;
  ActivationLayout layout = ActivationLayout::kRowsM4;
  AlignedBuffer<std::int8_t> codes;
  AlignedBuffer<float> scale;             // [M] sa
  AlignedBuffer<std::int32_t> block_sum;  // [M][K/64] sum of qa over each block

  std::int64_t blocks_per_row() const { return k / 64; }
  // Pointer to the 64 codes of (row, block), whatever the layout.
  const std::int8_t* block_codes(std::int64_t row, std::int64_t block) const;
  std::int8_t code(std::int64_t row, std::int64_t col) const {
    return block_codes(row, col / 64)[col % 64];
  }
};

// Allocates a pack for M rows of K (K a positive multiple of 64; kRowK256 needs M == 1).
PackedActivations make_packed_activations(std::int64_t m, std::int64_t k, ActivationLayout layout);

// a: [M][K] row-major floats into a kRowsM4 pack. One pass per row: absmax, then quantise + pack +
// block sums.
void quantize_pack_prefill(KernelPath path, const float* a, PackedActivations& out,
                           WorkerPool& pool);
// a: [K] floats (one token) into a kRowK256 pack.
void quantize_pack_decode(KernelPath path, const float* a, PackedActivations& out);

}  // namespace k3k
