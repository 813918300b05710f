// k3k::ime2::pack_w4b64: kRowTile32 -> kIme2 (a pure per-unit permutation; scale/beta copied).
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
  p.scale = AlignedBuffer<float>(w.scale.size());
  p.beta = AlignedBuffer<float>(w.beta.size());
  if (!w.scale.empty()) std::memcpy(p.scale.data(), w.scale.data(), w.scale.size_bytes());
  if (!w.beta.empty()) std::memcpy(p.beta.data(), w.beta.data(), w.beta.size_bytes());
  const std::size_t halves = w.codes.size() / kHalfUnitBytes;
  for (std::size_t h = 0; h < halves; ++h) {
    const std::uint8_t* src = w.codes.data() + h * kHalfUnitBytes;
    std::uint8_t* dst = p.codes.data() + h * kHalfUnitBytes;
    for (int i = 0; i < kHalfUnitBytes; ++i)
      dst[i] = src[kTransposeHalf[static_cast<std::size_t>(i)]];
  }
  return p;
}

}  // namespace k3k::ime2
