#include <stdexcept>
#include <string>

#include "common/linear_epilogue.h"

namespace k3k {

std::int64_t output_elements(OutputLayout layout, std::int64_t m, std::int64_t n) {
  return layout == OutputLayout::kRowMajor ? m * n : (n + 3) / 4 * m * 4;
}

namespace detail {

void store_linear_tile(const LinearEpilogue& ep, float* out, std::int64_t m, std::int64_t n,
                       std::int64_t row0, int rows, std::int64_t col0, std::int64_t count,
                       const float* sa, const float* acc, std::int64_t acc_stride) {
  for (int r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < count; ++i) {
      store_linear_output(ep, out, m, n, row0 + r, col0 + i, sa[r], acc[r * acc_stride + i]);
    }
  }
}

void zero_c4_padding(const LinearEpilogue& ep, float* out, std::int64_t m, std::int64_t n) {
  if (ep.layout != OutputLayout::kC4 || n % 4 == 0) return;
  for (std::int64_t row = 0; row < m; ++row) {
    for (std::int64_t col = n; col < (n + 3) / 4 * 4; ++col) {
      out[output_index(ep.layout, m, n, row, col)] = 0.0f;
    }
  }
}

void validate_linear_args(const char* who, const PackedActivations& a, const W4B64Packed& w,
                          const LinearEpilogue& ep, const float* out, const LinearTiling& tiling,
                          const char* ukernel, bool reads_layout) {
  auto fail = [&](const std::string& what) {
    throw std::invalid_argument(std::string(who) + ": " + what);
  };
  if (a.k != w.k)
    fail("activation K (" + std::to_string(a.k) + ") != weight K (" + std::to_string(w.k) + ")");
  if (w.n <= 0 || w.k <= 0 || w.k % kW4BlockK != 0)
    fail("weights must be N>0, K a positive multiple of 64");
  if (!reads_layout) {
    fail(std::string("weights in layout ") + to_string(w.layout) + " with " +
         std::to_string(w.row_tile) + " rows per tile are not read by " + ukernel +
         (w.layout == W4B64Layout::kIme2 ? " (packed for the IME2 layer)" : ""));
  }
  if (tiling.tile_n <= 0) fail("tile_n must be positive, got " + std::to_string(tiling.tile_n));
  if (out == nullptr) fail("output is null");
  if (!(ep.clamp_min <= ep.clamp_max)) fail("clamp_min > clamp_max");
}

}  // namespace detail
}  // namespace k3k
