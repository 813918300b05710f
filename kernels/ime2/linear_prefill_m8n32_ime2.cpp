// IME2 prefill tile: tasks are (tile_n output columns) x (8 activation rows = two M4 groups, the
// IME2 tile M). The A images of all rows are built once per call (in parallel), so each task only
// streams weight units through vmadot.
#include "ime2/linear_w4a8.h"
#include "ime2/microkernels.h"
#include "ime2/w4b64_ime2_layout.h"

namespace k3k::ime2 {

namespace {

class PrefillM8 final : public ukernel::PrefillTileBody {
 public:
  PrefillM8(const PackedActivations& a, const W4B64Packed& w, WorkerPool& pool)
      : images_(detail::make_images_prefill(a, pool)),
        nb_(w.blocks_per_row()),
        transpose_(w.layout == W4B64Layout::kRowTile32) {}

  void run(std::int64_t group, int rows, const std::uint8_t* codes, const float* scale,
           const float* beta, float* acc) const override {
    if (!transpose_) {  // the kIme2 weights an engine loads: outputs by row, no copy
      detail::tile_outputs_by_row(images_.data() + group * nb_ * kImageBytes, codes, scale, beta,
                                  nb_, acc, kW4RowTile);
      return;
    }
    alignas(64) float tile[4][64];  // [sub][8m + n]
    detail::tile_outputs(images_.data() + group * nb_ * kImageBytes, codes, scale, beta, nb_,
                         transpose_, tile);
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < kW4RowTile; ++i) acc[r * kW4RowTile + i] = tile[i / 8][8 * r + i % 8];
  }

  // kIme2 weights: each tile's sums straight into its columns of the span (no copy).
  std::int64_t tiles_per_call() const override {
    return transpose_ ? 1 : kMaxRowTile / kW4RowTile;
  }
  void run_tiles(std::int64_t group, int rows, const std::uint8_t* codes, const float* scale,
                 const float* beta, std::int64_t tiles, const ukernel::TileStrides& at,
                 float* acc) const override {
    if (transpose_) {
      run(group, rows, codes, scale, beta, acc);
      return;
    }
    const std::uint8_t* images = images_.data() + group * nb_ * kImageBytes;
    for (std::int64_t i = 0; i < tiles; ++i) {
      detail::tile_outputs_by_row(images, codes + i * at.code_bytes, scale + i * at.floats,
                                  beta + i * at.floats, nb_, acc + i * kW4RowTile,
                                  tiles * kW4RowTile);
    }
  }

 private:
  AlignedBuffer<std::uint8_t> images_;
  std::int64_t nb_;
  bool transpose_;
};

}  // namespace

std::unique_ptr<ukernel::PrefillTileBody> bind_linear_prefill_m8(const PackedActivations& a,
                                                                 const W4B64Packed& w,
                                                                 WorkerPool& pool) {
  static_assert(kGroupRows == ukernel::kMaxGroupRows);
  return std::make_unique<PrefillM8>(a, w, pool);
}

}  // namespace k3k::ime2
