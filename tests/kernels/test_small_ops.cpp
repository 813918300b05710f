// RMSNorm (incl. per-head QK norm), SwiGLU and residual add vs their float64 references within the
// derived bounds; in-place use; determinism across worker counts; mutations; argument errors.
#include <gtest/gtest.h>

#include "support/test_data.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "k3k/reference/compare.h"
#include "k3k/reference/small_ops.h"
#include "k3k/seeded_random.h"
#include "k3k/small_ops.h"
#include "k3k/worker_pool.h"

namespace {

using k3test::thrown_message;

namespace ref = k3k::reference;

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, double mean = 0.0,
                                 double stddev = 1.0) {
  k3k::SeededRandom rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal(mean, stddev));
  return v;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void expect_within(const std::vector<float>& got, const std::vector<double>& expect,
                   const std::vector<double>& bound, const std::string& what) {
  const auto r = ref::compare_to_reference(got, expect, bound);
  EXPECT_TRUE(r.pass) << what << ": " << ref::describe(r, got, expect, bound);
  std::printf("[ stats    ] %s: max_abs_err %.3g, max_rel_err %.3g, max err/bound %.3g\n",
              what.c_str(), r.max_abs_err, r.max_rel_err, r.worst_ratio);
}

struct NormCase {
  const char* name;
  std::int64_t rows;
  int dim;
  float eps;
  double scale;  // input magnitude
};

class RmsNormVsReference : public ::testing::TestWithParam<NormCase> {};

TEST_P(RmsNormVsReference, WithinBoundInPlaceAndDeterministic) {
  const NormCase& c = GetParam();
  const auto x = random_floats(static_cast<std::size_t>(c.rows * c.dim), 1, 0.1, c.scale);
  const auto w = random_floats(static_cast<std::size_t>(c.dim), 2, 1.0, 0.3);
  std::vector<float> y(x.size());
  k3k::WorkerPool pool2(2);
  k3k::rmsnorm(k3k::KernelPath::kGeneric, x, w, y, c.rows, c.dim, c.eps, pool2);
  const auto expect = ref::rmsnorm(x, w, c.rows, c.dim, c.eps);
  const auto bound = ref::rmsnorm_bound(expect, c.dim);
  expect_within(y, expect, bound, std::string("rmsnorm ") + c.name);
  for (int workers : {1, 3, 5}) {
    k3k::WorkerPool pool(workers);
    std::vector<float> z = x;  // in place
    k3k::rmsnorm(k3k::KernelPath::kGeneric, z, w, z, c.rows, c.dim, c.eps, pool);
    EXPECT_TRUE(bitwise_equal(y, z)) << "workers " << workers;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RmsNormVsReference,
    ::testing::Values(NormCase{"hidden_2048", 9, 2048, 1e-6f, 1.0},
                      NormCase{"qk_norm_16heads_d128", 16 * 37, 128, 1e-6f, 3.0},
                      NormCase{"qk_norm_2heads_d256", 2 * 130, 256, 1e-6f, 0.5},
                      NormCase{"dim100_eps_dominant", 33, 100, 1e-2f, 0.01},
                      NormCase{"dim1_large", 1000, 1, 1e-5f, 50.0}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(RmsNormMutation, WrongEpsAndPerturbationFail) {
  const std::int64_t rows = 8;
  const int dim = 128;
  const auto x = random_floats(rows * dim, 3, 0.0, 1e-3);  // mean(x^2) ~ 1e-6: eps matters
  const auto w = random_floats(dim, 4, 1.0, 0.2);
  std::vector<float> y(x.size());
  k3k::WorkerPool pool(2);
  k3k::rmsnorm(k3k::KernelPath::kGeneric, x, w, y, rows, dim, 1e-5f, pool);  // the bug: eps 1e-5 instead of 1e-6
  const auto expect = ref::rmsnorm(x, w, rows, dim, 1e-6f);
  const auto bound = ref::rmsnorm_bound(expect, dim);
  EXPECT_FALSE(ref::compare_to_reference(y, expect, bound).pass);
  k3k::rmsnorm(k3k::KernelPath::kGeneric, x, w, y, rows, dim, 1e-6f, pool);
  ASSERT_TRUE(ref::compare_to_reference(y, expect, bound).pass);
  y[100] = static_cast<float>(expect[100] + 3.0 * bound[100]);
  EXPECT_FALSE(ref::compare_to_reference(y, expect, bound).pass);
}

TEST(SwiGlu, WithinBoundIncludingExtremesAndDeterministic) {
  const std::int64_t rows = 7, dim = 6144;  // Qwen3-1.7B intermediate size
  auto gate = random_floats(static_cast<std::size_t>(rows * dim), 5, 0.0, 3.0);
  const auto up = random_floats(static_cast<std::size_t>(rows * dim), 6, 0.0, 2.0);
  const float extremes[] = {0.0f,    -0.0f, 1e-30f, -1e-30f, 88.0f, -88.0f, -88.8f,
                            -100.0f, -1e4f, 100.0f, 1e4f,    20.0f, -20.0f, 1e-8f};
  for (std::size_t i = 0; i < std::size(extremes); ++i) gate[i * 97] = extremes[i];
  std::vector<float> out(gate.size());
  k3k::WorkerPool pool2(2);
  k3k::swiglu(k3k::KernelPath::kGeneric, gate, up, out, rows, dim, pool2);
  const auto expect = ref::swiglu(gate, up);
  expect_within(out, expect, ref::swiglu_bound(gate, up, expect), "swiglu");
  for (int workers : {1, 3, 5}) {
    k3k::WorkerPool pool(workers);
    std::vector<float> in_place = gate;
    k3k::swiglu(k3k::KernelPath::kGeneric, in_place, up, in_place, rows, dim, pool);
    EXPECT_TRUE(bitwise_equal(out, in_place)) << "workers " << workers;
  }
}

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

TEST(ResidualAdd, WithinBoundInPlaceAndDeterministic) {
  const std::int64_t rows = 5, dim = 2048 * 7 + 3;
  const auto a = random_floats(static_cast<std::size_t>(rows * dim), 9, 0.0, 10.0);
  const auto b = random_floats(static_cast<std::size_t>(rows * dim), 10, 0.0, 0.01);
  std::vector<float> out(a.size());
  k3k::WorkerPool pool2(2);
  k3k::residual_add(k3k::KernelPath::kGeneric, a, b, out, rows, dim, pool2);
  const auto expect = ref::residual_add(a, b);
  const auto bound = ref::residual_add_bound(expect);
  expect_within(out, expect, bound, "residual_add");
  for (int workers : {1, 3, 5}) {
    k3k::WorkerPool pool(workers);
    std::vector<float> in_place = a;
    k3k::residual_add(k3k::KernelPath::kGeneric, in_place, b, in_place, rows, dim, pool);
    EXPECT_TRUE(bitwise_equal(out, in_place)) << "workers " << workers;
    std::vector<float> in_place_b = b;
    k3k::residual_add(k3k::KernelPath::kGeneric, a, in_place_b, in_place_b, rows, dim, pool);
    EXPECT_TRUE(bitwise_equal(out, in_place_b)) << "workers " << workers;
  }
  // Mutation: dropping the residual (out = a) is caught, as is a 3-bound perturbation.
  EXPECT_FALSE(ref::compare_to_reference(a, expect, bound).pass);
  std::vector<float> bad = out;
  bad[12345] = static_cast<float>(expect[12345] * (1.0 + 4.0 * 0x1.0p-24));
  EXPECT_FALSE(ref::compare_to_reference(bad, expect, bound).pass);
}

TEST(SmallOpsArgs, BadArgumentsNameTheField) {
  k3k::WorkerPool pool(1);
  std::vector<float> x(4 * 64), w(64), y(4 * 64), w_bad(63);
  EXPECT_NE(thrown_message([&] {
              k3k::rmsnorm(k3k::KernelPath::kGeneric, x, w_bad, y, 4, 64, 1e-6f, pool);
            }).find("weight.size() (63)"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] { k3k::rmsnorm(k3k::KernelPath::kGeneric, x, w, y, 5, 64, 1e-6f, pool); }).find("x.size()"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] { k3k::rmsnorm(k3k::KernelPath::kGeneric, x, w, y, 4, 0, 1e-6f, pool); }).find("dim (0)"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] { k3k::rmsnorm(k3k::KernelPath::kGeneric, x, w, y, 4, 64, -1.0f, pool); }).find("eps (-1)"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] {
              k3k::rmsnorm(k3k::KernelPath::kGeneric, std::span<const float>(x).first(128), std::span<const float>(w),
                           std::span<float>(x).subspan(64, 128), 2, 64, 1e-6f, pool);
            }).find("partially overlaps"),
            std::string::npos);
  std::vector<float> short_up(4 * 64 - 1);
  EXPECT_NE(thrown_message([&] { k3k::swiglu(k3k::KernelPath::kGeneric, x, short_up, y, 4, 64, pool); }).find("up.size()"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] { k3k::swiglu(k3k::KernelPath::kGeneric, x, x, y, -1, 64, pool); }).find("rows (-1)"),
            std::string::npos);
  EXPECT_NE(
      thrown_message([&] { k3k::residual_add(k3k::KernelPath::kGeneric, x, x, short_up, 4, 64, pool); }).find("out.size()"),
      std::string::npos);
  EXPECT_NE(
      thrown_message([&] { k3k::residual_add(k3k::KernelPath::kGeneric, x, short_up, y, 4, 64, pool); }).find("b.size()"),
      std::string::npos);
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
