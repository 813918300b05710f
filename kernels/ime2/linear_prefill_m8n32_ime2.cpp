// IME2 prefill tile: tasks are (tile_n output columns) x (8 activation rows = two M4 groups, the
// IME2 tile M). The A images of all rows are built once per call (in parallel), so each task only
// streams weight units through vmadot.
#include <cassert>
#include <utility>

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

  void run(std::int64_t group, int rows, const std::uint8_t* codes, const fp16_t* pairs,
           float* acc) const override {
    if (!transpose_) {  // the kIme2 weights an engine loads: outputs by row, no copy
      detail::tile_outputs_by_row(images_ + group * nb_ * kImageBytes, codes, pairs, nb_, 1, acc,
                                  kW4RowTile);
      return;
    }
    alignas(64) float tile[4][64];  // [sub][8m + n]
    detail::tile_outputs(images_ + group * nb_ * kImageBytes, codes, pairs, nb_, transpose_, tile);
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < kW4RowTile; ++i) acc[r * kW4RowTile + i] = tile[i / 8][8 * r + i % 8];
  }

  // kIme2 weights: a span of tiles in one asm loop, by row straight into the accumulators.
  std::int64_t tiles_per_call() const override { return transpose_ ? 1 : kMaxRowTile / kW4RowTile; }
  void run_groups(std::int64_t group, std::int64_t groups, int group_rows, std::int64_t m,
                  const std::uint8_t* codes, const fp16_t* pairs, std::int64_t tiles,
                  const ukernel::TileStrides& at, float* acc) const override {
    if (transpose_) {
      ukernel::PrefillTileBody::run_groups(group, groups, group_rows, m, codes, pairs, tiles, at,
                                           acc);
      return;
    }
    // kIme2 tiles are consecutive in the pack (the asm loop walks them); each group writes all
    // 8 rows, those past M from the pack's zero rows. The first group decodes the span's pairs
    // and keeps them; the others load them (the same bits, fewer instructions a block).
    (void)m;
    (void)at;
    assert(group_rows == kGroupRows && at.code_bytes == nb_ * kUnitBytes &&
           at.pairs == nb_ * kW4RowTile);
    const std::int64_t width = tiles * kW4RowTile;
    const auto group_out = [&](std::int64_t g) {
      return std::pair{images_ + (group + g) * nb_ * kImageBytes, acc + g * kGroupRows * width};
    };
    if (groups == 1) {
      const auto [images, out] = group_out(0);
      detail::tile_outputs_by_row(images, codes, pairs, nb_, tiles, out, width);
      return;
    }
    thread_local AlignedBuffer<float> kept_buffer;
    float* const kept =
        reused_for_overwrite(
            kept_buffer,
            static_cast<std::size_t>(tiles * nb_ * detail::kExpandedPairBytes / sizeof(float)))
            .data();
    for (std::int64_t g = 0; g < groups; ++g) {
      const auto [images, out] = group_out(g);
      detail::tile_outputs_by_row(
          images, codes, pairs, nb_, tiles, out, width,
          g == 0 ? detail::PairSource::kGatherAndKeep : detail::PairSource::kExpanded, kept);
    }
  }

 private:
  const std::uint8_t* images_;  // the calling thread's scratch (make_images_*)
  std::int64_t nb_;
  bool transpose_;
};

}  // namespace

ukernel::BodyPtr<ukernel::PrefillTileBody> bind_linear_prefill_m8(const PackedActivations& a,
                                                                  const W4B64Packed& w,
                                                                  WorkerPool& pool) {
  static_assert(kGroupRows == ukernel::kMaxGroupRows);
  return ukernel::make_body<PrefillM8, ukernel::PrefillTileBody>(a, w, pool);
}

}  // namespace k3k::ime2
