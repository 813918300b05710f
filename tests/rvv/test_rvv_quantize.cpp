// RVV quantise + pack vs the generic layer: codes, block sums and scales bit-exact.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "k3k/dispatch.h"
#include "k3k/quantize.h"
#include "k3k/attention.h"
#include "k3k/embedding.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/small_ops.h"
#include "k3k/seeded_random.h"

namespace {

using namespace k3k;

std::vector<float> activations(std::int64_t m, std::int64_t k, std::uint64_t seed, double scale = 1.0) {
  std::vector<float> a(static_cast<std::size_t>(m * k));
  SeededRandom rng(seed);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(rng.normal() * scale * (i % 97 == 13 ? 10 : 1));
  return a;
}

void expect_same_pack(const PackedActivations& g, const PackedActivations& r) {
  ASSERT_EQ(g.codes.size(), r.codes.size());
  EXPECT_EQ(0, std::memcmp(g.codes.data(), r.codes.data(), g.codes.size_bytes())) << "codes differ";
  EXPECT_EQ(0, std::memcmp(g.block_sum.data(), r.block_sum.data(), g.block_sum.size_bytes())) << "block sums differ";
  EXPECT_EQ(0, std::memcmp(g.scale.data(), r.scale.data(), g.scale.size_bytes())) << "scales differ";
}

TEST(RvvDispatch, VectorUnitDetected) {
  ASSERT_TRUE(cpu_features().vector) << "qemu must run with v=true";
  EXPECT_GE(cpu_features().vlenb, 16);
#if defined(K3_HAVE_IME2)
  // IME2 builds pick ime2 where it runs (VLEN 1024); Ime2Dispatch.* covers that case.
  if (path_compiled(KernelPath::kIme2) && decide_path().path == KernelPath::kIme2) return;
#endif
  EXPECT_EQ(decide_path().path, KernelPath::kRvv);
  EXPECT_THROW(decide_path(KernelPath::kIme2), std::invalid_argument);
  std::printf("vlenb = %d\n", cpu_features().vlenb);
}

TEST(RvvQuantize, PrefillAndDecodeBitExact) {
  WorkerPool pool(3);
  for (std::int64_t m : {1, 3, 4, 5, 13}) {
    // 3, 5 and 7 blocks leave a part-filled last strip at 2 and 4 blocks per strip.
    for (std::int64_t k : {64, 192, 320, 448, 1024}) {
      SCOPED_TRACE(testing::Message() << "m=" << m << " k=" << k);
      const auto a = activations(m, k, 7 + m * k);
      auto g = make_packed_activations(m, k, ActivationLayout::kRowsM4);
      auto r = make_packed_activations(m, k, ActivationLayout::kRowsM4);
      k3k::quantize_pack_prefill(k3k::KernelPath::kGeneric, a.data(), g, pool);
      k3k::quantize_pack_prefill(k3k::KernelPath::kRvv, a.data(), r, pool);
      expect_same_pack(g, r);
      auto gd = make_packed_activations(1, k, ActivationLayout::kRowK256);
      auto rd = make_packed_activations(1, k, ActivationLayout::kRowK256);
      k3k::quantize_pack_decode(k3k::KernelPath::kGeneric, a.data(), gd);
      k3k::quantize_pack_decode(k3k::KernelPath::kRvv, a.data(), rd);
      expect_same_pack(gd, rd);
    }
  }
}

TEST(RvvQuantize, EdgeRowsBitExact) {
  WorkerPool pool(1);
  const std::int64_t k = 128;
  std::vector<float> a(4 * k, 0.0f);  // row 0 all zero
  for (std::int64_t i = 0; i < k; ++i) {
    a[k + i] = (i % 2 ? -1.0f : 1.0f) * 2.5f * static_cast<float>(i % 5);  // exact .5 ties
    a[2 * k + i] = 1e-39f * static_cast<float>(i + 1);                       // subnormal row (prescale path)
    a[3 * k + i] = 3e38f * (i % 3 ? 1.0f : -1.0f);                            // near FLT_MAX
  }
  auto g = make_packed_activations(4, k, ActivationLayout::kRowsM4);
  auto r = make_packed_activations(4, k, ActivationLayout::kRowsM4);
  k3k::quantize_pack_prefill(k3k::KernelPath::kGeneric, a.data(), g, pool);
  k3k::quantize_pack_prefill(k3k::KernelPath::kRvv, a.data(), r, pool);
  expect_same_pack(g, r);
}

TEST(RvvQuantize, Qwen3_0_6bShape) {
  WorkerPool pool(2);
  const auto a = activations(17, 3072, 99);
  auto g = make_packed_activations(17, 3072, ActivationLayout::kRowsM4);
  auto r = make_packed_activations(17, 3072, ActivationLayout::kRowsM4);
  k3k::quantize_pack_prefill(k3k::KernelPath::kGeneric, a.data(), g, pool);
  k3k::quantize_pack_prefill(k3k::KernelPath::kRvv, a.data(), r, pool);
  expect_same_pack(g, r);
}

}  // namespace
