// W4B64 Linear kernels (prefill and decode) of every layer (support/layer_sweep.h), on the weights
// packed as the layer loads them, against the float64 reference reference::linear_w4b64 on the
// same activation codes and scales, under its derived per-element bound (the same for every
// layer: the integer parts are exact): shapes, tiles, layouts, epilogues, worker counts, real
// Qwen3 sizes, the W4A8 scheme's error and extreme codes.
#include <gtest/gtest.h>

#include <cstdio>

#include "kernels/linear_test_support.h"
#include "support/layer_sweep.h"

namespace k3k::linear_test {
namespace {

// Prints the largest err/bound ratio of the whole run once all tests are done.
class ReportMaxRatio : public testing::Environment {
 public:
  void TearDown() override {
    if (g_max_ratio > 0.0)
      std::printf("[          ] Linear max err/bound over all checks: %.4f\n", g_max_ratio);
  }
};
testing::Environment* const kReportMaxRatio = testing::AddGlobalTestEnvironment(new ReportMaxRatio);

class LinearPrefill : public k3test::OnLayer {};
class LinearDecode : public k3test::OnLayer {};

TEST_P(LinearPrefill, MatchesReferenceAcrossShapesTilesLayoutsAndEpilogues) {
  WorkerPool pool(2);
  int rotate = 0, clamped = 0;
  for (std::int64_t n : {1, 5, 16, 33, 100}) {
    for (std::int64_t k : {64, 192, 1024}) {
      const Weights w = make_weights(layer(), n, k, 10 * n + k);
      for (std::int64_t m : {1, 3, 4, 5, 17}) {
        SCOPED_TRACE(testing::Message() << "prefill M=" << m << " N=" << n << " K=" << k);
        const Acts a =
            quantize(layer(), make_activations(m, k, 7 * m + k), m, k, /*decode=*/false, pool);
        check_case(layer(), a, w, rotate++, pool, &clamped);
      }
    }
  }
  EXPECT_GT(clamped, 100) << "the clamp variants never clamped anything";
  std::printf("[          ] Linear max err/bound so far: %.4f\n", g_max_ratio);
}

TEST_P(LinearDecode, MatchesReferenceAcrossShapesTilesLayoutsAndEpilogues) {
  WorkerPool pool(2);
  int rotate = 0, clamped = 0;
  for (std::int64_t n : {1, 5, 16, 33, 100}) {
    for (std::int64_t k : {64, 192, 1024}) {
      SCOPED_TRACE(testing::Message() << "decode N=" << n << " K=" << k);
      const Weights w = make_weights(layer(), n, k, 20 * n + k);
      for (std::uint64_t seed : {1u, 2u}) {
        const Acts a = quantize(layer(), make_activations(1, k, seed * 1000 + n + k), 1, k,
                                /*decode=*/true, pool);
        check_case(layer(), a, w, rotate++, pool, &clamped);
      }
    }
  }
  EXPECT_GT(clamped, 20) << "the clamp variants never clamped anything";
  std::printf("[          ] Linear max err/bound so far: %.4f\n", g_max_ratio);
}

TEST_P(LinearPrefill, BitwiseIdenticalAcrossWorkerCountsAndTiles) {
  check_worker_invariance(layer(), false, 17, 40, 320);
}
// More rows than one of the driver's chunks (64 rows: 8 IME2 groups, 16 M4 groups), so runs of
// groups split into chunks with a short last one; N is not a multiple of the 32-row tiles and K has
// an odd number of blocks (the IME2 prefill loop takes blocks two at a time).
TEST_P(LinearPrefill, BitwiseIdenticalAcrossChunksOfGroups) {
  check_worker_invariance(layer(), false, 150, 72, 192);
}
TEST_P(LinearDecode, BitwiseIdenticalAcrossWorkerCountsAndTiles) {
  check_worker_invariance(layer(), true, 1, 100, 1024);
}

// One real Qwen3-0.6B shape per kernel (hidden 1024, intermediate 3072), default tiling.
TEST_P(LinearDecode, Qwen3Sized1024x1024WithResidual) {
  const std::int64_t n = 1024, k = 1024;
  const Weights w = make_weights(layer(), n, k, 1234);
  WorkerPool pool(2), p1(1);
  const Acts a = quantize(layer(), make_activations(1, k, 4321), 1, k, true, pool);
  const std::vector<float> residual = normal_vector(n, 99, 1.0);
  const Epi e{nullptr, residual.data()};
  const reference::LinearResult ref = reference_for(a, w.storage, e);
  std::vector<float> out(sz(n)), out1(sz(n));
  LinearEpilogue ep;
  ep.residual = residual.data();
  k3k::linear_decode_w4b64(layer(), a.pack, w.packed, ep, out.data(), pool);
  k3k::linear_decode_w4b64(layer(), a.pack, w.packed, ep, out1.data(), p1);
  expect_matches(out, OutputLayout::kRowMajor, 1, n, ref, "decode 1024x1024");
  EXPECT_TRUE(same_bits(out, out1));
  std::printf("[          ] Linear max err/bound so far: %.4f\n", g_max_ratio);
}

TEST_P(LinearPrefill, Qwen3SizedM17x3072x1024) {
  const std::int64_t m = 17, n = 3072, k = 1024;
  const Weights w = make_weights(layer(), n, k, 5678);
  WorkerPool pool(2), p1(1);
  const Acts a = quantize(layer(), make_activations(m, k, 8765), m, k, false, pool);
  const reference::LinearResult ref = reference_for(a, w.storage, Epi{});
  for (OutputLayout layout : kLayouts) {
    LinearEpilogue ep;
    ep.layout = layout;
    std::vector<float> out(sz(output_elements(layout, m, n)),
                           std::numeric_limits<float>::quiet_NaN());
    k3k::linear_prefill_w4b64(layer(), a.pack, w.packed, ep, out.data(), pool);
    expect_matches(out, layout, m, n, ref,
                   std::string("prefill 17x3072x1024 ") + layout_name(layout));
    if (layout == OutputLayout::kRowMajor) {  // one single-worker run for the bitwise check
      std::vector<float> out1(out.size(), std::numeric_limits<float>::quiet_NaN());
      k3k::linear_prefill_w4b64(layer(), a.pack, w.packed, ep, out1.data(), p1);
      EXPECT_TRUE(same_bits(out, out1));
    }
  }
  std::printf("[          ] Linear max err/bound so far: %.4f\n", g_max_ratio);
}

TEST_P(LinearPrefill, W4A8SchemeErrorIsSmall) {
  // Kernel output vs the float64 product with UNquantised activations (same dequantised weights),
  // so the difference is the activation quantisation error (plus negligible float rounding).
  // Deterministic bound: a_k = sa x_k, and sa*qa_k differs from a_k by at most
  // sa (0.5 + 127*2^-23) + |x_k| |fl(sa) - sa| <= sa (0.5 + 2^-15), so per output
  // |err| <= sa (0.5 + 2^-15) ||w_n||_1 + (the kernel-vs-reference bound).
  // Statistical size: with errors ~ uniform(+-sa/2) the error has std sa/sqrt(12) ||w_n||_2 and y
  // has std sigma_a ||w_n||_2, a ratio absmax/(127 sqrt(12) sigma_a) ~ 3.4/440 ~ 0.8% for K=1024
  // normal activations; max|err| / max|y| over a few hundred outputs is then ~1%. A 3% ceiling
  // keeps a ~3x margin while any systematic error (wrong zero correction, wrong sa, misplaced
  // codes) produces errors comparable to |y| itself.
  const std::int64_t m = 5, n = 64, k = 1024;
  const Weights w = make_weights(layer(), n, k, 31337);
  WorkerPool pool(2);
  for (bool decode : {false, true}) {
    const std::int64_t rows = decode ? 1 : m;
    SCOPED_TRACE(decode ? "decode" : "prefill");
    const std::vector<float> act = make_activations(rows, k, 2024, /*outlier=*/1.0);
    const Acts a = quantize(layer(), act, rows, k, decode, pool);
    const std::vector<float> out =
        run(layer(), a, w.packed, Epi{}, OutputLayout::kRowMajor, 16, pool);
    const std::vector<double> exact =
        reference::linear_unquantized_activations(w.storage, act.data(), rows);
    const reference::LinearResult ref = reference_for(a, w.storage, Epi{});
    double max_err = 0.0, max_y = 0.0;
    std::vector<double> wrow(sz(k));
    for (std::int64_t c = 0; c < n; ++c) {
      dequantize_w4b64_row(w.storage, c, wrow.data());
      double l1 = 0.0;
      for (double x : wrow) l1 += std::fabs(x);
      for (std::int64_t r = 0; r < rows; ++r) {
        const double err = std::fabs(double(out[sz(r * n + c)]) - exact[sz(r * n + c)]);
        const double sa = a.pack.scale[sz(r)];
        EXPECT_LE(err, sa * (0.5 + 0x1.0p-15) * l1 + ref.bound[sz(r * n + c)]) << r << "," << c;
        max_err = std::max(max_err, err);
        max_y = std::max(max_y, std::fabs(exact[sz(r * n + c)]));
      }
    }
    EXPECT_GT(max_y, 0.1);
    EXPECT_LT(max_err, 0.03 * max_y) << "max abs err " << max_err << " vs max |y| " << max_y;
    std::printf("[          ] W4A8 %s: max abs err / max |y| = %.4f\n",
                decode ? "decode" : "prefill", max_err / max_y);
  }
}

// Extreme integer parts: every activation code at +-127 against weight codes all 0 or all 15 gives
// |qa (q - 8)| = 1016 per product, 32512 per 32-element half-block and 65024 per block, the
// largest magnitudes the integer core must hold exactly. The storage is built code by code (the
// stable MNN form) and only reaches the kernels through pack_w4b64_generic and pack_w4b64_for.
TEST_P(LinearPrefill, ExtremeCodesAreExactInBothKernels) {
  const std::int64_t n = 7, k = 256, nb = k / 64, m = 5;
  W4B64Storage st;
  st.n = n;
  st.k = k;
  st.codes = AlignedBuffer<std::uint8_t>(sz(n * k / 2));
  st.alpha = AlignedBuffer<float>(sz(n * nb * 2));
  auto code_of = [](std::int64_t row, std::int64_t col) -> int {
    switch (row) {
      case 0:
        return 0;
      case 1:
        return 15;
      case 2:
        return col % 2 == 0 ? 0 : 15;
      case 3:
        return col % 64 < 32 ? 0 : 15;
      case 4:
        return 8;
      case 5:
        return col % 64 < 32 ? 15 : 0;
      default:
        return static_cast<int>((col * 5 + 3) % 16);
    }
  };
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t c = 0; c < k; ++c) set_storage_code(st, r, c, code_of(r, c));
    for (std::int64_t b = 0; b < nb; ++b) {
      st.alpha[sz((r * nb + b) * 2)] = 0.125f * static_cast<float>((r + b) % 5 - 2);  // beta
      st.alpha[sz((r * nb + b) * 2 + 1)] =
          std::ldexp(1.0f, -static_cast<int>(6 + (r + b) % 3));  // scale
    }
  }
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < k; ++c) ASSERT_EQ(st.code(r, c), code_of(r, c));
  const W4B64Packed packed = pack_for(layer(), st);
  // Activation rows: all +1, all -1, alternating, +1 then -1 per half-block, and random.
  std::vector<float> act(sz(m * k));
  const std::vector<float> rnd = make_activations(1, k, 5);
  for (std::int64_t c = 0; c < k; ++c) {
    act[sz(0 * k + c)] = 1.0f;
    act[sz(1 * k + c)] = -1.0f;
    act[sz(2 * k + c)] = c % 2 == 0 ? 1.0f : -1.0f;
    act[sz(3 * k + c)] = c % 64 < 32 ? 1.0f : -1.0f;
    act[sz(4 * k + c)] = rnd[sz(c)];
  }
  WorkerPool pool(2);
  const Acts a = quantize(layer(), act, m, k, false, pool);
  for (std::int64_t c = 0; c < k; ++c) ASSERT_EQ(std::abs(a.codes[sz(c)]), 127);
  const reference::LinearResult ref = reference_for(a, st, Epi{});
  for (OutputLayout layout : kLayouts) {
    for (int tile : {1, 32, 64}) {
      expect_matches(run(layer(), a, packed, Epi{}, layout, tile, pool), layout, m, n, ref,
                     std::string("extreme prefill ") + layout_name(layout) + " tile_n " +
                         std::to_string(tile));
    }
  }
  for (std::int64_t r = 0; r < m; ++r) {
    const std::vector<float> row(act.begin() + r * k, act.begin() + (r + 1) * k);
    const Acts d = quantize(layer(), row, 1, k, true, pool);
    const reference::LinearResult dref = reference_for(d, st, Epi{});
    expect_matches(run(layer(), d, packed, Epi{}, OutputLayout::kRowMajor, 64, pool),
                   OutputLayout::kRowMajor, 1, n, dref, "extreme decode row " + std::to_string(r));
  }
}

K3_SWEEP_LAYERS(LinearPrefill);
K3_SWEEP_LAYERS(LinearDecode);

}  // namespace
}  // namespace k3k::linear_test
