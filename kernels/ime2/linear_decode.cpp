// IME2 decode Linear ("M1"): the one activation row becomes row 0 of an 8-row A tile (rows 1..7
// zero; IME2 has no narrower int tile), its A image is built once per call (K bytes -> 16*K bytes),
// and a task covers tile_n output columns, streaming each weight unit once.
// Open (see README.md): the 7 idle tile rows. The `.hp` variant is linear_decode_hp.cpp.
#include <algorithm>
#include <stdexcept>

#include "generic/linear_epilogue.h"
#include "ime2/linear_w4a8.h"
#include "k3k/ime2.h"

namespace k3k::ime2 {

void linear_decode_w4b64(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep,
                         float* out, WorkerPool& pool, const LinearTiling& tiling) {
  detail::validate("ime2::linear_decode_w4b64", a, w, ep, out, tiling);
  if (a.layout != ActivationLayout::kRowK256 || a.m != 1) {
    throw std::invalid_argument("ime2::linear_decode_w4b64: activations must be one row in the K256 (decode) layout");
  }
  const AlignedBuffer<std::uint8_t> images = detail::make_images_decode(a);
  const std::int64_t n = w.n;
  const std::int64_t col_tiles = (n + tiling.tile_n - 1) / tiling.tile_n;
  pool.parallel_for(col_tiles, [&](std::int64_t task, int) {
    const std::int64_t col0 = task * tiling.tile_n;
    const std::int64_t col1 = std::min<std::int64_t>(n, col0 + tiling.tile_n);
    detail::group_columns(a, images.data(), w, ep, out, 0, 1, col0, col1);
  });
  generic::zero_c4_padding(ep, out, 1, n);
}

void linear_decode_w4b64(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep,
                         float* out, WorkerPool& pool, const LinearTiling& tiling, Accumulation accumulation) {
  if (accumulation == Accumulation::kFp16BlockScale) {
    detail::linear_decode_hp(a, w, ep, out, pool, tiling);
  } else {
    linear_decode_w4b64(a, w, ep, out, pool, tiling);
  }
}

}  // namespace k3k::ime2
