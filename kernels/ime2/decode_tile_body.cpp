// The IME2 decode tile body for the TCM pipeline: the call's A image (the activation row as row 0
// of an 8-row tile) is built once, then each 32-row weight tile goes through the same
// tile_outputs as the DRAM kernel, so both paths give identical bits.
#include "generic/linear_decode_tile.h"
#include "ime2/linear_w4a8.h"

namespace k3k::ime2 {

namespace {

class Ime2DecodeTileBody final : public DecodeTileBody {
 public:
  Ime2DecodeTileBody(const PackedActivations& a, const W4B64Packed& w)
      : images_(detail::make_images_decode(a)),
        nb_(w.blocks_per_row()),
        transpose_(w.layout == W4B64Layout::kRowTile32) {}

  void run(const std::uint8_t* codes, const float* scale, const float* beta,
           float acc[kW4RowTile]) const override {
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

std::unique_ptr<DecodeTileBody> make_decode_tile_body(const PackedActivations& a,
                                                      const W4B64Packed& w) {
  return std::make_unique<Ime2DecodeTileBody>(a, w);
}

}  // namespace k3k::ime2
