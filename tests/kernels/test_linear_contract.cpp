// The Linear kernels' contract beyond accuracy, on every layer (support/layer_sweep.h): a mutated
// code, scale or beta is caught by the comparison, the comparison of the layer's output fails at
// twice the bound, clamp, invalid arguments throw before anything is written, and weights in a
// layout the layer does not read (or a microkernel variant it does not have) are refused. Plus the
// layer-free output-layout indexing.
#include <gtest/gtest.h>

#include "k3k/embedding.h"
#include "kernels/linear_test_support.h"
#include "support/layer_sweep.h"
#include "support/test_data.h"

namespace k3k::linear_test {
namespace {

class LinearContract : public k3test::OnLayer {};

// Mutations: a kernel reading a wrong code/scale must be caught by the comparison.
TEST_P(LinearContract, MutatedWeightCodeIsDetectedAtItsOutputColumn) {
  const std::int64_t m = 5, n = 9, k = 192;
  const Weights w = make_weights(layer(), n, k, 4242);
  WorkerPool pool(2);
  for (bool decode : {false, true}) {
    const std::int64_t rows = decode ? 1 : m;
    std::vector<float> act = make_activations(rows, k, 17, 1.0);
    // Positions: both halves of a 64-block, even and odd elements, several blocks.
    const std::int64_t cols[] = {0, 1, 30, 31, 32, 33, 62, 63, 64 + 17, 128 + 50};
    // Large activations there make |qa| >= ~60 so the change is far above the bound.
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c : cols) act[sz(r * k + c)] = (r % 2 ? -2.5f : 2.5f);
    const Acts a = quantize(layer(), act, rows, k, decode, pool);
    const reference::LinearResult ref = reference_for(a, w.storage, Epi{});
    for (std::int64_t c : cols) {
      const std::int64_t row_w = (c * 7) % n;
      SCOPED_TRACE(testing::Message()
                   << (decode ? "decode" : "prefill") << " weight (" << row_w << "," << c << ")");
      W4B64Storage mutated = w.storage.deep_copy();
      set_storage_code(mutated, row_w, c, mutated.code(row_w, c) ^ 0x8);  // code +- 8
      const W4B64Packed packed = pack_for(layer(), mutated);
      const std::vector<float> out =
          run(layer(), a, packed, Epi{}, OutputLayout::kRowMajor, 3, pool);
      // Against the original reference: every output of column row_w fails, nothing else does.
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t j = 0; j < n; ++j) {
          const std::size_t i = sz(r * n + j);
          const double err = std::fabs(double(out[i]) - ref.y[i]);
          if (j == row_w) {
            EXPECT_GT(err, ref.bound[i])
                << "mutation not detected at output (" << r << "," << j << ")";
          } else {
            EXPECT_LE(err, ref.bound[i]) << "mutation leaked into output (" << r << "," << j << ")";
          }
        }
      }
      EXPECT_FALSE(reference::compare_to_reference(out, ref.y, ref.bound).pass);
      // Against the reference of the mutated weights: passes.
      const reference::LinearResult mref = reference_for(a, mutated, Epi{});
      expect_matches(out, OutputLayout::kRowMajor, rows, n, mref, "mutated reference");
    }
  }
}

TEST_P(LinearContract, MutatedScaleOrBetaIsDetected) {
  const std::int64_t n = 8, k = 256;
  const Weights w = make_weights(layer(), n, k, 999);
  WorkerPool pool(1);
  const Acts a = quantize(layer(), make_activations(1, k, 3), 1, k, true, pool);
  const reference::LinearResult ref = reference_for(a, w.storage, Epi{});
  for (int which : {0, 1}) {  // alpha pair element: 0 = beta, 1 = scale
    W4B64Storage mutated = w.storage.deep_copy();
    const std::int64_t row = 5, block = 2, nb = k / 64;
    float& v = mutated.alpha[sz((row * nb + block) * 2 + which)];
    v = v * 1.5f + (which == 0 ? 0.01f : 0.0f);
    const reference::LinearResult mref = reference_for(a, mutated, Epi{});
    ASSERT_GT(std::fabs(mref.y[sz(row)] - ref.y[sz(row)]), 4 * ref.bound[sz(row)])
        << "mutation too small to see";
    const std::vector<float> out =
        run(layer(), a, pack_for(layer(), mutated), Epi{}, OutputLayout::kRowMajor, 16, pool);
    const reference::CompareResult cmp = reference::compare_to_reference(out, ref.y, ref.bound);
    EXPECT_FALSE(cmp.pass) << (which ? "scale" : "beta");
    EXPECT_EQ(cmp.worst_index, row);
    expect_matches(out, OutputLayout::kRowMajor, 1, n, mref, which ? "scale" : "beta");
  }
}

TEST_P(LinearContract, CompareFailsWhenAnOutputIsOffByTwiceItsBound) {
  // |fl(y + 2b) - y| >= 2b - u|y| > b because the bound is at least (nb + 5) u |y| >= 6 u |y|;
  // |fl(y + b/2) - y| <= b/2 + u|y| < b.
  const std::int64_t n = 33, k = 192;
  const Weights w = make_weights(layer(), n, k, 55);
  WorkerPool pool(1);
  const Acts a = quantize(layer(), make_activations(1, k, 56), 1, k, true, pool);
  const std::vector<float> bias = normal_vector(n, 57, 0.1);
  const Epi e{bias.data()};
  const reference::LinearResult ref = reference_for(a, w.storage, e);
  const std::vector<float> out = run(layer(), a, w.packed, e, OutputLayout::kRowMajor, 16, pool);
  ASSERT_TRUE(reference::compare_to_reference(out, ref.y, ref.bound).pass);
  for (std::size_t i : {std::size_t{0}, std::size_t{16}, std::size_t{32}}) {
    for (double sign : {1.0, -1.0}) {
      std::vector<float> bad = out;
      bad[i] = static_cast<float>(ref.y[i] + sign * 2.0 * ref.bound[i]);
      const reference::CompareResult cmp = reference::compare_to_reference(bad, ref.y, ref.bound);
      EXPECT_FALSE(cmp.pass) << i;
      EXPECT_EQ(cmp.worst_index, static_cast<std::int64_t>(i));
      std::vector<float> ok = out;
      ok[i] = static_cast<float>(ref.y[i] + sign * 0.5 * ref.bound[i]);
      EXPECT_TRUE(reference::compare_to_reference(ok, ref.y, ref.bound).pass) << i;
    }
  }
}

TEST_P(LinearContract, ClampWithEqualBoundsGivesThatConstant) {
  const std::int64_t m = 5, n = 7, k = 128;
  const Weights w = make_weights(layer(), n, k, 1);
  WorkerPool pool(2);
  const Acts a = quantize(layer(), make_activations(m, k, 2), m, k, false, pool);
  const Epi e{nullptr, nullptr, 0.25f, 0.25f};
  for (OutputLayout layout : kLayouts) {
    const std::vector<float> out = run(layer(), a, w.packed, e, layout, 4, pool);
    const std::vector<float> rm = reference::to_row_major(out.data(), layout, m, n);
    for (float v : rm) EXPECT_EQ(v, 0.25f);
  }
}

TEST_P(LinearContract, InvalidArgumentsThrowBeforeWriting) {
  const KernelPath path = layer();
  const Weights w = make_weights(path, 6, 128, 3);
  const Weights w64 = make_weights(path, 6, 64, 3);
  WorkerPool pool(2);
  const Acts pre = quantize(path, make_activations(3, 128, 4), 3, 128, false, pool);
  const Acts pre1 = quantize(path, make_activations(1, 128, 4), 1, 128, false, pool);
  const Acts dec = quantize(path, make_activations(1, 128, 4), 1, 128, true, pool);
  std::vector<float> out(64, 7.0f);
  const LinearEpilogue ok;
  auto untouched = [&] {
    return std::all_of(out.begin(), out.end(), [](float v) { return v == 7.0f; });
  };

  // K mismatch.
  EXPECT_THROW(k3k::linear_prefill_w4b64(path, pre.pack, w64.packed, ok, out.data(), pool),
               std::invalid_argument);
  EXPECT_THROW(k3k::linear_decode_w4b64(path, dec.pack, w64.packed, ok, out.data(), pool),
               std::invalid_argument);
  // Wrong activation layout.
  EXPECT_THROW(k3k::linear_prefill_w4b64(path, dec.pack, w.packed, ok, out.data(), pool),
               std::invalid_argument);
  EXPECT_THROW(k3k::linear_decode_w4b64(path, pre1.pack, w.packed, ok, out.data(), pool),
               std::invalid_argument);
  EXPECT_THROW(k3k::linear_decode_w4b64(path, pre.pack, w.packed, ok, out.data(), pool),
               std::invalid_argument);
  // tile_n <= 0.
  for (int tile : {0, -1}) {
    EXPECT_THROW(k3k::linear_prefill_w4b64(path, pre.pack, w.packed, ok, out.data(), pool, {tile}),
                 std::invalid_argument);
    EXPECT_THROW(k3k::linear_decode_w4b64(path, dec.pack, w.packed, ok, out.data(), pool, {tile}),
                 std::invalid_argument);
  }
  // clamp_min > clamp_max.
  LinearEpilogue bad_clamp;
  bad_clamp.clamp_min = 1.0f;
  bad_clamp.clamp_max = -1.0f;
  EXPECT_THROW(k3k::linear_prefill_w4b64(path, pre.pack, w.packed, bad_clamp, out.data(), pool),
               std::invalid_argument);
  EXPECT_THROW(k3k::linear_decode_w4b64(path, dec.pack, w.packed, bad_clamp, out.data(), pool),
               std::invalid_argument);
  // Null output.
  EXPECT_THROW(k3k::linear_prefill_w4b64(path, pre.pack, w.packed, ok, nullptr, pool),
               std::invalid_argument);
  EXPECT_THROW(k3k::linear_decode_w4b64(path, dec.pack, w.packed, ok, nullptr, pool),
               std::invalid_argument);
  EXPECT_TRUE(untouched()) << "a rejected call wrote to the output";

  // The valid calls go through.
  EXPECT_NO_THROW(k3k::linear_prefill_w4b64(path, pre.pack, w.packed, ok, out.data(), pool));
  EXPECT_NO_THROW(k3k::linear_decode_w4b64(path, dec.pack, w.packed, ok, out.data(), pool));
  EXPECT_FALSE(untouched());
}

// Weights in a layout a layer does not read, or a microkernel variant it does not have, are
// refused: every layer reads kRowTile32 and its own load-time layout only (k3k/linear.h), the
// embedding table kRowTile32, kSignedRows and its own layout (a tied table is packed for the
// lm_head, k3k/embedding.h), and a layout it reads gives the kRowTile32 table's row. Checked both
// ways between the layer under test and every other layer that runs here (the generic layer
// refusing the others' layouts and variant names is checked by their instances: its own runs on
// the host, where they do not exist).
TEST_P(LinearContract, UnreadLayoutsAndOtherLayersVariantsAreRefused) {
  const Weights w = make_weights(KernelPath::kGeneric, 64, 128, 61);
  const W4B64Packed& rowtile32 = w.packed;
  WorkerPool pool(1);
  const Acts dec = quantize(KernelPath::kGeneric, make_activations(1, 128, 62), 1, 128, true, pool);
  const Acts pre =
      quantize(KernelPath::kGeneric, make_activations(3, 128, 63), 3, 128, false, pool);
  std::vector<float> out(3 * 64);
  // `reader` refuses the weights `writer` packs at load time unless it reads that layout, and
  // every variant name of `writer`.
  auto expect_refuses = [&](KernelPath reader, KernelPath writer) {
    SCOPED_TRACE(testing::Message() << to_string(reader) << " given " << to_string(writer)
                                    << "'s weights and variants");
    const W4B64Layout own = pack_w4b64_for(reader, rowtile32.deep_copy()).layout;
    const W4B64Packed p = pack_w4b64_for(writer, rowtile32.deep_copy());
    const std::int32_t token = 5;
    if (p.layout != W4B64Layout::kRowTile32 && p.layout != W4B64Layout::kSignedRows &&
        p.layout != own) {
      EXPECT_THROW(embedding_lookup_w4b64(reader, p, &token, 1, out.data(), pool),
                   std::invalid_argument)
          << to_string(p.layout);
    } else {
      std::vector<float> want(128), got(128);
      embedding_lookup_w4b64(reader, rowtile32, &token, 1, want.data(), pool);
      embedding_lookup_w4b64(reader, p, &token, 1, got.data(), pool);
      EXPECT_TRUE(k3test::bitwise_equal(got, want)) << to_string(p.layout);
    }
    if (p.layout != W4B64Layout::kRowTile32 && p.layout != own) {
      EXPECT_THROW(linear_decode_w4b64(reader, dec.pack, p, {}, out.data(), pool),
                   std::invalid_argument)
          << to_string(p.layout);
      EXPECT_THROW(linear_prefill_w4b64(reader, pre.pack, p, {}, out.data(), pool),
                   std::invalid_argument)
          << to_string(p.layout);
    }
    if (reader == writer) return;
    const LinearVariantNames names = linear_variants(writer);
    for (const std::string& v : names.decode) {
      LinearTiling tiling;
      tiling.ukernel = v;
      EXPECT_THROW(linear_decode_w4b64(reader, dec.pack, rowtile32, {}, out.data(), pool, tiling),
                   std::invalid_argument)
          << v;
    }
    for (const std::string& v : names.prefill) {
      LinearTiling tiling;
      tiling.ukernel = v;
      EXPECT_THROW(linear_prefill_w4b64(reader, pre.pack, rowtile32, {}, out.data(), pool, tiling),
                   std::invalid_argument)
          << v;
    }
  };
  expect_refuses(layer(), layer());
  for (KernelPath other : k3test::swept_layers()) {
    if (other == layer()) continue;
    expect_refuses(layer(), other);
    expect_refuses(other, layer());
  }
  // A variant name no layer has.
  LinearTiling unknown;
  unknown.ukernel = "linear_decode-w4b64-srows-m1-e8m8-rvv";
  EXPECT_THROW(linear_decode_w4b64(layer(), dec.pack, rowtile32, {}, out.data(), pool, unknown),
               std::invalid_argument);
  unknown.ukernel = "linear_prefill-w4b64-srows-m4-e8m8-rvv";
  EXPECT_THROW(linear_prefill_w4b64(layer(), pre.pack, rowtile32, {}, out.data(), pool, unknown),
               std::invalid_argument);
}

K3_SWEEP_LAYERS(LinearContract);

// ---- layer-free ---------------------------------------------------------------------------------

TEST(LinearOutputLayout, Indexing) {
  // Row-major is [M][N]; C4 is [ceil(N/4)][M][4]: element (r, c) at ((c/4)*M + r)*4 + c%4.
  for (std::int64_t m : {1, 3, 5}) {
    for (std::int64_t n : {1, 4, 5, 9}) {
      EXPECT_EQ(output_elements(OutputLayout::kRowMajor, m, n), m * n);
      EXPECT_EQ(output_elements(OutputLayout::kC4, m, n), (n + 3) / 4 * 4 * m);
      std::vector<int> hits(sz(output_elements(OutputLayout::kC4, m, n)), 0);
      for (std::int64_t r = 0; r < m; ++r) {
        for (std::int64_t c = 0; c < n; ++c) {
          EXPECT_EQ(output_index(OutputLayout::kRowMajor, m, n, r, c), r * n + c);
          const std::int64_t i = output_index(OutputLayout::kC4, m, n, r, c);
          EXPECT_EQ(i / (4 * m), c / 4);
          EXPECT_EQ((i % (4 * m)) / 4, r);
          EXPECT_EQ(i % 4, c % 4);
          ++hits[sz(i)];
        }
      }
      for (int h : hits) EXPECT_LE(h, 1);
    }
  }
}

}  // namespace
}  // namespace k3k::linear_test
