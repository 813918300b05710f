// W4B64-asymmetric Linear: y[m][n] = clamp( sa[m] * sum_b ( s[n][b] * D[m][n][b] + beta[n][b] * S[m][b] )
//                                          + bias[n] + residual[m][n] )
// with the exact integer parts D = sum_{k in b} qa[m][k] * (q[n][k] - 8) and S = sum_{k in b} qa[m][k].
// Each output's blocks are reduced in ascending b by one task, so results are bitwise identical
// for every worker count and tile setting.
#pragma once

#include <cstdint>
#include <limits>

#include "k3k/quantize.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"

namespace k3k {

enum class OutputLayout {
  kRowMajor,  // [M][N]
  kC4,        // MNN's C4: [ceil(N/4)][M][4]; lanes past N are written as 0
};

// Number of floats an output (or residual) of M x N occupies in a layout.
std::int64_t output_elements(OutputLayout layout, std::int64_t m, std::int64_t n);
// Index of element (row, col) of an M x N output in a layout.
inline std::int64_t output_index(OutputLayout layout, std::int64_t m, std::int64_t n,
                                 std::int64_t row, std::int64_t col) {
  return layout == OutputLayout::kRowMajor ? row * n + col : ((col / 4) * m + row) * 4 + col % 4;
}

// The direct epilogue, applied in registers before the single store of each output.
struct LinearEpilogue {
  const float* bias = nullptr;      // [N] or null
  const float* residual = nullptr;  // same layout and size as the output, or null
  float clamp_min = -std::numeric_limits<float>::infinity();
  float clamp_max = std::numeric_limits<float>::infinity();
  OutputLayout layout = OutputLayout::kRowMajor;
};

struct LinearTiling {
  int tile_n = 64;  // output columns per task (tasks never split K); multiples of 32 avoid recomputing row tiles
};

namespace generic {
// Prefill ("M4"): activations in the kRowsM4 layout, any M.
void linear_prefill_w4b64(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep,
                          float* out, WorkerPool& pool, const LinearTiling& tiling = {});
// Decode ("M1"): activations in the kRowK256 layout (M = 1).
void linear_decode_w4b64(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep,
                         float* out, WorkerPool& pool, const LinearTiling& tiling = {});
}  // namespace generic

}  // namespace k3k
