// RVV decode microkernels ("M1": one activation row) over strips of weight rows
// (rvv/w4b64_strip.h): a tile of R rows is computed in strips of VLMAX(e8, L) rows, each strip's
// block accumulators living in registers across the whole K loop; the weights stream once, in
// order. Variants (layer_rvv.cpp): LMUL 1 and 2. Both read kSignedRows (any R) and kRowTile32
// (R = 32, codes made signed in the loop).
#include "rvv/linear_strips.h"
#include "rvv/w4b64_strip.h"

namespace k3k::rvv {

namespace {

template <int L, bool kRowTile32, bool kPrefetch>
void decode_tile(const std::uint8_t* codes, const fp16_t* pairs, const std::int8_t* x,
                 const std::int32_t* sums, std::int64_t nb, int rows, std::ptrdiff_t prefetch,
                 float* acc_rows) {
  using E = strip::E8<L>;
  for (int i0 = 0; i0 < rows;) {
    const std::size_t vl = E::setvl(static_cast<std::size_t>(rows - i0));
    const strip::Parts parts(vl);
    vfloat32m4_t acc0 = __riscv_vfmv_v_f_f32m4(0.0f, __riscv_vsetvlmax_e32m4());
    vfloat32m4_t acc1 = acc0;
    for (std::int64_t b = 0; b < nb; ++b) {
      typename E::I16 lo, hi;
      strip::block_dot<L, kRowTile32, kPrefetch>(codes + b * 32 * rows + i0, rows, x + b * 64, vl,
                                                 prefetch, lo, hi);
      const float s = static_cast<float>(sums[b]);
      const fp16_t* pb = pairs + 2 * (b * rows + i0);
      acc0 = strip::accumulate_part(acc0, E::template part<0>(lo), E::template part<0>(hi), pb, s,
                                    parts.first);
      if constexpr (L == 2) {
        if (parts.second != 0) {
          acc1 = strip::accumulate_part(acc1, E::template part<1>(lo), E::template part<1>(hi),
                                        pb + 2 * parts.first, s, parts.second);
        }
      }
    }
    __riscv_vse32_v_f32m4(acc_rows + i0, __riscv_vfmul(acc0, strip::kPairUnscale, parts.first),
                          parts.first);
    if constexpr (L == 2) {
      if (parts.second != 0)
        __riscv_vse32_v_f32m4(acc_rows + i0 + parts.first,
                              __riscv_vfmul(acc1, strip::kPairUnscale, parts.second), parts.second);
    }
    i0 += static_cast<int>(vl);
  }
}

using DecodeTileFn = void (*)(const std::uint8_t*, const fp16_t*, const std::int8_t*,
                              const std::int32_t*, std::int64_t, int, std::ptrdiff_t, float*);

template <int L>
DecodeTileFn decode_tile_for(bool rowtile32, bool prefetch) {
  if (rowtile32) return prefetch ? decode_tile<L, true, true> : decode_tile<L, true, false>;
  return prefetch ? decode_tile<L, false, true> : decode_tile<L, false, false>;
}

class DecodeStrips final : public ukernel::DecodeTileBody {
 public:
  DecodeStrips(DecodeTileFn fn, const PackedActivations& a, const W4B64Packed& w, int prefetch)
      : fn_(fn),
        x_(a.codes.data()),
        sums_(a.block_sum.data()),
        nb_(w.blocks_per_row()),
        rows_(w.row_tile),
        prefetch_(prefetch) {}
  void run(const std::uint8_t* codes, const fp16_t* pairs, float* acc) const override {
    fn_(codes, pairs, x_, sums_, nb_, rows_, prefetch_, acc);
  }

 private:
  DecodeTileFn fn_;
  const std::int8_t* x_;
  const std::int32_t* sums_;
  std::int64_t nb_;
  int rows_;
  std::ptrdiff_t prefetch_;
};

template <int L>
ukernel::BodyPtr<ukernel::DecodeTileBody> bind(const PackedActivations& a, const W4B64Packed& w,
                                               const ukernel::LinearOptions& options) {
  const int prefetch = prefetch_built() ? options.prefetch_bytes : 0;
  return ukernel::make_body<DecodeStrips, ukernel::DecodeTileBody>(
      decode_tile_for<L>(w.layout == W4B64Layout::kRowTile32, prefetch > 0), a, w, prefetch);
}

}  // namespace

ukernel::BodyPtr<ukernel::DecodeTileBody> bind_linear_decode_strips_e8m1(
    const PackedActivations& a, const W4B64Packed& w, const ukernel::LinearOptions& options) {
  return bind<1>(a, w, options);
}

ukernel::BodyPtr<ukernel::DecodeTileBody> bind_linear_decode_strips_e8m2(
    const PackedActivations& a, const W4B64Packed& w, const ukernel::LinearOptions& options) {
  return bind<2>(a, w, options);
}

}  // namespace k3k::rvv
