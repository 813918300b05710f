// IME2 decode tile ("M1"): the one activation row's two nibble halves (and a row of ones) become
// rows of the A tile, so both halves ride in one vmadotu (linear_w4a8_decode.h); the A images are
// built once per call (K bytes -> 8*K bytes), then each 32-row weight tile streams through
// decode_tile_outputs, from DRAM or from a TCM slab. The `.hp` variant is
// linear_decode_m1n32_hp_ime2.cpp.
#include "ime2/linear_w4a8_decode.h"
#include "ime2/microkernels.h"

namespace k3k::ime2 {

namespace {

class DecodeM1 final : public ukernel::DecodeTileBody {
 public:
  DecodeM1(const PackedActivations& a, const W4B64Packed& w)
      : images_(detail::make_images_decode_paired(a)),
        block_sum_(a.block_sum.data()),
        nb_(w.blocks_per_row()),
        transpose_(w.layout == W4B64Layout::kRowTile32) {}

  void run(const std::uint8_t* codes, const fp16_t* pairs, float* acc) const override {
    detail::decode_tile_outputs(images_, block_sum_, codes, pairs, nb_, transpose_, acc);
  }

  // Pairs of tiles through the two-tile loop (kIme2 weights; an odd last tile, and transposed
  // kRowTile32 weights, one tile at a time).
  void run_tiles(const std::uint8_t* codes, const fp16_t* pairs, std::int64_t tiles,
                 const ukernel::TileStrides& at, float* acc) const override {
    std::int64_t i = 0;
    if (!transpose_) {
      for (; i + 2 <= tiles; i += 2) {
        detail::decode_tile_pair_outputs(images_, codes + i * at.code_bytes,
                                         pairs + 2 * i * at.pairs, nb_, at.code_bytes, at.pairs,
                                         acc + i * at.rows);
      }
    }
    for (; i < tiles; ++i)
      run(codes + i * at.code_bytes, pairs + 2 * i * at.pairs, acc + i * at.rows);
  }

 private:
  const std::uint8_t* images_;     // the calling thread's scratch (make_images_*)
  const std::int32_t* block_sum_;  // row 0's block sums S (the caller keeps `a` alive)
  std::int64_t nb_;
  bool transpose_;
};

}  // namespace

ukernel::BodyPtr<ukernel::DecodeTileBody> bind_linear_decode_m1(const PackedActivations& a,
                                                                const W4B64Packed& w,
                                                                const ukernel::LinearOptions&) {
  return ukernel::make_body<DecodeM1, ukernel::DecodeTileBody>(a, w);
}

}  // namespace k3k::ime2
