// IME2 decode tile ("M1"): the one activation row becomes row 0 of an 8-row A tile (rows 1..7
// zero; IME2 has no narrower int tile); its A image is built once per call (K bytes -> 16*K
// bytes), then each 32-row weight tile streams through tile_outputs, from DRAM or from a TCM slab.
// Open (see README.md): the 7 idle tile rows. The `.hp` variant is linear_decode_m1n32_hp_ime2.cpp.
#include "ime2/linear_w4a8.h"
#include "ime2/microkernels.h"

namespace k3k::ime2 {

namespace {

class DecodeM1 final : public ukernel::DecodeTileBody {
 public:
  DecodeM1(const PackedActivations& a, const W4B64Packed& w)
      : images_(detail::make_images_decode(a)),
        nb_(w.blocks_per_row()),
        transpose_(w.layout == W4B64Layout::kRowTile32) {}

  void run(const std::uint8_t* codes, const float* scale, const float* beta,
           float* acc) const override {
    alignas(64) float tile[4][64];  // [sub][8m + n]; the activation is row m = 0
    detail::tile_outputs(images_.data(), codes, scale, beta, nb_, transpose_, tile);
    for (int i = 0; i < kW4RowTile; ++i) acc[i] = tile[i / 8][i % 8];
  }

 private:
  AlignedBuffer<std::uint8_t> images_;
  std::int64_t nb_;
  bool transpose_;
};

}  // namespace

std::unique_ptr<ukernel::DecodeTileBody> bind_linear_decode_m1(const PackedActivations& a,
                                                               const W4B64Packed& w,
                                                               const ukernel::LinearOptions&) {
  return std::make_unique<DecodeM1>(a, w);
}

}  // namespace k3k::ime2
