// The `.hp` block-scale path: the fp16 model against hand-computed values and the spec's worked
// example, and the fp16-accumulating decode kernel against the float64 reference with its own
// bound (kernels/ime2/README.md §3.1), derived independently here from codes and scales.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "ime2/ime2_model.h"
#include "k3k/fp16.h"
#include "k3k/ime2.h"
#include "k3k/attention.h"
#include "k3k/embedding.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/small_ops.h"
#include "k3k/reference/compare.h"
#include "k3k/reference/linear.h"
#include "k3k/seeded_random.h"

#include "support/test_data.h"
#include "support/test_size.h"

namespace {

using namespace k3k;
namespace model = ime2::model;

TEST(Ime2HpModel, RoundToFp16MatchesTheFloatPathAndAvoidsDoubleRounding) {
  SeededRandom rng(5);
  for (int i = 0; i < 20000; ++i) {
    const float f = static_cast<float>(
        std::ldexp(rng.uniform(-1.0, 1.0), static_cast<int>(rng.next() % 44) - 28));
    ASSERT_EQ(model::round_to_fp16(f), fp32_to_fp16(f)) << f;
  }
  // 1 + 2^-11 + 2^-40 is just above the tie between 1 and 1 + 2^-10: rounds up. Through float it
  // would become the tie 1 + 2^-11 first and then round to even (down).
  EXPECT_EQ(model::round_to_fp16(1.0 + 0x1p-11 + 0x1p-40), 0x3C01);
  EXPECT_EQ(model::round_to_fp16(2049.0), 0x6800);     // tie: 2048 (even)
  EXPECT_EQ(model::round_to_fp16(2051.0), 0x6802);     // tie: 2052 (even)
  EXPECT_EQ(model::round_to_fp16(65519.0), 0x7BFF);    // 65504
  EXPECT_EQ(model::round_to_fp16(65520.0), 0x7C00);    // inf
  EXPECT_EQ(model::round_to_fp16(-0x1p-25), 0x8000);   // tie to -0
  EXPECT_EQ(model::round_to_fp16(0x1.8p-24), 0x0002);  // subnormal tie to even
}

// The spec's vmadot.hp i8 example: A[m][k] = m + k, B[n][k] = n + k, s = 1..8 (group 0), C = 0:
// row 0 = 1240, 2720, ..., 16640 and lane 63 = 29632 (all exact in fp16).
TEST(Ime2HpModel, ReproducesTheSpecExample) {
  std::uint8_t a[128], b[128];
  for (int r = 0; r < 8; ++r)
    for (int k = 0; k < 16; ++k) {
      a[16 * r + k] = static_cast<std::uint8_t>(r + k);
      b[16 * r + k] = static_cast<std::uint8_t>(r + k);
    }
  std::uint16_t scales[64] = {}, c[64] = {};
  for (int n = 0; n < 8; ++n) scales[n] = fp32_to_fp16(static_cast<float>(n + 1));
  model::vmadot_hp(c, a, b, scales, 0, model::ElemBits::kInt8, {true, true});
  EXPECT_EQ(fp16_to_fp32(c[0]), 1240.0f);
  EXPECT_EQ(fp16_to_fp32(c[1]), 2720.0f);
  EXPECT_EQ(fp16_to_fp32(c[7]), 16640.0f);
  EXPECT_EQ(fp16_to_fp32(c[63]), 29632.0f);
  // The scale index is 8*imm3 + n: the same data against group 3 picks scales[24..31].
  std::uint16_t c3[64] = {};
  for (int n = 0; n < 8; ++n) scales[24 + n] = fp32_to_fp16(0.5f);
  model::vmadot_hp(c3, a, b, scales, 3, model::ElemBits::kInt8, {true, true});
  EXPECT_EQ(fp16_to_fp32(c3[0]), 620.0f);
}

// int4 ordering and signedness of .hp: element 2i is the low nibble; us = A unsigned, B signed.
// The rounding knob: t = 3, s = 1 + 2^-10, C = -3. Literal rounds the product to 3 + 2^-8 first
// (tie to even), fused keeps 3 + 3*2^-10 until the add.
TEST(Ime2HpModel, Int4SignednessAndTheRoundingKnob) {
  std::uint8_t a[128] = {}, b[128] = {};
  a[0] = 0x1F;  // A[0][0] = 15 (unsigned), A[0][1] = 1
  b[0] = 0x3F;  // B[0][0] = -1 (signed),   B[0][1] = 3
  std::uint16_t scales[64], c[64] = {};
  for (auto& s : scales) s = fp32_to_fp16(1.0f);
  model::vmadot_hp(c, a, b, scales, 0, model::ElemBits::kInt4, {false, true});
  EXPECT_EQ(fp16_to_fp32(c[0]), -15.0f + 3.0f);
  model::vmadot_hp(c, a, b, scales, 0, model::ElemBits::kInt4,
                   {false, false});  // B unsigned: 15*15 + 3
  EXPECT_EQ(fp16_to_fp32(c[0]), -12.0f + 228.0f);

  std::uint8_t a3[128] = {}, b3[128] = {};
  a3[0] = 0x03;  // t = 3 * 1
  b3[0] = 0x01;
  for (auto& s : scales) s = fp32_to_fp16(1.0f + 0x1p-10f);
  std::uint16_t lit[64], fused[64];
  for (auto& x : lit) x = fp32_to_fp16(-3.0f);
  std::memcpy(fused, lit, sizeof lit);
  model::vmadot_hp(lit, a3, b3, scales, 0, model::ElemBits::kInt4, {false, false},
                   model::HpRounding::kLiteral);
  model::vmadot_hp(fused, a3, b3, scales, 0, model::ElemBits::kInt4, {false, false},
                   model::HpRounding::kFused);
  EXPECT_EQ(fp16_to_fp32(lit[0]), 0x1p-8f);
  EXPECT_EQ(fp16_to_fp32(fused[0]), 3 * 0x1p-10f);
}

// ---- the fp16-accumulating decode kernel

bool ime2_runs() {
  return !ime2::unusable_because().has_value();
}

using k3test::hqq_weights;

std::vector<float> normal_vector(std::int64_t count, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(count));
  SeededRandom rng(seed);
  for (auto& x : v) x = static_cast<float>(rng.normal());
  return v;
}

// The extra error of fp16 accumulation (README §3.1), per output column of the single row:
//   |sa| * sum_b gamma16_6 * |s_b| * sum_{k in b} (lo_k + 16 |hi_k|) * |q_k - 8|,
// gamma16_6 = 6u / (1 - 6u), u = 2^-10 (one fp16 ulp: holds for any rounding of AMBIG-6).
std::vector<double> hp_extra_bound(const W4B64Storage& w, const std::int8_t* x, float sa) {
  const double u = 0x1p-10, g = 6 * u / (1 - 6 * u);
  std::vector<double> e(static_cast<std::size_t>(w.n));
  for (std::int64_t col = 0; col < w.n; ++col) {
    double sum = 0;
    for (std::int64_t b = 0; b < w.blocks_per_row(); ++b) {
      double mag = 0;
      for (int j = 0; j < kW4BlockK; ++j) {
        const std::int64_t kk = b * kW4BlockK + j;
        const int lo = x[kk] & 15, hi = x[kk] >> 4;
        mag += (lo + 16.0 * std::abs(hi)) * std::abs(w.code(col, kk) - 8);
      }
      sum += std::fabs(double(w.scale(col, b))) * mag;
    }
    e[static_cast<std::size_t>(col)] = g * std::fabs(double(sa)) * sum;
  }
  return e;
}

struct HpCase {
  std::int64_t n, k;
  int tile_n;
  OutputLayout layout;
  bool bias, residual;
};

// Returns the worst error / bound ratio of the case.
double check_hp(const HpCase& c, std::uint64_t seed) {
  SCOPED_TRACE(testing::Message() << "n=" << c.n << " k=" << c.k << " tile_n=" << c.tile_n);
  const W4B64Storage s = hqq_weights(c.n, c.k, seed);
  const W4B64Packed p = ime2::pack_w4b64(pack_w4b64_generic(s));
  const auto a = normal_vector(c.k, seed + 1);
  const auto bias = normal_vector(c.n, seed + 2);
  const std::int64_t elems = output_elements(c.layout, 1, c.n);
  const auto residual = normal_vector(elems, seed + 3);
  LinearEpilogue ep;
  ep.layout = c.layout;
  ep.bias = c.bias ? bias.data() : nullptr;
  ep.residual = c.residual ? residual.data() : nullptr;
  auto act = make_packed_activations(1, c.k, ActivationLayout::kRowK256);
  k3k::quantize_pack_decode(k3k::KernelPath::kGeneric, a.data(), act);
  std::vector<float> out(static_cast<std::size_t>(elems), -1.0f), out3(out.size(), -2.0f),
      exact(out.size());
  WorkerPool pool1(1), pool3(3);
  k3k::linear_decode_w4b64(k3k::KernelPath::kIme2, act, p, ep, out.data(), pool1, {c.tile_n},
                            k3k::LinearDecodeOptions{k3k::Accumulation::kFp16BlockScale});
  k3k::linear_decode_w4b64(k3k::KernelPath::kIme2, act, p, ep, out3.data(), pool3, {64},
                            k3k::LinearDecodeOptions{k3k::Accumulation::kFp16BlockScale});
  EXPECT_EQ(0, std::memcmp(out.data(), out3.data(), out.size() * 4)) << "depends on workers/tiling";
  // Default dispatch never takes the fp16 path: it equals the int32 kernel bit for bit.
  k3k::linear_decode_w4b64(KernelPath::kIme2, act, p, ep, exact.data(), pool1, {c.tile_n});
  std::vector<float> int32(out.size());
  k3k::linear_decode_w4b64(k3k::KernelPath::kIme2, act, p, ep, int32.data(), pool1, {c.tile_n},
                            k3k::LinearDecodeOptions{k3k::Accumulation::kInt32});
  EXPECT_EQ(0, std::memcmp(exact.data(), int32.data(), out.size() * 4));

  const auto codes = reference::unpack_codes(act);
  const auto res_rm = c.residual ? reference::to_row_major(residual.data(), c.layout, 1, c.n)
                                 : std::vector<float>{};
  const auto ref =
      reference::linear_w4b64(s, codes.data(), act.scale.data(), 1, ep.bias,
                              c.residual ? res_rm.data() : nullptr, ep.clamp_min, ep.clamp_max);
  const auto extra = hp_extra_bound(s, codes.data(), act.scale[0]);
  std::vector<double> bound(ref.bound.size());
  // The fp32 steps after the fp16 block sums see |V_b| <= |s D_b| + E_b: 1.01 covers that cross
  // term.
  for (std::size_t i = 0; i < bound.size(); ++i) bound[i] = ref.bound[i] + 1.01 * extra[i];
  const auto got = reference::to_row_major(out.data(), c.layout, 1, c.n);
  const auto cmp = reference::compare_to_reference(got, ref.y, bound);
  EXPECT_TRUE(cmp.pass) << reference::describe(cmp, got, ref.y, bound);
  double worst = 0, worst_std = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - ref.y[i]);
    worst = std::max(worst, err / bound[i]);
    worst_std = std::max(worst_std, err / ref.bound[i]);
  }
  std::printf("hp n=%lld k=%lld: worst error/hp-bound %.3g, error/int32-bound %.3g\n",
              static_cast<long long>(c.n), static_cast<long long>(c.k), worst, worst_std);
  return worst_std;
}

TEST(Ime2Hp, DecodeWithinItsBoundOverModelShapesAndOddSizes) {
  if (!ime2_runs()) GTEST_SKIP() << *ime2::unusable_because();
  double worst_std = 0;
  std::uint64_t seed = 300;
  // Odd sizes: partial row tiles, one block, tile_n not a multiple of 32, C4 padding.
  for (const HpCase& c :
       {HpCase{1, 64, 64, OutputLayout::kRowMajor, true, false},
        HpCase{33, 192, 7, OutputLayout::kC4, true, true},
        HpCase{70, 320, 40, OutputLayout::kRowMajor, false, true},
        // N x K: Qwen3-0.6B k/v (1024 x 1024), Qwen3.5-0.8B MLP down (1024 x 3584).
        // (Reduced runs, support/test_size.h: the same K on fewer rows.)
        HpCase{k3test::model_n(1024, 192), 1024, 64, OutputLayout::kRowMajor, true, false},
        HpCase{k3test::model_n(1024, 96), 3584, 128, OutputLayout::kC4, false, false}}) {
    worst_std = std::max(worst_std, check_hp(c, seed++));
  }
  // fp16 accumulation is visibly less exact than the int32 path's bound: the separate bound is
  // needed (which is why dispatch never picks this path).
  EXPECT_GT(worst_std, 1.0);
}

TEST(Ime2Hp, RefusesScalesOutsideItsRangeAndRowTile32Weights) {
  if (!ime2_runs()) GTEST_SKIP() << *ime2::unusable_because();
  W4B64Storage s = hqq_weights(40, 128, 9);
  auto act = make_packed_activations(1, 128, ActivationLayout::kRowK256);
  const auto a = normal_vector(128, 10);
  k3k::quantize_pack_decode(k3k::KernelPath::kGeneric, a.data(), act);
  std::vector<float> out(40);
  WorkerPool pool(2);
  EXPECT_THROW(k3k::linear_decode_w4b64(k3k::KernelPath::kIme2, act, pack_w4b64_generic(s), {}, out.data(), pool, {},
                                         k3k::LinearDecodeOptions{k3k::Accumulation::kFp16BlockScale}),
               std::invalid_argument);
  // A scale without a finite fp16 never reaches a kernel: packing refuses it.
  s.alpha[2 * 37 + 1] = NAN;  // scale of (row 18, block 1)
  EXPECT_THROW(pack_w4b64_generic(s), std::invalid_argument);
  for (float bad : {0.75f, 1e-6f}) {
    s.alpha[2 * 37 + 1] = bad;  // scale of (row 18, block 1)
    const W4B64Packed p = ime2::pack_w4b64(pack_w4b64_generic(s));
    EXPECT_THROW(k3k::linear_decode_w4b64(k3k::KernelPath::kIme2, act, p, {}, out.data(), pool, {},
                                           k3k::LinearDecodeOptions{k3k::Accumulation::kFp16BlockScale}),
                 std::domain_error)
        << bad;
    EXPECT_NO_THROW(
        k3k::linear_decode_w4b64(k3k::KernelPath::kIme2, act, p, {}, out.data(), pool, {}));  // int32 has no such limit
  }
}

}  // namespace
