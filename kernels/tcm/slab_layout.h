// How a slab of consecutive weight tiles (R = w.row_tile rows each) sits in a TCM buffer: the
// tiles' codes ([tiles][nb][32][R] bytes), then their (beta, scale) pairs ([tiles][nb][R][2]
// fp16), i.e. the same arrays as in DRAM, cut to the slab. The copy is two memcpy-like runs.
#pragma once

#include <cstdint>

#include "k3k/w4b64.h"

namespace k3k::tcm_detail {

inline std::int64_t tile_code_bytes(const W4B64Packed& w) {
  return w.tile_code_bytes();
}
inline std::int64_t tile_pair_bytes(const W4B64Packed& w) {
  return 2 * w.tile_pairs() * static_cast<std::int64_t>(sizeof(fp16_t));
}
// Bytes one tile occupies in a slab buffer.
inline std::int64_t tile_slab_bytes(const W4B64Packed& w) {
  return tile_code_bytes(w) + tile_pair_bytes(w);
}

struct SlabView {
  const std::uint8_t* codes;
  const fp16_t* pairs;
};

// The slab of tiles [t0, t0 + count) as stored in DRAM.
inline SlabView dram_slab(const W4B64Packed& w, std::int64_t t0) {
  return {w.codes.data() + t0 * tile_code_bytes(w), w.pairs.data() + 2 * t0 * w.tile_pairs()};
}

// The same slab in a TCM buffer laid out for `count` tiles.
inline SlabView tcm_slab(const W4B64Packed& w, const std::byte* buffer, std::int64_t count) {
  const auto* codes = reinterpret_cast<const std::uint8_t*>(buffer);
  return {codes, reinterpret_cast<const fp16_t*>(codes + count * tile_code_bytes(w))};
}

}  // namespace k3k::tcm_detail
