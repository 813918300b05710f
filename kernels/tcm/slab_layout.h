// How a slab of consecutive weight tiles (R = w.row_tile rows each) sits in a TCM buffer: the
// tiles' codes ([tiles][nb][32][R] bytes), then their scales, then their betas ([tiles][nb][R]
// floats each), i.e. the same arrays as in DRAM, cut to the slab. The copy is three memcpy-like
// runs.
#pragma once

#include <cstdint>

#include "k3k/w4b64.h"

namespace k3k::tcm_detail {

inline std::int64_t tile_code_bytes(const W4B64Packed& w) {
  return w.tile_code_bytes();
}
inline std::int64_t tile_floats(const W4B64Packed& w) {
  return w.tile_floats();
}
// Bytes one tile occupies in a slab buffer.
inline std::int64_t tile_slab_bytes(const W4B64Packed& w) {
  return tile_code_bytes(w) + 2 * tile_floats(w) * static_cast<std::int64_t>(sizeof(float));
}

struct SlabView {
  const std::uint8_t* codes;
  const float* scale;
  const float* beta;
};

// The slab of tiles [t0, t0 + count) as stored in DRAM.
inline SlabView dram_slab(const W4B64Packed& w, std::int64_t t0) {
  return {w.codes.data() + t0 * tile_code_bytes(w), w.scale.data() + t0 * tile_floats(w),
          w.beta.data() + t0 * tile_floats(w)};
}

// The same slab in a TCM buffer laid out for `count` tiles.
inline SlabView tcm_slab(const W4B64Packed& w, const std::byte* buffer, std::int64_t count) {
  const auto* codes = reinterpret_cast<const std::uint8_t*>(buffer);
  const auto* scale = reinterpret_cast<const float*>(codes + count * tile_code_bytes(w));
  return {codes, scale, scale + count * tile_floats(w)};
}

}  // namespace k3k::tcm_detail
