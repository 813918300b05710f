// RoPE: cos/sin table, rope_apply vs the float64 reference within the derived bound, determinism,
// mutations the check must catch, argument validation.
#include <gtest/gtest.h>

#include "support/test_data.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "k3k/reference/attention.h"
#include "k3k/reference/compare.h"
#include "k3k/rope.h"
#include "k3k/seeded_random.h"
#include "k3k/worker_pool.h"

namespace {

using k3test::random_floats;
using k3test::thrown_message;

namespace ref = k3k::reference;

struct RopeCase {
  const char* name;
  int head_dim;
  k3k::RopeConfig rope;
  std::int64_t first_pos;
  std::int64_t tokens;
};

class RopeVsReference : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeVsReference, WithinBoundAndPassThroughExact) {
  const RopeCase& c = GetParam();
  const int heads = 3;
  const auto x = random_floats(static_cast<std::size_t>(c.tokens * heads * c.head_dim), 11, 2.0);
  std::vector<float> y = x;
  k3k::WorkerPool pool(2);
  k3k::rope_apply(y, c.tokens, heads, c.head_dim, c.first_pos, c.rope, pool);
  const auto expect = ref::rope(x, c.tokens, heads, c.head_dim, c.first_pos, c.rope);
  const auto bound = ref::rope_bound(x, c.tokens, heads, c.head_dim, c.first_pos, c.rope);
  const auto r = ref::compare_to_reference(y, expect, bound);
  EXPECT_TRUE(r.pass) << c.name << ": " << ref::describe(r, y, expect, bound);
  std::printf("[ stats    ] rope %s: max_abs_err %.3g, max err/bound %.3g\n", c.name, r.max_abs_err,
              r.worst_ratio);
  // Dims >= rotary_dim are untouched, bit for bit.
  for (std::int64_t row = 0; row < c.tokens * heads; ++row) {
    for (int d = c.rope.rotary_dim; d < c.head_dim; ++d) {
      const auto i = static_cast<std::size_t>(row * c.head_dim + d);
      ASSERT_EQ(std::memcmp(&y[i], &x[i], sizeof(float)), 0) << "pass-through dim " << d;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RopeVsReference,
    ::testing::Values(RopeCase{"qwen3_d128_pos0", 128, k3k::kQwen3Rope, 0, 70},
                      RopeCase{"qwen3_d128_pos40900", 128, k3k::kQwen3Rope, 40900, 60},
                      RopeCase{"qwen35_d256_rot64_pos0", 256, k3k::kQwen35Rope, 0, 33},
                      RopeCase{"qwen35_d256_rot64_pos40950", 256, k3k::kQwen35Rope, 40950, 10},
                      RopeCase{"d64_theta1e4", 64, {64, 1.0e4}, 17, 5},
                      RopeCase{"d96_rot32", 96, {32, 5.0e5}, 1000, 4}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(RopeTable, FloatOfDoubleAngleAndBuildersAgree) {
  const k3k::RopeConfig rope = k3k::kQwen35Rope;
  k3k::WorkerPool pool(3);
  const k3k::RopeTable parallel(rope, 40800, 160, pool);
  const k3k::RopeTable serial(rope, 40800, 160);
  ASSERT_EQ(parallel.half(), 32);
  for (std::int64_t p = 40800; p < 40960; ++p) {
    for (int i = 0; i < 32; ++i) {
      const double angle = static_cast<double>(p) * k3k::rope_inv_freq(rope, i);
      ASSERT_EQ(parallel.cos_at(p)[i], static_cast<float>(std::cos(angle)));
      ASSERT_EQ(parallel.sin_at(p)[i], static_cast<float>(std::sin(angle)));
      ASSERT_EQ(serial.cos_at(p)[i], parallel.cos_at(p)[i]);
      ASSERT_EQ(serial.sin_at(p)[i], parallel.sin_at(p)[i]);
    }
  }
  EXPECT_DOUBLE_EQ(k3k::rope_inv_freq(rope, 0), 1.0);
  EXPECT_NEAR(k3k::rope_inv_freq(rope, 16), std::pow(1.0e7, -0.5), 1e-18);
}

TEST(RopeApply, BitwiseIdenticalAcrossWorkerCounts) {
  const int heads = 8, hd = 128;
  const std::int64_t tokens = 77;
  const auto x = random_floats(static_cast<std::size_t>(tokens * heads * hd), 5);
  std::vector<float> first;
  for (int workers : {1, 2, 3, 5}) {
    k3k::WorkerPool pool(workers);
    std::vector<float> y = x;
    k3k::rope_apply(y, tokens, heads, hd, 123, k3k::kQwen3Rope, pool);
    if (first.empty()) {
      first = y;
    } else {
      ASSERT_EQ(std::memcmp(first.data(), y.data(), y.size() * sizeof(float)), 0) << workers;
    }
  }
}

// Mutations: the bound must be tight enough to reject plausible RoPE bugs.
TEST(RopeMutation, FloatAnglesFailAtLongPositions) {
  const int hd = 128, heads = 2;
  const std::int64_t tokens = 8, first_pos = 40000;
  const k3k::RopeConfig rope = k3k::kQwen3Rope;
  const auto x = random_floats(static_cast<std::size_t>(tokens * heads * hd), 21);
  std::vector<float> y = x;
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int h = 0; h < heads; ++h) {
      float* row = y.data() + (t * heads + h) * hd;
      for (int i = 0; i < hd / 2; ++i) {
        const float angle = static_cast<float>(first_pos + t) *
                            static_cast<float>(k3k::rope_inv_freq(rope, i));  // the bug
        const float a = row[i], b = row[i + hd / 2];
        row[i] = a * std::cos(angle) - b * std::sin(angle);
        row[i + hd / 2] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
  }
  const auto expect = ref::rope(x, tokens, heads, hd, first_pos, rope);
  const auto bound = ref::rope_bound(x, tokens, heads, hd, first_pos, rope);
  EXPECT_FALSE(ref::compare_to_reference(y, expect, bound).pass);
}

TEST(RopeMutation, InterleavedPairingAndPerturbationFail) {
  const int hd = 64, heads = 1;
  const std::int64_t tokens = 4;
  const k3k::RopeConfig rope{64, 1.0e4};
  const auto x = random_floats(static_cast<std::size_t>(tokens * hd), 22);
  const auto expect = ref::rope(x, tokens, heads, hd, 1, rope);
  const auto bound = ref::rope_bound(x, tokens, heads, hd, 1, rope);
  // GPT-J style pairs (2i, 2i+1) instead of (i, i + d/2).
  std::vector<float> y = x;
  for (std::int64_t t = 0; t < tokens; ++t) {
    for (int i = 0; i < hd / 2; ++i) {
      const double angle = static_cast<double>(1 + t) * k3k::rope_inv_freq(rope, i);
      const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
      float* row = y.data() + t * hd;
      const float a = row[2 * i], b = row[2 * i + 1];
      row[2 * i] = a * c - b * s;
      row[2 * i + 1] = b * c + a * s;
    }
  }
  EXPECT_FALSE(ref::compare_to_reference(y, expect, bound).pass);
  // The correct kernel output, one element pushed 3 bounds away.
  std::vector<float> z = x;
  k3k::WorkerPool pool(1);
  k3k::rope_apply(z, tokens, heads, hd, 1, rope, pool);
  ASSERT_TRUE(ref::compare_to_reference(z, expect, bound).pass);
  z[5] = static_cast<float>(expect[5] + 3.0 * bound[5]);
  const auto r = ref::compare_to_reference(z, expect, bound);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.failures, 1);
  EXPECT_EQ(r.first_failure, 5);
}

TEST(RopeArgs, BadArgumentsNameTheField) {
  k3k::WorkerPool pool(1);
  std::vector<float> x(2 * 128);
  EXPECT_NE(thrown_message([&] {
              k3k::rope_apply(x, 2, 1, 128, 0, {127, 1e6}, pool);
            }).find("rotary_dim (127)"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] {
              k3k::rope_apply(x, 2, 1, 128, 0, {130, 1e6}, pool);
            }).find("rotary_dim (130)"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] {
              k3k::rope_apply(x, 2, 1, 128, 0, {128, -1.0}, pool);
            }).find("theta"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] {
              k3k::rope_apply(x, 3, 1, 128, 0, k3k::kQwen3Rope, pool);
            }).find("x.size()"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] {
              k3k::rope_apply(x, 2, 1, 128, -1, k3k::kQwen3Rope, pool);
            }).find("first_pos"),
            std::string::npos);
  EXPECT_NE(thrown_message([&] {
              k3k::rope_apply(x, 2, 0, 128, 0, k3k::kQwen3Rope, pool);
            }).find("heads (0)"),
            std::string::npos);
}

}  // namespace
