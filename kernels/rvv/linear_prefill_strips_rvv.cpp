// RVV prefill microkernels over strips of weight rows (rvv/w4b64_strip.h): the 4 activation rows
// of an M4 group share each unpacked weight K-step. Variants (layer_rvv.cpp):
//   m4-e8m1:   the 4 rows in one pass, LMUL 1 (8 int16 m2 accumulators + codes: 19 registers);
//   m4-2x2-e8m2: two passes of 2 rows over each block (LMUL 2 doubles the strip, and 2 rows x 2
//              halves of int16 m4 accumulators + codes fill 22 registers), for tiles of at least
//              2 * VLEN/8 rows.
// The float accumulators of the 4 rows live in the driver's small L1 array between blocks.
#include "rvv/linear_strips.h"
#include "rvv/w4b64_strip.h"

namespace k3k::rvv {

namespace {

template <int L, int kPassRows, bool kRowTile32>
void prefill_tile(const ukernel::PrefillTileArgs& t, float* out) {
  using E = strip::E8<L>;
  const int rows = t.row_tile;
  for (int i0 = 0; i0 < rows;) {
    const std::size_t vl = E::setvl(static_cast<std::size_t>(rows - i0));
    const strip::Parts parts(vl);
    for (int r = 0; r < kPrefillRowsPerTask; ++r) {
      const vfloat32m4_t zero = __riscv_vfmv_v_f_f32m4(0.0f, __riscv_vsetvlmax_e32m4());
      __riscv_vse32_v_f32m4(out + r * rows + i0, zero, parts.first);
      if (parts.second != 0)
        __riscv_vse32_v_f32m4(out + r * rows + i0 + parts.first, zero, parts.second);
    }
    for (std::int64_t b = 0; b < t.nb; ++b) {
      const std::uint8_t* cb = t.codes + b * 32 * rows + i0;
      const fp16_t* pb = t.pairs + 2 * (b * rows + i0);
      // Row r's contribution of this block, from its accumulators.
      auto update = [&](int r, typename E::I16 lo, typename E::I16 hi) {
        const float s = static_cast<float>(r < t.rows ? t.sums[r * t.nb + b] : 0);
        float* o = out + r * rows + i0;
        __riscv_vse32_v_f32m4(
            o,
            strip::accumulate_part(__riscv_vle32_v_f32m4(o, parts.first), E::template part<0>(lo),
                                   E::template part<0>(hi), pb, s, parts.first),
            parts.first);
        if constexpr (L == 2) {
          if (parts.second != 0) {
            float* o1 = o + parts.first;
            __riscv_vse32_v_f32m4(
                o1,
                strip::accumulate_part(__riscv_vle32_v_f32m4(o1, parts.second),
                                       E::template part<1>(lo), E::template part<1>(hi),
                                       pb + 2 * parts.first, s, parts.second),
                parts.second);
          }
        }
      };
      const std::int8_t* xb = t.x + b * kPrefillRowsPerTask * 64;
      if constexpr (kPassRows == 4) {
        typename E::I16 lo0, hi0, lo1, hi1, lo2, hi2, lo3, hi3;
        strip::block_dot<L, kRowTile32, false>(cb, rows, xb, vl, 0, lo0, hi0, lo1, hi1, lo2, hi2,
                                               lo3, hi3);
        update(0, lo0, hi0);
        update(1, lo1, hi1);
        update(2, lo2, hi2);
        update(3, lo3, hi3);
      } else {
        static_assert(kPassRows == 2);
        for (int r0 = 0; r0 < kPrefillRowsPerTask && r0 < t.rows; r0 += 2) {
          typename E::I16 lo0, hi0, lo1, hi1;
          strip::block_dot<L, kRowTile32, false>(cb, rows, xb + 64 * r0, vl, 0, lo0, hi0, lo1, hi1);
          update(r0, lo0, hi0);
          update(r0 + 1, lo1, hi1);
        }
      }
    }
    // The strip's sums were accumulated times 2^-112 (scaled pairs): scaled back once.
    auto unscale = [](float* o, std::size_t n) {
      __riscv_vse32_v_f32m4(o, __riscv_vfmul(__riscv_vle32_v_f32m4(o, n), strip::kPairUnscale, n),
                            n);
    };
    for (int r = 0; r < kPrefillRowsPerTask; ++r) {
      unscale(out + r * rows + i0, parts.first);
      if (parts.second != 0) unscale(out + r * rows + i0 + parts.first, parts.second);
    }
    i0 += static_cast<int>(vl);
  }
}

template <int L, int kPassRows>
ukernel::BodyPtr<ukernel::PrefillTileBody> bind(const PackedActivations& a, const W4B64Packed& w) {
  if (w.layout == W4B64Layout::kRowTile32) {
    return ukernel::bind_prefill_tile<prefill_tile<L, kPassRows, true>>(a, w);
  }
  return ukernel::bind_prefill_tile<prefill_tile<L, kPassRows, false>>(a, w);
}

}  // namespace

ukernel::BodyPtr<ukernel::PrefillTileBody> bind_linear_prefill_strips_m4_e8m1(
    const PackedActivations& a, const W4B64Packed& w, WorkerPool&) {
  return bind<1, 4>(a, w);
}

ukernel::BodyPtr<ukernel::PrefillTileBody> bind_linear_prefill_strips_m4_2x2_e8m2(
    const PackedActivations& a, const W4B64Packed& w, WorkerPool&) {
  return bind<2, 2>(a, w);
}

}  // namespace k3k::rvv
