// k3k::ime2::pack_w4b64: kRowTile32 -> kIme2 (a pure per-unit permutation; pairs copied), and back.
#include <cstring>
#include <stdexcept>

#include "ime2/w4b64_ime2_layout.h"
#include "k3k/ime2.h"

namespace k3k::ime2 {

namespace {

// `w` with each half unit's codes permuted by kTransposeHalf (kRowTile32 -> kIme2), or by its
// inverse (`inverse`: kIme2 -> kRowTile32); the (beta, scale) pairs copied as they are.
W4B64Packed permute_halves(const W4B64Packed& w, W4B64Layout to, bool inverse) {
  W4B64Packed p;
  p.n = w.n;
  p.k = w.k;
  p.layout = to;
  p.codes = AlignedBuffer<std::uint8_t>(w.codes.size());
  p.pairs = AlignedBuffer<fp16_t>::copy_of(w.pairs.span());
  const std::size_t halves = w.codes.size() / kHalfUnitBytes;
  for (std::size_t h = 0; h < halves; ++h) {
    const std::uint8_t* src = w.codes.data() + h * kHalfUnitBytes;
    std::uint8_t* dst = p.codes.data() + h * kHalfUnitBytes;
    for (std::size_t i = 0; i < static_cast<std::size_t>(kHalfUnitBytes); ++i) {
      if (inverse)
        dst[kTransposeHalf[i]] = src[i];
      else
        dst[i] = src[kTransposeHalf[i]];
    }
  }
  return p;
}

}  // namespace

W4B64Packed pack_w4b64(const W4B64Packed& w) {
  if (w.layout != W4B64Layout::kRowTile32) {
    throw std::invalid_argument("ime2::pack_w4b64: weights must be in the kRowTile32 layout");
  }
  return permute_halves(w, W4B64Layout::kIme2, false);
}

W4B64Packed unpack_w4b64(const W4B64Packed& w) {
  if (w.layout != W4B64Layout::kIme2) {
    throw std::invalid_argument("ime2::unpack_w4b64: weights must be in the kIme2 layout");
  }
  return permute_halves(w, W4B64Layout::kRowTile32, true);
}

}  // namespace k3k::ime2
