// RVV Linear and embedding vs the generic layer and the float64 reference.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "k3k/embedding.h"
#include "k3k/reference/compare.h"
#include "k3k/reference/linear.h"
#include "k3k/attention.h"
#include "k3k/embedding.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/small_ops.h"
#include "k3k/seeded_random.h"
#include "support/linear_checks.h"
#include "support/test_data.h"

namespace {

using namespace k3k;


using k3test::hqq_weights;

// Integer parts: with scale 1, beta 0 and integer activations whose row absmax is 127 (so sa = 1 and
// qa = a), every output equals sum_b D_b exactly (all partial sums < 2^24), for both layers.
TEST(RvvLinear, IntegerDotProductsExact) {
  SeededRandom rng(5);
  for (std::int64_t m : {1, 4, 5}) {
    const std::int64_t n = 70, k = 320;
    // beta 0, scale 1: outputs are the integer dot products themselves
    const W4B64Storage s = k3test::random_code_storage(n, k, rng, [](std::size_t i) { return i % 2 ? 1.0f : 0.0f; });
    const W4B64Packed w = pack_w4b64_generic(s);
    std::vector<float> a(static_cast<std::size_t>(m * k));
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t i = 0; i < k; ++i) a[r * k + i] = static_cast<float>(static_cast<int>(rng.next() % 255) - 127);
      a[r * k + (r * 7) % k] = (r % 2) ? -127.0f : 127.0f;
    }
    WorkerPool pool(2);
    const bool decode = m == 1;
    const auto layout = decode ? ActivationLayout::kRowK256 : ActivationLayout::kRowsM4;
    auto act = make_packed_activations(m, k, layout);
    if (decode) k3k::quantize_pack_decode(k3k::KernelPath::kRvv, a.data(), act);
    else k3k::quantize_pack_prefill(k3k::KernelPath::kRvv, a.data(), act, pool);
    std::vector<float> got_rvv(static_cast<std::size_t>(m * n)), got_gen(got_rvv.size());
    LinearEpilogue ep;
    if (decode) {
      k3k::linear_decode_w4b64(k3k::KernelPath::kRvv, act, w, ep, got_rvv.data(), pool, {});
      k3k::linear_decode_w4b64(k3k::KernelPath::kGeneric, act, w, ep, got_gen.data(), pool, {});
    } else {
      k3k::linear_prefill_w4b64(k3k::KernelPath::kRvv, act, w, ep, got_rvv.data(), pool, {});
      k3k::linear_prefill_w4b64(k3k::KernelPath::kGeneric, act, w, ep, got_gen.data(), pool, {});
    }
    for (std::int64_t r = 0; r < m; ++r) {
      ASSERT_EQ(act.scale[r], 1.0f);
      for (std::int64_t col = 0; col < n; ++col) {
        std::int64_t d = 0;
        for (std::int64_t i = 0; i < k; ++i) d += static_cast<std::int64_t>(a[r * k + i]) * (s.code(col, i) - 8);
        ASSERT_EQ(got_rvv[r * n + col], static_cast<float>(d)) << "rvv m=" << m << " row " << r << " col " << col;
        ASSERT_EQ(got_gen[r * n + col], static_cast<float>(d)) << "generic m=" << m << " row " << r << " col " << col;
      }
    }
  }
}

struct Case {
  std::int64_t m, n, k;
  int tile_n;
  OutputLayout layout;
  bool bias, residual, clamp;
};

void check_case(const Case& c, std::uint64_t seed) {
  SCOPED_TRACE(testing::Message() << "m=" << c.m << " n=" << c.n << " k=" << c.k << " tile_n=" << c.tile_n
                                  << " c4=" << (c.layout == OutputLayout::kC4) << " bias=" << c.bias
                                  << " residual=" << c.residual << " clamp=" << c.clamp);
  const W4B64Storage s = hqq_weights(c.n, c.k, seed);
  const W4B64Packed w = pack_w4b64_generic(s);
  const auto a = k3test::normal_activations(c.m, c.k, seed + 1);
  const auto bias = k3test::normal_activations(1, c.n, seed + 2);
  const std::int64_t elems = output_elements(c.layout, c.m, c.n);
  const auto residual = k3test::normal_activations(1, elems, seed + 3);
  LinearEpilogue ep;
  ep.layout = c.layout;
  ep.bias = c.bias ? bias.data() : nullptr;
  ep.residual = c.residual ? residual.data() : nullptr;
  if (c.clamp) {
    ep.clamp_min = -0.5f;
    ep.clamp_max = 0.5f;
  }
  const bool decode = c.m == 1 && c.k % 128 == 0;  // exercise both kernels at M = 1
  auto act = make_packed_activations(c.m, c.k, decode ? ActivationLayout::kRowK256 : ActivationLayout::kRowsM4);
  std::vector<float> out_rvv(static_cast<std::size_t>(elems)), out_gen(out_rvv.size());
  std::vector<std::vector<float>> by_workers;
  for (int workers : {1, 3}) {
    WorkerPool pool(workers);
    if (decode) k3k::quantize_pack_decode(k3k::KernelPath::kRvv, a.data(), act);
    else k3k::quantize_pack_prefill(k3k::KernelPath::kRvv, a.data(), act, pool);
    LinearTiling tiling{c.tile_n};
    std::vector<float> out(static_cast<std::size_t>(elems), -1.0f);
    if (decode) k3k::linear_decode_w4b64(k3k::KernelPath::kRvv, act, w, ep, out.data(), pool, tiling);
    else k3k::linear_prefill_w4b64(k3k::KernelPath::kRvv, act, w, ep, out.data(), pool, tiling);
    by_workers.push_back(out);
  }
  ASSERT_EQ(0, std::memcmp(by_workers[0].data(), by_workers[1].data(), by_workers[0].size() * 4))
      << "rvv output depends on the worker count";
  out_rvv = by_workers[0];
  WorkerPool pool(1);
  if (decode) k3k::linear_decode_w4b64(k3k::KernelPath::kGeneric, act, w, ep, out_gen.data(), pool, {});
  else k3k::linear_prefill_w4b64(k3k::KernelPath::kGeneric, act, w, ep, out_gen.data(), pool, {});

  k3test::expect_linear_within_bound(s, act, ep, c.m, c.n, out_rvv, out_gen);
}

TEST(RvvLinear, SmallShapesWithinBound) {
  std::uint64_t seed = 11;
  for (std::int64_t m : {1, 3, 4, 5}) {
    for (std::int64_t n : {1, 33, 100}) {
      for (std::int64_t k : {64, 256}) {
        check_case({m, n, k, 64, OutputLayout::kRowMajor, true, false, false}, seed++);
      }
    }
  }
  check_case({5, 37, 192, 7, OutputLayout::kC4, true, true, true}, seed++);
  check_case({1, 37, 256, 16, OutputLayout::kC4, false, true, true}, seed++);
  check_case({13, 64, 128, 32, OutputLayout::kRowMajor, false, true, false}, seed++);
}

TEST(RvvLinear, Qwen3_0_6bShapes) {
  check_case({1, 1024, 1024, 64, OutputLayout::kRowMajor, true, false, false}, 101);  // decode q/k/v/o class
  check_case({5, 256, 1024, 64, OutputLayout::kC4, true, true, false}, 102);         // prefill rows of gate/up
}

TEST(RvvLinear, MutatedOutputIsCaught) {
  const W4B64Storage s = hqq_weights(16, 128, 3);
  const W4B64Packed w = pack_w4b64_generic(s);
  const auto a = k3test::normal_activations(1, 128, 4);
  auto act = make_packed_activations(1, 128, ActivationLayout::kRowK256);
  k3k::quantize_pack_decode(k3k::KernelPath::kRvv, a.data(), act);
  WorkerPool pool(1);
  std::vector<float> out(16);
  k3k::linear_decode_w4b64(k3k::KernelPath::kRvv, act, w, {}, out.data(), pool, {});
  const auto codes = reference::unpack_codes(act);
  const auto ref = reference::linear_w4b64(s, codes.data(), act.scale.data(), 1, nullptr, nullptr, -INFINITY, INFINITY);
  out[5] += static_cast<float>(3 * ref.bound[5]) + 1e-6f;
  EXPECT_FALSE(reference::compare_to_reference(out, ref.y, ref.bound).pass);
}

TEST(RvvEmbedding, WithinBoundAndMatchesGeneric) {
  const W4B64Storage s = hqq_weights(70, 192, 9);
  const W4B64Packed w = pack_w4b64_generic(s);
  const std::vector<std::int32_t> ids = {0, 69, 31, 32, 33, 5, 64};
  std::vector<float> got(ids.size() * 192), gen(got.size());
  WorkerPool pool(2);
  k3k::embedding_lookup_w4b64(k3k::KernelPath::kRvv, w, ids.data(), static_cast<std::int64_t>(ids.size()), got.data(), pool);
  k3k::embedding_lookup_w4b64(k3k::KernelPath::kGeneric, w, ids.data(), static_cast<std::int64_t>(ids.size()), gen.data(), pool);
  const auto ref = reference::embedding_lookup(s, ids.data(), static_cast<std::int64_t>(ids.size()));
  const auto cmp = reference::compare_to_reference(got, ref.y, ref.bound);
  EXPECT_TRUE(cmp.pass) << reference::describe(cmp, got, ref.y, ref.bound);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_LE(std::fabs(double(got[i]) - gen[i]), 2 * ref.bound[i]);
  const std::int32_t bad = 70;
  EXPECT_THROW(k3k::embedding_lookup_w4b64(k3k::KernelPath::kRvv, w, &bad, 1, got.data(), pool), std::invalid_argument);
}

}  // namespace
