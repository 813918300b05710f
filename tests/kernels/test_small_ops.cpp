// RMSNorm (incl. per-head QK norm), SwiGLU and residual add on every layer
// (support/layer_sweep.h) vs their float64 references within the layer's derived bounds (RMSNorm
// with the layer's sum depth), a layer other than generic within the sum of both layers' bounds of
// the generic layer (residual add bit-exact); odd shapes and Qwen3 shapes; in-place use; bitwise
// identical across worker counts; mutations; argument errors worded as the generic layer's. Plus
// the layer-free checks of the comparison itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "k3k/reference/compare.h"
#include "k3k/reference/small_ops.h"
#include "k3k/small_ops.h"
#include "k3k/worker_pool.h"
#include "support/layer_bounds.h"
#include "support/layer_checks.h"
#include "support/layer_sweep.h"
#include "support/test_data.h"

namespace {

using k3k::KernelPath;
using k3test::bitwise_equal;
using k3test::random_floats;
using k3test::thrown_message;
namespace ref = k3k::reference;

// ---- RMSNorm ------------------------------------------------------------------------------------

struct NormCase {
  const char* name;
  std::int64_t rows;
  int dim;
  float eps;
  double scale;  // input magnitude
};

// clang-format off
const NormCase kNormShapes[] = {
    NormCase{"hidden_2048",                9,       2048, 1e-6f, 1.0},
    NormCase{"qwen3_0p6b_hidden_1024",     5,       1024, 1e-6f, 1.0},
    NormCase{"qk_norm_16heads_d128",       16 * 37, 128,  1e-6f, 3.0},
    NormCase{"qk_norm_16heads_d128_S3",    16 * 3,  128,  1e-6f, 3.0},
    NormCase{"qk_norm_2heads_d256",        2 * 130, 256,  1e-6f, 0.5},
    NormCase{"qk_norm_d256",               2 * 17,  256,  1e-6f, 0.5},
    NormCase{"dim257_odd",                 7,       257,  1e-6f, 2.0},
    NormCase{"dim100_eps_dominant",        33,      100,  1e-2f, 0.01},
    NormCase{"dim100_eps_dominant_9rows",  9,       100,  1e-2f, 0.01},
    NormCase{"dim1_large",                 1000,    1,    1e-5f, 50.0},
    NormCase{"dim1",                       130,     1,    1e-5f, 50.0},
    NormCase{"many_rows_multi_task",       130,     131,  1e-6f, 1.0}};
// clang-format on

class RmsNorm : public k3test::OnLayerWith<NormCase> {};

TEST_P(RmsNorm, WithinBoundInPlaceAndDeterministic) {
  const NormCase& c = test_case();
  const auto x = random_floats(static_cast<std::size_t>(c.rows * c.dim), 1, 0.1, c.scale);
  const auto w = random_floats(static_cast<std::size_t>(c.dim), 2, 1.0, 0.3);
  std::vector<float> y(x.size());
  k3k::WorkerPool pool2(2);
  k3k::rmsnorm(layer(), x, w, y, c.rows, c.dim, c.eps, pool2);
  const auto expect = ref::rmsnorm(x, w, c.rows, c.dim, c.eps);
  const auto bound = ref::rmsnorm_bound(expect, c.dim, k3test::sum_depth(layer(), c.dim));
  const std::string what = std::string(k3k::to_string(layer())) + " rmsnorm " + c.name;
  k3test::expect_within(what, y, expect, bound);
  if (!is_generic()) {
    std::vector<float> gen(x.size());
    k3k::rmsnorm(KernelPath::kGeneric, x, w, gen, c.rows, c.dim, c.eps, pool2);
    k3test::expect_near_generic(what, y, gen,
                                k3test::sum_of(bound, ref::rmsnorm_bound(expect, c.dim)));
  }
  for (int workers : {1, 3, 5}) {
    k3k::WorkerPool pool(workers);
    std::vector<float> z = x;  // in place
    k3k::rmsnorm(layer(), z, w, z, c.rows, c.dim, c.eps, pool);
    EXPECT_TRUE(bitwise_equal(y, z)) << "workers " << workers;
  }
}

K3_SWEEP_LAYERS_AND_CASES(RmsNorm, kNormShapes);

class RmsNormMutation : public k3test::OnLayer {};

TEST_P(RmsNormMutation, WrongEpsAndPerturbationFail) {
  const std::int64_t rows = 8;
  const int dim = 128;
  const auto x = random_floats(rows * dim, 3, 0.0, 1e-3);  // mean(x^2) ~ 1e-6: eps matters
  const auto w = random_floats(dim, 4, 1.0, 0.2);
  std::vector<float> y(x.size());
  k3k::WorkerPool pool(2);
  const auto expect = ref::rmsnorm(x, w, rows, dim, 1e-6f);
  const auto bound = ref::rmsnorm_bound(expect, dim, k3test::sum_depth(layer(), dim));
  k3k::rmsnorm(layer(), x, w, y, rows, dim, 1e-5f, pool);  // the bug: eps 1e-5 instead of 1e-6
  EXPECT_FALSE(ref::compare_to_reference(y, expect, bound).pass);
  k3k::rmsnorm(layer(), x, w, y, rows, dim, 1e-6f, pool);
  ASSERT_TRUE(ref::compare_to_reference(y, expect, bound).pass);
  y[100] = static_cast<float>(expect[100] + 2.0 * bound[100]);
  EXPECT_FALSE(ref::compare_to_reference(y, expect, bound).pass);
}

K3_SWEEP_LAYERS(RmsNormMutation);

// ---- SwiGLU -------------------------------------------------------------------------------------

class SwiGlu : public k3test::OnLayer {};

TEST_P(SwiGlu, WithinBoundIncludingExtremesAndDeterministic) {
  for (const auto& [rows, dim] : {std::pair<std::int64_t, std::int64_t>{7, 6144},  // Qwen3-1.7B
                                  std::pair<std::int64_t, std::int64_t>{3, 3072},  // Qwen3-0.6B
                                  std::pair<std::int64_t, std::int64_t>{5, 37}}) {
    auto gate = random_floats(static_cast<std::size_t>(rows * dim), 5 + dim, 0.0, 3.0);
    const auto up = random_floats(static_cast<std::size_t>(rows * dim), 6 + dim, 0.0, 2.0);
    const float extremes[] = {0.0f,   -0.0f,  1e-30f, -1e-30f, 88.0f,  -88.0f, -88.72f,
                              -88.8f, -100.f, -1e4f,  100.0f,  1e4f,   20.0f,  -20.0f,
                              1e-8f,  -87.0f, -86.5f, 103.0f,  1e-40f, -1e-40f};
    for (std::size_t i = 0; i < std::size(extremes); ++i) gate[i * 7] = extremes[i];
    std::vector<float> out(gate.size());
    k3k::WorkerPool pool2(2);
    k3k::swiglu(layer(), gate, up, out, rows, dim, pool2);
    const auto expect = ref::swiglu(gate, up);
    const auto bound = ref::swiglu_bound(gate, up, expect);
    const std::string what = std::string(k3k::to_string(layer())) + " swiglu " +
                             std::to_string(rows) + "x" + std::to_string(dim);
    k3test::expect_within(what, out, expect, bound);
    if (!is_generic()) {
      std::vector<float> gen(gate.size());
      k3k::swiglu(KernelPath::kGeneric, gate, up, gen, rows, dim, pool2);
      k3test::expect_near_generic(what, out, gen, k3test::sum_of(bound, bound));
    }
    // The same ratio without the exp-overflow elements (whose bound is |out| itself).
    std::vector<float> o2;
    std::vector<double> e2, b2;
    for (std::size_t i = 0; i < gate.size(); ++i) {
      if (-static_cast<double>(gate[i]) > 88.72) continue;
      o2.push_back(out[i]);
      e2.push_back(expect[i]);
      b2.push_back(bound[i]);
    }
    k3test::expect_within(what + " without exp overflow", o2, e2, b2);
    for (int workers : {1, 3, 5}) {
      k3k::WorkerPool pool(workers);
      std::vector<float> in_place = gate;
      k3k::swiglu(layer(), in_place, up, in_place, rows, dim, pool);
      EXPECT_TRUE(bitwise_equal(out, in_place)) << "workers " << workers;
    }
  }
}

TEST_P(SwiGlu, MultiTaskAndMutation) {
  const std::int64_t rows = 2, dim = 16384 + 33;  // two tasks, a partial strip
  const auto gate = random_floats(static_cast<std::size_t>(rows * dim), 15, 0.0, 2.0);
  const auto up = random_floats(static_cast<std::size_t>(rows * dim), 16);
  std::vector<float> a(gate.size()), b(gate.size());
  k3k::WorkerPool pool1(1), pool3(3);
  k3k::swiglu(layer(), gate, up, a, rows, dim, pool1);
  k3k::swiglu(layer(), gate, up, b, rows, dim, pool3);
  EXPECT_TRUE(bitwise_equal(a, b));
  const auto expect = ref::swiglu(gate, up);
  const auto bound = ref::swiglu_bound(gate, up, expect);
  ASSERT_TRUE(ref::compare_to_reference(a, expect, bound).pass);
  a[20000] = static_cast<float>(expect[20000] + 2.0 * bound[20000]);
  EXPECT_FALSE(ref::compare_to_reference(a, expect, bound).pass);
}

K3_SWEEP_LAYERS(SwiGlu);

// ---- residual add -------------------------------------------------------------------------------

class ResidualAdd : public k3test::OnLayer {};

TEST_P(ResidualAdd, BitExactWithGenericWithinBoundInPlaceAndDeterministic) {
  // 2048 * 7 + 3 and Qwen3-0.6B hidden x 11 + 3: odd tails, several tasks.
  for (const auto& [rows, dim] : {std::pair<std::int64_t, std::int64_t>{5, 2048 * 7 + 3},
                                  std::pair<std::int64_t, std::int64_t>{3, 1024 * 11 + 3}}) {
    const auto a = random_floats(static_cast<std::size_t>(rows * dim), 9, 0.0, 10.0);
    const auto b = random_floats(static_cast<std::size_t>(rows * dim), 10, 0.0, 0.01);
    std::vector<float> out(a.size());
    k3k::WorkerPool pool2(2);
    k3k::residual_add(layer(), a, b, out, rows, dim, pool2);
    const auto expect = ref::residual_add(a, b);
    const auto bound = ref::residual_add_bound(expect);
    k3test::expect_within(std::string(k3k::to_string(layer())) + " residual_add " +
                              std::to_string(rows) + "x" + std::to_string(dim),
                          out, expect, bound);
    if (!is_generic()) {
      std::vector<float> gen(a.size());
      k3k::residual_add(KernelPath::kGeneric, a, b, gen, rows, dim, pool2);
      EXPECT_TRUE(bitwise_equal(out, gen));
    }
    for (int workers : {1, 3, 5}) {
      k3k::WorkerPool pool(workers);
      std::vector<float> in_a = a, in_b = b;
      k3k::residual_add(layer(), in_a, b, in_a, rows, dim, pool);
      k3k::residual_add(layer(), a, in_b, in_b, rows, dim, pool);
      EXPECT_TRUE(bitwise_equal(out, in_a)) << "workers " << workers;
      EXPECT_TRUE(bitwise_equal(out, in_b)) << "workers " << workers;
    }
    // Mutations: dropping the residual, and a perturbation by 4 bounds (the bound is half an ulp
    // or less, so 2 bounds could round back onto the float grid inside it) or by 4 relative ulps.
    EXPECT_FALSE(ref::compare_to_reference(a, expect, bound).pass);
    std::vector<float> bad = out;
    bad[12345] = static_cast<float>(expect[12345] + 4.0 * std::max(bound[12345], 0x1.0p-149));
    EXPECT_FALSE(ref::compare_to_reference(bad, expect, bound).pass);
    bad = out;
    bad[12345] = static_cast<float>(expect[12345] * (1.0 + 4.0 * 0x1.0p-24));
    EXPECT_FALSE(ref::compare_to_reference(bad, expect, bound).pass);
  }
}

K3_SWEEP_LAYERS(ResidualAdd);

// ---- arguments ----------------------------------------------------------------------------------

class SmallOpsArgs : public k3test::OnLayer {};

TEST_P(SmallOpsArgs, BadArgumentsNameTheFieldAsTheGenericLayer) {
  k3k::WorkerPool pool(1);
  std::vector<float> x(4 * 64), w(64), y(4 * 64), w_bad(63), short_up(4 * 64 - 1);
  auto rmsnorm_rejects = [&](const std::string& field, std::span<const float> in,
                             std::span<const float> weight, std::span<float> out, std::int64_t rows,
                             int dim, float eps) {
    k3test::expect_rejected(layer(), field, [&](KernelPath path) {
      k3k::rmsnorm(path, in, weight, out, rows, dim, eps, pool);
    });
  };
  rmsnorm_rejects("weight.size() (63)", x, w_bad, y, 4, 64, 1e-6f);
  rmsnorm_rejects("x.size()", x, w, y, 5, 64, 1e-6f);
  rmsnorm_rejects("dim (0)", x, w, y, 4, 0, 1e-6f);
  rmsnorm_rejects("eps (-1)", x, w, y, 4, 64, -1.0f);
  rmsnorm_rejects("partially overlaps", std::span<const float>(x).first(128), w,
                  std::span<float>(x).subspan(64, 128), 2, 64, 1e-6f);
  k3test::expect_rejected(layer(), "up.size()",
                          [&](KernelPath path) { k3k::swiglu(path, x, short_up, y, 4, 64, pool); });
  k3test::expect_rejected(layer(), "rows (-1)",
                          [&](KernelPath path) { k3k::swiglu(path, x, x, y, -1, 64, pool); });
  k3test::expect_rejected(layer(), "out.size()", [&](KernelPath path) {
    k3k::residual_add(path, x, x, short_up, 4, 64, pool);
  });
  k3test::expect_rejected(layer(), "b.size()", [&](KernelPath path) {
    k3k::residual_add(path, x, short_up, y, 4, 64, pool);
  });
}

K3_SWEEP_LAYERS(SmallOpsArgs);

// ---- layer-free: the comparisons themselves
// ------------------------------------------------------

TEST(SwiGluMutation, SigmoidInsteadOfSiluFails) {
  const auto gate = random_floats(4096, 7, 0.0, 2.0);
  const auto up = random_floats(4096, 8);
  std::vector<float> out(gate.size());
  for (std::size_t i = 0; i < gate.size(); ++i) {
    out[i] = 1.0f / (1.0f + std::exp(-gate[i])) * up[i];  // the bug: sigmoid(g) * up
  }
  const auto expect = ref::swiglu(gate, up);
  EXPECT_FALSE(ref::compare_to_reference(out, expect, ref::swiglu_bound(gate, up, expect)).pass);
}

TEST(CompareToReference, HandlesNanSizesAndZeroBounds) {
  const std::vector<float> got{1.0f, NAN, 2.0f};
  const std::vector<double> expect{1.0, 1.0, 2.0};
  const std::vector<double> bound{0.0, 1e30, 0.0};
  const auto r = ref::compare_to_reference(got, expect, bound);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.failures, 1);
  EXPECT_EQ(r.first_failure, 1);
  EXPECT_EQ(r.worst_index, 1);
  const std::vector<double> short_ref{1.0};
  EXPECT_NE(thrown_message([&] {
              ref::compare_to_reference(got, short_ref, bound);
            }).find("sizes differ"),
            std::string::npos);
  const std::vector<double> neg{0.0, -1.0, 0.0};
  EXPECT_NE(thrown_message([&] { ref::compare_to_reference(got, expect, neg); }).find("bound[1]"),
            std::string::npos);
  const std::vector<float> close{1.0f, 1.5f, 2.0f};
  const auto ok = ref::compare_to_reference(close, expect, std::vector<double>{0.0, 0.5, 0.0});
  EXPECT_TRUE(ok.pass);
  EXPECT_DOUBLE_EQ(ok.max_abs_err, 0.5);
  EXPECT_DOUBLE_EQ(ok.max_rel_err, 0.5);
  EXPECT_EQ(ok.worst_index, 1);
}

}  // namespace
