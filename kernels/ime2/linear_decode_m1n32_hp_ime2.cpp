// IME2 decode Linear with `.hp` block-scale fp16 accumulation (Accumulation::kFp16BlockScale):
// the vendor llama.cpp pattern adapted to W4B64-asymmetric. Per (row tile, 64-block) unit:
//   scales (one v0 image, 64 fp16): groups 0..3 = s of sub-tiles 0..3, groups 4..7 = 16 s;
//   B = the kIme2 unit with every code made signed (q ^ 8 = q - 8 as a 4-bit two's complement);
//   c16 = 0; c16 += fp16(lo . B) * s + fp16(hi . B) * 16s over both K-steps (4 .hp instructions)
//   so c16 ~= s * D with D = sum x (q - 8), and in fp32: acc += widen(c16) + beta * S.
// Centring the codes keeps |t| <= 32*15*8 (lo) and 32*8*8 (hi) per instruction and c16 small,
// which is what makes fp16 accumulation tolerable; flushing to fp32 every block bounds the fp16
// error to one block's four terms (README §3.1 derives the bound). Never chosen by dispatch.
// Relies on: AMBIG-1 (lane 8m+n; only row 0's lanes 0..7 are read), AMBIG-5 (int4: no
// difference), AMBIG-6 (the bound holds for the literal and the fused reading and for any
// rounding mode: u = 2^-10 is one fp16 ulp), AMBIG-8 (VLMAX), AMBIG-9 (fp16, not bf16),
// AMBIG-14 (vd, a, b never in v0/v1).
#include <riscv_vector.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include "ime2/ime2_insn.h"
#include "ime2/linear_w4a8.h"
#include "ime2/microkernels.h"
#include "ime2/w4b64_ime2_layout.h"
#include "k3k/ime2.h"

namespace k3k::ime2::detail {

namespace {

constexpr std::size_t kScales = 32;  // block scales per unit (one per row of the 32-row tile)

// The v0 image of one unit from its 32 (beta, scale) pair words: lanes 0..31 the fp16 scales
// (the words' high halves, as stored), lanes 32..63 fp16(16 s) (exponent + 4, exact). Returns
// false when a scale is outside {0} u [kHpScaleMin, kHpScaleMax] (or NaN), checked on the bits.
bool scale_image(const fp16_t* pairs, vuint16m1_t& image) {
  const vuint32m1_t words =
      __riscv_vle32_v_u32m1(reinterpret_cast<const std::uint32_t*>(pairs), kScales);
  const vuint16mf2_t h = __riscv_vnsrl_wx_u16mf2(words, 16, kScales);
  const vuint16mf2_t a = __riscv_vand_vx_u16mf2(h, 0x7FFF, kScales);
  static_assert(kHpScaleMin == 0x1p-14f && kHpScaleMax == 0.5f);  // fp16 0x0400 and 0x3800
  const vbool32_t ok = __riscv_vmor_mm_b32(
      __riscv_vmseq_vx_u16mf2_b32(a, 0, kScales),
      __riscv_vmand_mm_b32(__riscv_vmsgeu_vx_u16mf2_b32(a, 0x0400, kScales),
                           __riscv_vmsleu_vx_u16mf2_b32(a, 0x3800, kScales), kScales),
      kScales);
  if (__riscv_vcpop_m_b32(ok, kScales) != kScales) return false;
  const vuint16mf2_t h16 = __riscv_vadd_vx_u16mf2_mu(__riscv_vmsne_vx_u16mf2_b32(a, 0, kScales), h,
                                                     h, 4u << 10, kScales);
  image = __riscv_vslideup_vx_u16m1(__riscv_vlmul_ext_v_u16mf2_u16m1(h),
                                    __riscv_vlmul_ext_v_u16mf2_u16m1(h16), kScales, 2 * kScales);
  return true;
}

// fp16 lanes 0..7 (row 0 of the C tile) -> fp32, exactly (normal, subnormal and zero; the scale
// range keeps |c16| < 2^16, so no inf/NaN reaches here).
vfloat32m2_t row0_to_fp32(vuint16m1_t c16) {
  constexpr std::size_t vl = 8;
  const vuint32m2_t h = __riscv_vzext_vf2_u32m2(c16, vl);
  const vuint32m2_t mag = __riscv_vand_vx_u32m2(h, 0x7FFFu, vl);
  const vuint32m2_t normal =
      __riscv_vadd_vx_u32m2(__riscv_vsll_vx_u32m2(mag, 13, vl), 112u << 23, vl);
  const vfloat32m2_t sub =
      __riscv_vfmul_vf_f32m2(__riscv_vfcvt_f_xu_v_f32m2(mag, vl), 0x1p-24f, vl);  // exact
  const vbool16_t is_sub = __riscv_vmsltu_vx_u32m2_b16(mag, 0x400u, vl);
  vuint32m2_t bits =
      __riscv_vmerge_vvm_u32m2(normal, __riscv_vreinterpret_v_f32m2_u32m2(sub), is_sub, vl);
  bits = __riscv_vor_vv_u32m2(
      bits, __riscv_vsll_vx_u32m2(__riscv_vand_vx_u32m2(h, 0x8000u, vl), 16, vl), vl);
  return __riscv_vreinterpret_v_u32m2_f32m2(bits);
}

template <int Sub>
vfloat32m2_t block_sub(vfloat32m2_t acc, const std::uint8_t* img, const std::uint8_t* unit,
                       vuint16m1_t scales, const fp16_t* pairs, float block_sum_2p112) {
  const vuint8m1_t a_lo0 = __riscv_vle8_v_u8m1(img, kRegBytes);
  const vuint8m1_t a_hi0 = __riscv_vle8_v_u8m1(img + kRegBytes, kRegBytes);
  const vuint8m1_t a_lo1 = __riscv_vle8_v_u8m1(img + 2 * kRegBytes, kRegBytes);
  const vuint8m1_t a_hi1 = __riscv_vle8_v_u8m1(img + 3 * kRegBytes, kRegBytes);
  const vuint8m1_t b0 =
      __riscv_vxor_vx_u8m1(__riscv_vle8_v_u8m1(unit + Sub * kRegBytes, kRegBytes), 0x88, kRegBytes);
  const vuint8m1_t b1 = __riscv_vxor_vx_u8m1(
      __riscv_vle8_v_u8m1(unit + kHalfUnitBytes + Sub * kRegBytes, kRegBytes), 0x88, kRegBytes);
  vuint16m1_t c16 = __riscv_vmv_v_x_u16m1(0, 2 * kScales);
  c16 = w4a8_block_hp<Sub>(c16, a_lo0, a_hi0, a_lo1, a_hi1, b0, b1, scales);
  // beta * 2^-112 from the pair words (w4b64.h "Scaled pairs") times S * 2^112: the product is
  // exactly beta * S, so the fused step rounds as it would on the values.
  const vint32m2_t words =
      __riscv_vle32_v_i32m2(reinterpret_cast<const std::int32_t*>(pairs + 2 * 8 * Sub), 8);
  const vfloat32m2_t beta = __riscv_vreinterpret_v_u32m2_f32m2(
      __riscv_vand_vx_u32m2(__riscv_vreinterpret_v_i32m2_u32m2(
                                __riscv_vsra_vx_i32m2(__riscv_vsll_vx_i32m2(words, 16, 8), 3, 8)),
                            kPairScaledMask, 8));
  const vfloat32m2_t t = __riscv_vfmacc_vf_f32m2(row0_to_fp32(c16), block_sum_2p112, beta, 8);
  return __riscv_vfadd_vv_f32m2(acc, t, 8);
}

// Columns [col0, col1) of the one decode row; false when a scale is out of range.
// The `.hp` decode tile: per block, the fp16 block-scale image of the 32 scales (out-of-range
// scales make the tile fail: the call throws std::domain_error when it ends).
class DecodeM1Hp final : public ukernel::DecodeTileBody {
 public:
  DecodeM1Hp(const PackedActivations& a, const W4B64Packed& w)
      : images_(make_images_decode(a)), block_sum_(a.block_sum.data()), nb_(w.blocks_per_row()) {}

  void run(const std::uint8_t* codes, const fp16_t* pairs, float* acc) const override {
    alignas(64) float tile[4][8];
    vfloat32m2_t acc0 = __riscv_vfmv_v_f_f32m2(0.0f, 8), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    for (std::int64_t b = 0; b < nb_; ++b) {
      vuint16m1_t scales;
      const fp16_t* pb = pairs + 2 * b * kScales;
      if (!scale_image(pb, scales)) {
        in_range_.store(false, std::memory_order_relaxed);
        return;
      }
      const std::uint8_t* img = images_ + b * kImageBytes;
      const std::uint8_t* unit = codes + b * kUnitBytes;
      const float s_sum = static_cast<float>(block_sum_[b]) * 0x1p112f;  // exact: |S| < 2^13
      acc0 = block_sub<0>(acc0, img, unit, scales, pb, s_sum);
      acc1 = block_sub<1>(acc1, img, unit, scales, pb, s_sum);
      acc2 = block_sub<2>(acc2, img, unit, scales, pb, s_sum);
      acc3 = block_sub<3>(acc3, img, unit, scales, pb, s_sum);
    }
    __riscv_vse32_v_f32m2(tile[0], acc0, 8);
    __riscv_vse32_v_f32m2(tile[1], acc1, 8);
    __riscv_vse32_v_f32m2(tile[2], acc2, 8);
    __riscv_vse32_v_f32m2(tile[3], acc3, 8);
    for (int i = 0; i < kW4RowTile; ++i) acc[i] = tile[i / 8][i % 8];
  }

  void finish() const override {
    if (!in_range_.load()) {
      throw std::domain_error(
          "linear_decode_w4b64 (fp16 block-scale accumulation): a block scale is outside {0} u "
          "[2^-14, 0.5], where fp16 accumulation leaves "
          "its error bound; use Accumulation::kInt32");
    }
  }

 private:
  const std::uint8_t* images_;  // the calling thread's scratch (make_images_*)
  const std::int32_t* block_sum_;
  std::int64_t nb_;
  mutable std::atomic<bool> in_range_{true};
};

}  // namespace
}  // namespace k3k::ime2::detail

namespace k3k::ime2 {

ukernel::BodyPtr<ukernel::DecodeTileBody> bind_linear_decode_m1_fp16_block_scale(
    const PackedActivations& a, const W4B64Packed& w, const ukernel::LinearOptions&) {
  if (w.layout != W4B64Layout::kIme2) {
    throw std::invalid_argument(
        "linear_decode_w4b64 (fp16 block-scale accumulation): weights must be in the kIme2 layout "
        "(ime2::pack_w4b64)");
  }
  return ukernel::make_body<detail::DecodeM1Hp, ukernel::DecodeTileBody>(a, w);
}

}  // namespace k3k::ime2
