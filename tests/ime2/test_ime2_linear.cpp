// IME2 Linear (decode M1, prefill M8) vs the float64 reference and the generic layer, in both
// weight layouts; the IME2 weight layout itself; layout checks of the other layers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

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
#include "support/linear_checks.h"
#include "support/test_data.h"

namespace {

using namespace k3k;

bool ime2_runs() { return !ime2::unusable_because().has_value(); }
#define K3_REQUIRE_IME2() \
  if (!ime2_runs()) GTEST_SKIP() << *ime2::unusable_because()


using k3test::hqq_weights;

PackedActivations quantize(const std::vector<float>& a, std::int64_t m, std::int64_t k, bool decode, WorkerPool& pool) {
  auto act = make_packed_activations(m, k, decode ? ActivationLayout::kRowK256 : ActivationLayout::kRowsM4);
  if (decode) k3k::quantize_pack_decode(k3k::KernelPath::kGeneric, a.data(), act);
  else k3k::quantize_pack_prefill(k3k::KernelPath::kGeneric, a.data(), act, pool);
  return act;
}

void run_ime2(bool decode, const PackedActivations& act, const W4B64Packed& w, const LinearEpilogue& ep, float* out,
              WorkerPool& pool, LinearTiling tiling = {}) {
  if (decode) k3k::linear_decode_w4b64(k3k::KernelPath::kIme2, act, w, ep, out, pool, tiling);
  else k3k::linear_prefill_w4b64(k3k::KernelPath::kIme2, act, w, ep, out, pool, tiling);
}

// The layout contract in kernels/ime2/README.md, checked against the storage form directly.
TEST(Ime2Layout, PackedUnitsHoldTheDocumentedCodes) {
  const std::int64_t n = 70, k = 192;
  const W4B64Storage s = hqq_weights(n, k, 21);
  const W4B64Packed g = pack_w4b64_generic(s);
  const W4B64Packed p = ime2::pack_w4b64(g);
  ASSERT_EQ(p.layout, W4B64Layout::kIme2);
  ASSERT_EQ(p.codes.size(), g.codes.size());
  ASSERT_EQ(0, std::memcmp(p.scale.data(), g.scale.data(), g.scale.size_bytes()));
  ASSERT_EQ(0, std::memcmp(p.beta.data(), g.beta.data(), g.beta.size_bytes()));
  const std::int64_t nb = k / 64;
  for (std::int64_t t = 0; t < p.row_tiles(); ++t)
    for (std::int64_t b = 0; b < nb; ++b)
      for (int ks = 0; ks < 2; ++ks)
        for (int sub = 0; sub < 4; ++sub)
          for (int col = 0; col < 8; ++col)
            for (int jj = 0; jj < 16; ++jj) {
              const std::int64_t row = t * 32 + 8 * sub + col;
              const std::uint8_t byte = p.codes[static_cast<std::size_t>((t * nb + b) * 1024 + (4 * ks + sub) * 128 + 16 * col + jj)];
              const std::int64_t k_lo = 64 * b + 16 * ks + jj, k_hi = k_lo + 32;
              ASSERT_EQ(byte & 15, row < n ? s.code(row, k_lo) : 8) << "t " << t << " b " << b << " row " << row;
              ASSERT_EQ(byte >> 4, row < n ? s.code(row, k_hi) : 8) << "t " << t << " b " << b << " row " << row;
            }
  EXPECT_THROW(ime2::pack_w4b64(p), std::invalid_argument);
}

TEST(Ime2Layout, OtherLayersRefuseIme2Weights) {
  const W4B64Packed p = ime2::pack_w4b64(pack_w4b64_generic(hqq_weights(32, 64, 5)));
  WorkerPool pool(1);
  auto act = make_packed_activations(1, 64, ActivationLayout::kRowK256);
  std::vector<float> out(32);
  EXPECT_THROW(k3k::linear_decode_w4b64(k3k::KernelPath::kGeneric, act, p, {}, out.data(), pool, {}), std::invalid_argument);
  EXPECT_THROW(k3k::linear_decode_w4b64(KernelPath::kRvv, act, p, {}, out.data(), pool, {}), std::invalid_argument);
  const std::int32_t token = 0;
  std::vector<float> row(64);
  EXPECT_THROW(k3k::embedding_lookup_w4b64(KernelPath::kIme2, p, &token, 1, row.data(), pool), std::invalid_argument);
}

// Scale 1, beta 0 and integer activations with absmax 127 (sa = 1, qa = a): every output is
// sum_b D_b exactly, for both weight layouts and both kernels, M across the 8-row tile edges.
TEST(Ime2Linear, IntegerDotProductsExact) {
  K3_REQUIRE_IME2();
  SeededRandom rng(5);
  for (std::int64_t m : {1, 4, 5, 8, 9, 13, 16}) {
    const std::int64_t n = 70, k = 320;
    // beta 0, scale 1: outputs are the integer dot products themselves
    W4B64Storage s = k3test::random_code_storage(n, k, rng, [](std::size_t i) { return i % 2 ? 1.0f : 0.0f; });
    s.codes[0] = 0xFF;  // the extreme codes 0 and 15 against the extreme activations
    s.codes[1] = 0x00;
    const W4B64Packed g = pack_w4b64_generic(s);
    const W4B64Packed p = ime2::pack_w4b64(g);
    std::vector<float> a(static_cast<std::size_t>(m * k));
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t i = 0; i < k; ++i) a[r * k + i] = static_cast<float>(static_cast<int>(rng.next() % 255) - 127);
      a[r * k + (r * 7) % k] = (r % 2) ? -127.0f : 127.0f;
    }
    WorkerPool pool(2);
    for (bool decode : {true, false}) {
      if (decode && m != 1) continue;
      const auto act = quantize(a, m, k, decode, pool);
      for (const W4B64Packed* w : {&g, &p}) {
        std::vector<float> got(static_cast<std::size_t>(m * n), -1.0f);
        run_ime2(decode, act, *w, {}, got.data(), pool);
        for (std::int64_t r = 0; r < m; ++r) {
          ASSERT_EQ(act.scale[r], 1.0f);
          for (std::int64_t col = 0; col < n; ++col) {
            std::int64_t d = 0;
            for (std::int64_t i = 0; i < k; ++i) d += static_cast<std::int64_t>(a[r * k + i]) * (s.code(col, i) - 8);
            ASSERT_EQ(got[r * n + col], static_cast<float>(d))
                << "m=" << m << " decode=" << decode << " ime2_layout=" << (w == &p) << " row " << r << " col " << col;
          }
        }
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
  const W4B64Packed g = pack_w4b64_generic(s);
  const W4B64Packed p = ime2::pack_w4b64(g);
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
  WorkerPool pool1(1);
  const auto act = quantize(a, c.m, c.k, decode, pool1);
  // Every worker count, tiling and weight layout gives the same bits.
  std::vector<float> first;
  for (int workers : {1, 3}) {
    WorkerPool pool(workers);
    for (const W4B64Packed* w : {&g, &p}) {
      std::vector<float> out(static_cast<std::size_t>(elems), -1.0f);
      run_ime2(decode, act, *w, ep, out.data(), pool, {c.tile_n});
      if (first.empty()) {
        first = out;
      } else {
        ASSERT_EQ(0, std::memcmp(first.data(), out.data(), out.size() * 4))
            << "ime2 output depends on workers/layout (workers " << workers << ")";
      }
    }
  }
  std::vector<float> gen(static_cast<std::size_t>(elems));
  if (decode) k3k::linear_decode_w4b64(k3k::KernelPath::kGeneric, act, g, ep, gen.data(), pool1, {});
  else k3k::linear_prefill_w4b64(k3k::KernelPath::kGeneric, act, g, ep, gen.data(), pool1, {});

  k3test::expect_linear_within_bound(s, act, ep, c.m, c.n, first, gen);
}

TEST(Ime2Linear, SmallShapesWithinBound) {
  K3_REQUIRE_IME2();
  std::uint64_t seed = 11;
  for (std::int64_t m : {1, 3, 8, 9}) {
    for (std::int64_t n : {1, 33, 100}) {
      for (std::int64_t k : {64, 256}) {
        check_case({m, n, k, 64, OutputLayout::kRowMajor, true, false, false}, seed++);
      }
    }
  }
  check_case({5, 37, 192, 7, OutputLayout::kC4, true, true, true}, seed++);
  check_case({1, 37, 256, 16, OutputLayout::kC4, false, true, true}, seed++);
  check_case({13, 64, 128, 32, OutputLayout::kRowMajor, false, true, false}, seed++);
  check_case({17, 96, 128, 40, OutputLayout::kC4, true, true, false}, seed++);
}

TEST(Ime2Linear, Qwen3_0_6bShapes) {
  K3_REQUIRE_IME2();
  check_case({1, 1024, 1024, 64, OutputLayout::kRowMajor, true, false, false}, 101);  // decode q/k/v/o class
  check_case({12, 256, 1024, 64, OutputLayout::kC4, true, true, false}, 102);        // prefill rows of gate/up
}

// N x K shapes of Qwen3-1.7B and Qwen3.5 layers (decode and prefill; M = 16 and an odd M = 9).
TEST(Ime2Linear, Qwen3_1_7bAndQwen3_5Shapes) {
  K3_REQUIRE_IME2();
  check_case({1, 2048, 2048, 64, OutputLayout::kRowMajor, true, false, false}, 111);  // 1.7B q/o decode
  check_case({16, 1024, 2048, 64, OutputLayout::kC4, false, true, false}, 112);      // 1.7B k/v prefill
  check_case({1, 16, 1024, 64, OutputLayout::kRowMajor, false, false, false}, 113);  // 3.5 GDN a/b decode
  check_case({9, 1024, 3584, 128, OutputLayout::kRowMajor, true, false, false}, 114); // 3.5-0.8B down
}

TEST(Ime2Linear, OpsDispatchRunsTheIme2Kernels) {
  K3_REQUIRE_IME2();
  const W4B64Storage s = hqq_weights(40, 128, 7);
  const W4B64Packed p = ime2::pack_w4b64(pack_w4b64_generic(s));
  const auto a = k3test::normal_activations(1, 128, 8);
  WorkerPool pool(2);
  auto act = make_packed_activations(1, 128, ActivationLayout::kRowK256);
  k3k::quantize_pack_decode(KernelPath::kIme2, a.data(), act);  // the RVV kernel under the ime2 path
  std::vector<float> out(40), direct(40);
  k3k::linear_decode_w4b64(KernelPath::kIme2, act, p, {}, out.data(), pool, {});
  k3k::linear_decode_w4b64(k3k::KernelPath::kIme2, act, p, {}, direct.data(), pool, {});
  EXPECT_EQ(0, std::memcmp(out.data(), direct.data(), out.size() * 4));
}

TEST(Ime2Linear, BadArgumentsThrow) {
  K3_REQUIRE_IME2();
  const W4B64Packed g = pack_w4b64_generic(hqq_weights(32, 128, 9));
  WorkerPool pool(1);
  std::vector<float> out(64);
  auto prefill = make_packed_activations(2, 128, ActivationLayout::kRowsM4);
  auto decode = make_packed_activations(1, 128, ActivationLayout::kRowK256);
  EXPECT_THROW(k3k::linear_decode_w4b64(k3k::KernelPath::kIme2, prefill, g, {}, out.data(), pool, {}), std::invalid_argument);
  EXPECT_THROW(k3k::linear_prefill_w4b64(k3k::KernelPath::kIme2, decode, g, {}, out.data(), pool, {}), std::invalid_argument);
  auto wrong_k = make_packed_activations(1, 64, ActivationLayout::kRowK256);
  EXPECT_THROW(k3k::linear_decode_w4b64(k3k::KernelPath::kIme2, wrong_k, g, {}, out.data(), pool, {}), std::invalid_argument);
  EXPECT_THROW(k3k::linear_decode_w4b64(k3k::KernelPath::kIme2, decode, g, {}, out.data(), pool, {0}), std::invalid_argument);
}

}  // namespace
