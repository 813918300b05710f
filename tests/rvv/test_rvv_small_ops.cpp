// RVV RMSNorm, SwiGLU and residual add vs their float64 references (RMSNorm with the RVV sum depth)
// and vs the generic layer (residual add bit-exact; the others within the sum of both bounds); odd
// shapes and one Qwen3-0.6B shape each; in place; bitwise identical across worker counts 1/2/3;
// mutations; argument errors as in the generic layer. Plus the vector exp behind softmax and SiLU:
// bitwise equal to its scalar model (whose error was measured exhaustively, see rvv_math.h) and
// within 1 ulp of exp on a dense sample.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../../kernels/rvv/rvv_math.h"  // the private vector exp under test
#include "k3k/dispatch.h"
#include "k3k/reference/attention.h"
#include "k3k/reference/compare.h"
#include "k3k/reference/small_ops.h"
#include "k3k/attention.h"
#include "k3k/embedding.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/small_ops.h"
#include "k3k/seeded_random.h"
#include "k3k/small_ops.h"
#include "k3k/worker_pool.h"
#include "support/test_data.h"

namespace {

using k3test::random_floats;
using k3test::thrown_message;
using k3test::bitwise_equal;

namespace ref = k3k::reference;

int vlenb() {
  return k3k::cpu_features().vlenb;
}

std::vector<double> sum_of(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> s(a.size());
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = a[i] + b[i];
  return s;
}

// rvv vs reference (rvv bound) and vs generic (sum of both bounds); prints the ratios.
void check(const std::string& what, const std::vector<float>& rvv, const std::vector<float>& gen,
           const std::vector<double>& expect, const std::vector<double>& bound_rvv,
           const std::vector<double>& bound_gen) {
  const auto r = ref::compare_to_reference(rvv, expect, bound_rvv);
  EXPECT_TRUE(r.pass) << what << " vs reference: " << ref::describe(r, rvv, expect, bound_rvv);
  const std::vector<double> gen_d(gen.begin(), gen.end());
  const auto both = sum_of(bound_rvv, bound_gen);
  const auto rg = ref::compare_to_reference(rvv, gen_d, both);
  EXPECT_TRUE(rg.pass) << what << " vs generic: " << ref::describe(rg, rvv, gen_d, both);
  std::printf(
      "[ stats    ] %s: rvv err/bound %.3g (max rel %.3g), |rvv-generic|/(sum of bounds) %.3g\n",
      what.c_str(), r.worst_ratio, r.max_rel_err, rg.worst_ratio);
}

// ---- RMSNorm ------------------------------------------------------------------------------------

struct NormCase {
  const char* name;
  std::int64_t rows;
  int dim;
  float eps;
  double scale;  // input magnitude
};

class RvvSmallOpsRmsNorm : public ::testing::TestWithParam<NormCase> {};

TEST_P(RvvSmallOpsRmsNorm, WithinBoundInPlaceAndDeterministic) {
  const NormCase& c = GetParam();
  const auto x = random_floats(static_cast<std::size_t>(c.rows * c.dim), 1, 0.1, c.scale);
  const auto w = random_floats(static_cast<std::size_t>(c.dim), 2, 1.0, 0.3);
  std::vector<float> y(x.size()), g(x.size());
  k3k::WorkerPool pool2(2);
  k3k::rmsnorm(k3k::KernelPath::kRvv, x, w, y, c.rows, c.dim, c.eps, pool2);
  k3k::rmsnorm(k3k::KernelPath::kGeneric, x, w, g, c.rows, c.dim, c.eps, pool2);
  const auto expect = ref::rmsnorm(x, w, c.rows, c.dim, c.eps);
  check(std::string("rmsnorm ") + c.name, y, g, expect,
        ref::rmsnorm_bound(expect, c.dim, ref::rvv_dot_depth(c.dim, vlenb())),
        ref::rmsnorm_bound(expect, c.dim));
  for (int workers : {1, 3}) {
    k3k::WorkerPool pool(workers);
    std::vector<float> z = x;  // in place
    k3k::rmsnorm(k3k::KernelPath::kRvv, z, w, z, c.rows, c.dim, c.eps, pool);
    EXPECT_TRUE(bitwise_equal(y, z)) << "workers " << workers;
  }
}

INSTANTIATE_TEST_SUITE_P(RvvSmallOpsRmsNormShapes, RvvSmallOpsRmsNorm,
                         ::testing::Values(NormCase{"qwen3_0p6b_hidden_1024", 5, 1024, 1e-6f, 1.0},
                                           NormCase{"qk_norm_16heads_d128_S3", 16 * 3, 128, 1e-6f,
                                                    3.0},
                                           NormCase{"qk_norm_d256", 2 * 17, 256, 1e-6f, 0.5},
                                           NormCase{"dim257_odd", 7, 257, 1e-6f, 2.0},
                                           NormCase{"dim100_eps_dominant", 9, 100, 1e-2f, 0.01},
                                           NormCase{"dim1", 130, 1, 1e-5f, 50.0},
                                           NormCase{"many_rows_multi_task", 130, 131, 1e-6f, 1.0}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(RvvSmallOpsRmsNormMutation, PerturbationAndWrongEpsFail) {
  const std::int64_t rows = 4;
  const int dim = 128;
  const auto x = random_floats(rows * dim, 3, 0.0, 1e-3);
  const auto w = random_floats(dim, 4, 1.0, 0.2);
  std::vector<float> y(x.size());
  k3k::WorkerPool pool(2);
  const auto expect = ref::rmsnorm(x, w, rows, dim, 1e-6f);
  const auto bound = ref::rmsnorm_bound(expect, dim, ref::rvv_dot_depth(dim, vlenb()));
  k3k::rmsnorm(k3k::KernelPath::kRvv, x, w, y, rows, dim, 1e-5f, pool);  // the bug: eps 1e-5 instead of 1e-6
  EXPECT_FALSE(ref::compare_to_reference(y, expect, bound).pass);
  k3k::rmsnorm(k3k::KernelPath::kRvv, x, w, y, rows, dim, 1e-6f, pool);
  ASSERT_TRUE(ref::compare_to_reference(y, expect, bound).pass);
  y[100] = static_cast<float>(expect[100] + 2.0 * bound[100]);
  EXPECT_FALSE(ref::compare_to_reference(y, expect, bound).pass);
}

// ---- SwiGLU -------------------------------------------------------------------------------------

TEST(RvvSmallOpsSwiGlu, WithinBoundIncludingExtremesAndDeterministic) {
  for (const auto& [rows, dim] : {std::pair<std::int64_t, std::int64_t>{3, 3072},  // Qwen3-0.6B
                                  std::pair<std::int64_t, std::int64_t>{5, 37}}) {
    auto gate = random_floats(static_cast<std::size_t>(rows * dim), 5 + dim, 0.0, 3.0);
    const auto up = random_floats(static_cast<std::size_t>(rows * dim), 6 + dim, 0.0, 2.0);
    const float extremes[] = {0.0f,   -0.0f,  1e-30f, -1e-30f, 88.0f,  -88.0f, -88.72f,
                              -88.8f, -100.f, -1e4f,  100.0f,  1e4f,   20.0f,  -20.0f,
                              1e-8f,  -87.0f, -86.5f, 103.0f,  1e-40f, -1e-40f};
    for (std::size_t i = 0; i < std::size(extremes); ++i) gate[i * 7] = extremes[i];
    std::vector<float> out(gate.size()), gen(gate.size());
    k3k::WorkerPool pool2(2);
    k3k::swiglu(k3k::KernelPath::kRvv, gate, up, out, rows, dim, pool2);
    k3k::swiglu(k3k::KernelPath::kGeneric, gate, up, gen, rows, dim, pool2);
    const auto expect = ref::swiglu(gate, up);
    const auto bound = ref::swiglu_bound(gate, up, expect);
    check("swiglu " + std::to_string(rows) + "x" + std::to_string(dim), out, gen, expect, bound,
          bound);
    // The same ratio without the exp-overflow elements (whose bound is |out| itself).
    std::vector<float> o2;
    std::vector<double> e2, b2;
    for (std::size_t i = 0; i < gate.size(); ++i) {
      if (-static_cast<double>(gate[i]) > 88.72) continue;
      o2.push_back(out[i]);
      e2.push_back(expect[i]);
      b2.push_back(bound[i]);
    }
    const auto r2 = ref::compare_to_reference(o2, e2, b2);
    EXPECT_TRUE(r2.pass);
    std::printf("[ stats    ] swiglu %lldx%lld without exp overflow: rvv err/bound %.3g\n",
                static_cast<long long>(rows), static_cast<long long>(dim), r2.worst_ratio);
    for (int workers : {1, 3}) {
      k3k::WorkerPool pool(workers);
      std::vector<float> in_place = gate;
      k3k::swiglu(k3k::KernelPath::kRvv, in_place, up, in_place, rows, dim, pool);
      EXPECT_TRUE(bitwise_equal(out, in_place)) << "workers " << workers;
    }
  }
}

TEST(RvvSmallOpsSwiGlu, MultiTaskAndMutation) {
  const std::int64_t rows = 2, dim = 16384 + 33;  // two tasks, a partial strip
  const auto gate = random_floats(static_cast<std::size_t>(rows * dim), 15, 0.0, 2.0);
  const auto up = random_floats(static_cast<std::size_t>(rows * dim), 16);
  std::vector<float> a(gate.size()), b(gate.size());
  k3k::WorkerPool pool1(1), pool3(3);
  k3k::swiglu(k3k::KernelPath::kRvv, gate, up, a, rows, dim, pool1);
  k3k::swiglu(k3k::KernelPath::kRvv, gate, up, b, rows, dim, pool3);
  EXPECT_TRUE(bitwise_equal(a, b));
  const auto expect = ref::swiglu(gate, up);
  const auto bound = ref::swiglu_bound(gate, up, expect);
  ASSERT_TRUE(ref::compare_to_reference(a, expect, bound).pass);
  a[20000] = static_cast<float>(expect[20000] + 2.0 * bound[20000]);
  EXPECT_FALSE(ref::compare_to_reference(a, expect, bound).pass);
}

// ---- residual add -------------------------------------------------------------------------------

TEST(RvvSmallOpsResidualAdd, BitExactWithGenericInPlaceAndDeterministic) {
  const std::int64_t rows = 3, dim = 1024 * 11 + 3;  // Qwen3-0.6B hidden x 11 + odd tail: 2 tasks
  const auto a = random_floats(static_cast<std::size_t>(rows * dim), 9, 0.0, 10.0);
  const auto b = random_floats(static_cast<std::size_t>(rows * dim), 10, 0.0, 0.01);
  std::vector<float> out(a.size()), gen(a.size());
  k3k::WorkerPool pool2(2);
  k3k::residual_add(k3k::KernelPath::kRvv, a, b, out, rows, dim, pool2);
  k3k::residual_add(k3k::KernelPath::kGeneric, a, b, gen, rows, dim, pool2);
  EXPECT_TRUE(bitwise_equal(out, gen));
  const auto expect = ref::residual_add(a, b);
  const auto bound = ref::residual_add_bound(expect);
  check("residual_add", out, gen, expect, bound, bound);
  for (int workers : {1, 3}) {
    k3k::WorkerPool pool(workers);
    std::vector<float> in_a = a, in_b = b;
    k3k::residual_add(k3k::KernelPath::kRvv, in_a, b, in_a, rows, dim, pool);
    k3k::residual_add(k3k::KernelPath::kRvv, a, in_b, in_b, rows, dim, pool);
    EXPECT_TRUE(bitwise_equal(out, in_a)) << "workers " << workers;
    EXPECT_TRUE(bitwise_equal(out, in_b)) << "workers " << workers;
  }
  // Mutations: dropping the residual, and a perturbation by 4 bounds (the bound is half an ulp
  // or less, so 2 bounds could round back onto the float grid inside it).
  EXPECT_FALSE(ref::compare_to_reference(a, expect, bound).pass);
  std::vector<float> bad = out;
  bad[12345] = static_cast<float>(expect[12345] + 4.0 * std::max(bound[12345], 0x1.0p-149));
  EXPECT_FALSE(ref::compare_to_reference(bad, expect, bound).pass);
}

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

// ---- arguments ----------------------------------------------------------------------------------

TEST(RvvSmallOpsArgs, SameErrorsAsGeneric) {
  k3k::WorkerPool pool(1);
  std::vector<float> x(4 * 64), w(64), y(4 * 64), w_bad(63), short_up(4 * 64 - 1);
  auto same = [](auto&& rvv_call, auto&& gen_call) {
    const std::string r = thrown_message(rvv_call), g = thrown_message(gen_call);
    EXPECT_EQ(r, g);
    EXPECT_EQ(r.find("<no"), std::string::npos) << r;
  };
  same([&] { k3k::rmsnorm(k3k::KernelPath::kRvv, x, w_bad, y, 4, 64, 1e-6f, pool); },
       [&] { k3k::rmsnorm(k3k::KernelPath::kGeneric, x, w_bad, y, 4, 64, 1e-6f, pool); });
  same([&] { k3k::rmsnorm(k3k::KernelPath::kRvv, x, w, y, 5, 64, 1e-6f, pool); },
       [&] { k3k::rmsnorm(k3k::KernelPath::kGeneric, x, w, y, 5, 64, 1e-6f, pool); });
  same([&] { k3k::rmsnorm(k3k::KernelPath::kRvv, x, w, y, 4, 0, 1e-6f, pool); },
       [&] { k3k::rmsnorm(k3k::KernelPath::kGeneric, x, w, y, 4, 0, 1e-6f, pool); });
  same([&] { k3k::rmsnorm(k3k::KernelPath::kRvv, x, w, y, 4, 64, -1.0f, pool); },
       [&] { k3k::rmsnorm(k3k::KernelPath::kGeneric, x, w, y, 4, 64, -1.0f, pool); });
  const std::span<const float> x2 = std::span<const float>(x).first(128);
  const std::span<float> o2 = std::span<float>(x).subspan(64, 128);
  same([&] { k3k::rmsnorm(k3k::KernelPath::kRvv, x2, w, o2, 2, 64, 1e-6f, pool); },
       [&] { k3k::rmsnorm(k3k::KernelPath::kGeneric, x2, w, o2, 2, 64, 1e-6f, pool); });
  same([&] { k3k::swiglu(k3k::KernelPath::kRvv, x, short_up, y, 4, 64, pool); },
       [&] { k3k::swiglu(k3k::KernelPath::kGeneric, x, short_up, y, 4, 64, pool); });
  same([&] { k3k::swiglu(k3k::KernelPath::kRvv, x, x, y, -1, 64, pool); },
       [&] { k3k::swiglu(k3k::KernelPath::kGeneric, x, x, y, -1, 64, pool); });
  same([&] { k3k::residual_add(k3k::KernelPath::kRvv, x, x, short_up, 4, 64, pool); },
       [&] { k3k::residual_add(k3k::KernelPath::kGeneric, x, x, short_up, 4, 64, pool); });
  same([&] { k3k::residual_add(k3k::KernelPath::kRvv, x, short_up, y, 4, 64, pool); },
       [&] { k3k::residual_add(k3k::KernelPath::kGeneric, x, short_up, y, 4, 64, pool); });
}

}  // namespace
