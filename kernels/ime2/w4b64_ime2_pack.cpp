// k3k::ime2::pack_w4b64: kRowTile32 -> kIme2 (a pure per-unit permutation; pairs copied), and back.
#include <cstring>
#include <stdexcept>

#include "ime2/w4b64_ime2_layout.h"
#include "k3k/ime2.h"

namespace k3k::ime2 {

W4B64Packed pack_w4b64(const W4B64Packed& w) {
  if (w.layout != W4B64Layout::kRowTile32) {
    throw std::invalid_argument("ime2::pack_w4b64: weights must be in the kRowTile32 layout");
  }
  W4B64Packed p;
  p.n = w.n;
  p.k = w.k;
  p.layout = W4B64Layout::kIme2;
  p.codes = AlignedBuffer<std::uint8_t>(w.codes.size());
  p.pairs = AlignedBuffer<fp16_t>::copy_of(w.pairs.span());
  const std::size_t halves = w.codes.size() / kHalfUnitBytes;
  for (std::size_t h = 0; h < halves; ++h) {
    const std::uint8_t* src = w.codes.data() + h * kHalfUnitBytes;
    std::uint8_t* dst = p.codes.data() + h * kHalfUnitBytes;
    for (int i = 0; i < kHalfUnitBytes; ++i)
      dst[i] = src[kTransposeHalf[static_cast<std::size_t>(i)]];
  }
  return p;
}

W4B64Packed unpack_w4b64(const W4B64Packed& w) {
  if (w.layout != W4B64Layout::kIme2) {
    throw std::invalid_argument("ime2::unpack_w4b64: weights must be in the kIme2 layout");
  }
  W4B64Packed p;
  p.n = w.n;
  p.k = w.k;
  p.codes = AlignedBuffer<std::uint8_t>(w.codes.size());
  p.pairs = AlignedBuffer<fp16_t>::copy_of(w.pairs.span());
  const std::size_t halves = w.codes.size() / kHalfUnitBytes;
  for (std::size_t h = 0; h < halves; ++h) {
    const std::uint8_t* src = w.codes.data() + h * kHalfUnitBytes;
    std::uint8_t* dst = p.codes.data() + h * kHalfUnitBytes;
    for (int i = 0; i < kHalfUnitBytes; ++i)
      dst[kTransposeHalf[static_cast<std::size_t>(i)]] = src[i];
  }
  return p;
}

}  // namespace k3k::ime2
