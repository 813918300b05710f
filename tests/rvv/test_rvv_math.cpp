// The RVV layer's private vector math (kernels/rvv/rvv_math.h), which the op tests reach only
// through their bounds: the vector exp behind softmax and SiLU bitwise equal to its scalar model
// (whose error was measured exhaustively, see rvv_math.h) and within 1 ulp of exp on a dense
// sample; the vector fp16 <-> fp32 conversions of the KV cache bitwise against
// k3k::fp16_to_fp32 / fp32_to_fp16 on all 65536 halves and a sweep of float edge cases.
#include <gtest/gtest.h>

#include <riscv_vector.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "../../kernels/rvv/rvv_math.h"  // the private helpers under test
#include "k3k/fp16.h"
#include "k3k/seeded_random.h"

namespace {

// ---- vector exp ---------------------------------------------------------------------------------

// Op-for-op scalar model of rvv_detail::vexp (fused steps as std::fma). Its error was measured
// exhaustively over all floats in [-105, 105] on the host: max 0.988 ulp, relative 1.39 * 2^-24.
float exp_model(float x_in) {
  if (std::isnan(x_in)) return x_in;
  const float x = std::fmin(std::fmax(x_in, -105.0f), 105.0f);
  const float t = x * 1.44269504088896341f;
  const int n = static_cast<int>(std::nearbyint(t));
  const float nf = static_cast<float>(n);
  float r = std::fma(-nf, 0.693147182464599609375f, x);
  r = std::fma(-nf, -1.904654299957768e-09f, r);
  float p = std::fma(0.000198527617612853646278381f, r, 0.00139304355252534151077271f);
  p = std::fma(p, r, 0.00833336077630519866943359f);
  p = std::fma(p, r, 0.0416664853692054748535156f);
  p = std::fma(p, r, 0.166666671633720397949219f);
  p = std::fma(p, r, 0.5f);
  const float r2 = r * r;
  const float y = std::fma(r2, p, r) + 1.0f;
  const int n1 = n >> 1, n2 = n - n1;
  const float s1 = std::bit_cast<float>(static_cast<std::uint32_t>(n1 + 127) << 23);
  const float s2 = std::bit_cast<float>(static_cast<std::uint32_t>(n2 + 127) << 23);
  return (y * s1) * s2;
}

std::vector<float> vexp_all(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size();) {
    const std::size_t vl = __riscv_vsetvl_e32m4(x.size() - i);
    __riscv_vse32_v_f32m4(y.data() + i,
                          k3k::rvv_detail::vexp(__riscv_vle32_v_f32m4(x.data() + i, vl), vl), vl);
    i += vl;
  }
  return y;
}

TEST(RvvSmallOpsExp, MatchesItsModelAndIsWithinOneUlp) {
  std::vector<float> x;
  for (int i = 0; i <= 1 << 18; ++i)
    x.push_back(-105.0f + 210.0f * static_cast<float>(i) / (1 << 18));
  k3k::SeededRandom rng(77);
  for (int i = 0; i < 1 << 16; ++i) x.push_back(static_cast<float>(rng.uniform(-1.0, 1.0)));
  for (float s : {0.0f, -0.0f, 1e-45f, -1e-45f, 88.72f, 88.7228f, 88.73f, -87.33f, -87.34f, -103.2f,
                  -103.3f, -104.0f, -110.0f, 110.0f, -0x1.8c7092p+5f, 0x1.da3336p+5f}) {
    x.push_back(s);
  }
  const auto y = vexp_all(x);
  double worst_ulp = 0.0, worst_rel = 0.0, worst_sub = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(y[i]), std::bit_cast<std::uint32_t>(exp_model(x[i])))
        << "x = " << x[i];
    const double e = std::exp(static_cast<double>(x[i]));
    if (e > static_cast<double>(std::numeric_limits<float>::max())) {
      EXPECT_GE(y[i], std::numeric_limits<float>::max()) << x[i];  // FLT_MAX or +inf
      continue;
    }
    const double err = std::fabs(static_cast<double>(y[i]) - e);
    if (e < 0x1.0p-126) {
      worst_sub = std::max(worst_sub, err);
      continue;
    }
    int ex = 0;
    std::frexp(e, &ex);
    worst_ulp = std::max(worst_ulp, err / std::ldexp(1.0, ex - 24));
    worst_rel = std::max(worst_rel, err / e / 0x1.0p-24);
  }
  EXPECT_LT(worst_ulp, 1.0);
  EXPECT_LE(worst_rel, 2.0);  // the faithful-expf assumption of the reference bounds
  EXPECT_LE(worst_sub, 0x1.0p-149);
  std::printf("[ stats    ] vexp on %zu points: max %.3f ulp, max rel %.3f u, subnormal abs %.3g\n",
              x.size(), worst_ulp, worst_rel, worst_sub);
  const std::vector<float> special{-INFINITY, INFINITY, NAN, -NAN};
  const auto ys = vexp_all(special);
  EXPECT_EQ(ys[0], 0.0f);
  EXPECT_TRUE(std::isinf(ys[1]) && ys[1] > 0);
  EXPECT_TRUE(std::isnan(ys[2]));
  EXPECT_TRUE(std::isnan(ys[3]));
}

// ---- fp16 conversion ----------------------------------------------------------------------------

TEST(RvvKvFp16, HalfToFloatAllBitPatterns) {
  std::vector<k3k::fp16_t> h(65536 + 7);  // odd length: a partial last strip
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<k3k::fp16_t>(i);
  std::vector<float> f(h.size());
  k3k::rvv_detail::f16_to_f32_row(h.data(), f.data(), static_cast<std::int64_t>(h.size()));
  for (std::size_t i = 0; i < h.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint32_t>(f[i]),
              std::bit_cast<std::uint32_t>(k3k::fp16_to_fp32(h[i])))
        << "half bits 0x" << std::hex << i;
  }
}

// Every half value, its float neighbours, the midpoints to the next half and their neighbours
// (ties to even), the subnormal / overflow / 2^-25 thresholds, inf, NaNs, float subnormals, and a
// strided sweep over all 2^32 float bit patterns.
TEST(RvvKvFp16, FloatToHalfEdgeSweep) {
  std::vector<std::uint32_t> bits;
  for (std::uint32_t h = 0; h < 0x7C00u; ++h) {
    const std::uint32_t x =
        std::bit_cast<std::uint32_t>(k3k::fp16_to_fp32(static_cast<k3k::fp16_t>(h)));
    const std::uint32_t next = std::bit_cast<std::uint32_t>(
        h + 1 < 0x7C00u ? k3k::fp16_to_fp32(static_cast<k3k::fp16_t>(h + 1)) : 65536.0f);
    const std::uint32_t mid = std::bit_cast<std::uint32_t>(
        static_cast<float>((static_cast<double>(std::bit_cast<float>(x)) +
                            static_cast<double>(std::bit_cast<float>(next))) /
                           2.0));
    for (std::uint32_t b : {x, x + 1, x - 1, mid, mid + 1, mid - 1}) {
      bits.push_back(b);
      bits.push_back(b | 0x80000000u);
    }
  }
  for (std::uint32_t b :
       {0x33000000u, 0x32FFFFFFu, 0x33000001u, 0x38800000u, 0x387FFFFFu, 0x477FEFFFu, 0x477FF000u,
        0x477FF001u, 0x47800000u, 0x7F7FFFFFu, 0x7F800000u, 0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu,
        0x00000001u, 0x007FFFFFu, 0x00800000u}) {
    bits.push_back(b);
    bits.push_back(b | 0x80000000u);
  }
  for (std::uint64_t b = 0; b < (1ull << 32); b += 4099)
    bits.push_back(static_cast<std::uint32_t>(b));
  std::vector<float> f(bits.size());
  std::memcpy(f.data(), bits.data(), bits.size() * sizeof(float));
  std::vector<k3k::fp16_t> h(f.size());
  k3k::rvv_detail::f32_to_f16_row(f.data(), h.data(), static_cast<std::int64_t>(f.size()));
  std::int64_t mismatches = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    const k3k::fp16_t want = k3k::fp32_to_fp16(f[i]);
    if (h[i] != want && ++mismatches <= 5) {
      ADD_FAILURE() << "float bits 0x" << std::hex << bits[i] << ": rvv 0x" << h[i] << ", want 0x"
                    << want;
    }
  }
  EXPECT_EQ(mismatches, 0);
  std::printf("[ stats    ] fp32->fp16: %zu values bit-exact\n", f.size());
}

TEST(RvvKvFp16, MutationWrongRoundingIsCaught) {
  // Truncation instead of round-to-nearest-even differs on the sweep's midpoints: the bitwise
  // comparison above would catch a kernel that truncated.
  const float mid = 1.0f + 0x1.0p-11f + 0x1.0p-12f;  // above the midpoint of 1+2^-10 steps
  k3k::fp16_t h = 0;
  k3k::rvv_detail::f32_to_f16_row(&mid, &h, 1);
  const k3k::fp16_t truncated =
      static_cast<k3k::fp16_t>((std::bit_cast<std::uint32_t>(mid) >> 13) - (112u << 10));
  EXPECT_EQ(h, k3k::fp32_to_fp16(mid));
  EXPECT_NE(h, truncated);
}

}  // namespace
