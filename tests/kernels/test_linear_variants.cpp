// A layer's Linear microkernel variants and weight packings (support/linear_packings.h), swept
// over the layers (support/layer_sweep.h) and, IREE-style, over each layer's variants (rvv: strip
// LMUL and prefill rows per pass; generic and ime2: one each): every variant, rows per tile,
// packing and tile_n gives the bytes of the layer's default on kRowTile32 weights (the arithmetic
// per output is the same; the golden hashes pin that one), which is within the float64
// reference's bound and near the generic layer; the integer parts are exact at the extreme codes
// and activations on every packing and variant; the software prefetch distance never changes a
// result. Runs at every VLEN of the qemu tests, so each variant meets strips narrower and wider
// than its tile.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "k3k/cpu.h"
#include "k3k/linear.h"
#include "k3k/packed_form.h"
#include "k3k/quantize.h"
#include "k3k/seeded_random.h"
#include "support/layer_sweep.h"
#include "support/linear_checks.h"
#include "support/linear_packings.h"
#include "support/linear_problem.h"
#include "support/test_data.h"

namespace {

using namespace k3k;

using k3test::LinearProblem;

struct Shape {
  std::int64_t m, n, k;
  std::uint64_t seed;
};
// 300 rows: partial tiles and partial strips everywhere; 6 rows: one full and one partial M4 group.
constexpr Shape kDecodeShapes[] = {{1, 300, 256, 21}, {1, 64, 64, 22}};
constexpr Shape kPrefillShapes[] = {{6, 150, 192, 23}, {4, 33, 64, 24}};

// ---- the layer's default on every rows per tile -------------------------------------------------

class LinearPackings : public k3test::OnLayer {};

TEST_P(LinearPackings, DefaultOnEveryRowsPerTileGivesTheBytesOfRowTile32) {
  for (const Shape& s :
       {kDecodeShapes[0], kDecodeShapes[1], kPrefillShapes[0], kPrefillShapes[1]}) {
    SCOPED_TRACE(testing::Message() << "m=" << s.m << " n=" << s.n << " k=" << s.k
                                    << " vlenb=" << cpu_features().vlenb);
    const LinearProblem p = k3test::make_linear_problem(layer(), s.m, s.n, s.k, s.seed);
    WorkerPool pool(3);
    const std::vector<float> want = k3test::run_linear(p, layer(), p.rowtile32, {}, pool);
    if (is_generic()) {
      k3test::expect_linear_within_bound(p.storage, p.act, p.ep, s.m, s.n, want, nullptr);
    } else {
      const std::vector<float> generic =
          k3test::run_linear(p, KernelPath::kGeneric, p.rowtile32, {}, pool);
      k3test::expect_linear_within_bound(p.storage, p.act, p.ep, s.m, s.n, want, &generic);
    }
    const W4B64Layout own = pack_w4b64_for(layer(), p.rowtile32.deep_copy()).layout;
    const std::vector<int> rows = k3test::packable_rows(layer(), p.rowtile32);
    ASSERT_FALSE(rows.empty());
    for (int r : rows) {
      const W4B64Packed w = pack_w4b64_for(layer(), p.rowtile32.deep_copy(), r);
      ASSERT_EQ(w.layout, own);
      ASSERT_EQ(w.row_tile, r);
      EXPECT_TRUE(k3test::bitwise_equal(k3test::run_linear(p, layer(), w, {}, pool), want))
          << "auto, rows=" << r;
    }
  }
}

// What a loader that maps packed weights builds its views from (k3k/packed_form.h): the layout,
// rows per tile and so every array's size that pack_w4b64_for's default makes, without packing.
TEST_P(LinearPackings, PackedFormIsWhatTheDefaultPackingMakes) {
  // The values do not matter to a layout: zero kRowTile32 weights of each shape (model shapes
  // among them, where the RVV layer's default rows per tile depend on N and VLEN).
  for (const auto& [n, k] : {std::pair<std::int64_t, std::int64_t>{300, 256},
                             {64, 64},
                             {33, 192},
                             {1024, 3072},
                             {3072, 1024}}) {
    SCOPED_TRACE(testing::Message() << "n=" << n << " k=" << k);
    W4B64Packed rowtile32;
    rowtile32.n = n;
    rowtile32.k = k;
    rowtile32.codes = AlignedBuffer<std::uint8_t>(
        std::size_t(rowtile32.row_tiles() * rowtile32.tile_code_bytes()));
    rowtile32.pairs =
        AlignedBuffer<fp16_t>(std::size_t(2 * rowtile32.row_tiles() * rowtile32.tile_pairs()));
    const W4B64Packed packed = pack_w4b64_for(layer(), std::move(rowtile32));
    const PackedForm form = packed_form_for(layer(), n, k);
    EXPECT_EQ(form.layout, packed.layout);
    EXPECT_EQ(form.row_tile, packed.row_tile);
    const W4B64Packed unfilled = unfilled_packing(n, k, form);
    EXPECT_EQ(unfilled.codes.size(), packed.codes.size());
    EXPECT_EQ(unfilled.pairs.size(), packed.pairs.size());
  }
}

K3_SWEEP_LAYERS(LinearPackings);

// ---- each variant ------------------------------------------------------------------------------

struct LinearVariant {
  KernelPath path;
  bool decode;
  std::string ukernel;  // the contract name
  std::string name;     // the contract name as a test name
};

std::vector<LinearVariant> linear_variants_of(KernelPath path) {
  std::vector<LinearVariant> v;
  const LinearVariantNames names = linear_variants(path);
  for (bool decode : {true, false}) {
    for (const std::string& u : decode ? names.decode : names.prefill) {
      std::string name = u;
      std::replace(name.begin(), name.end(), '-', '_');
      v.push_back({path, decode, u, std::move(name)});
    }
  }
  return v;
}

class LinearVariants : public ::testing::TestWithParam<LinearVariant> {};

TEST_P(LinearVariants, EveryRowsPerTileAndTileNGivesTheBytesOfTheDefault) {
  const LinearVariant& v = GetParam();
  const auto& shapes = v.decode ? kDecodeShapes : kPrefillShapes;
  for (const Shape& s : shapes) {
    SCOPED_TRACE(testing::Message() << "m=" << s.m << " n=" << s.n << " k=" << s.k
                                    << " vlenb=" << cpu_features().vlenb);
    const LinearProblem p = k3test::make_linear_problem(v.path, s.m, s.n, s.k, s.seed);
    WorkerPool pool(3);
    const std::vector<float> want = k3test::run_linear(p, v.path, p.rowtile32, {}, pool);
    LinearTiling tiling;
    tiling.ukernel = v.ukernel;
    // Every variant also reads kRowTile32 (k3k/linear.h; rvv makes the codes signed in the loop).
    for (int tile_n : {32, 64, 40}) {
      tiling.tile_n = tile_n;
      EXPECT_TRUE(
          k3test::bitwise_equal(k3test::run_linear(p, v.path, p.rowtile32, tiling, pool), want))
          << "rowtile32, tile_n=" << tile_n;
    }
    for (int rows : k3test::packable_rows(v.path, p.rowtile32)) {
      const W4B64Packed w = pack_w4b64_for(v.path, p.rowtile32.deep_copy(), rows);
      for (int tile_n : {rows, 2 * rows, 40}) {
        tiling.tile_n = tile_n;
        EXPECT_TRUE(k3test::bitwise_equal(k3test::run_linear(p, v.path, w, tiling, pool), want))
            << "rows=" << rows << ", tile_n=" << tile_n;
      }
    }
  }
}

K3_SWEEP_LAYER_PARAMS(LinearVariants, linear_variants_of);

// ---- exact integer parts ------------------------------------------------------------------------

class LinearIntegerDotProducts : public k3test::OnLayer {};

// Scale 1, beta 0 and integer activations with absmax 127 (sa = 1, qa = a): every output is
// sum_b D_b exactly (all partial sums < 2^24), for every packing the layer reads and both kernels
// (M = 1 through decode and prefill), M across the 4- and 8-row group edges; and for the generic
// layer of the same build on the same data.
TEST_P(LinearIntegerDotProducts, ExactForEveryPacking) {
  SeededRandom rng(5);
  for (std::int64_t m : {1, 4, 5, 8, 9, 13, 16}) {
    const std::int64_t n = 70, k = 320;
    W4B64Storage s = k3test::random_code_storage(
        n, k, rng, [](std::size_t i) { return i % 2 ? 1.0f : 0.0f; });  // beta 0, scale 1
    s.codes[0] = 0xFF;  // the extreme codes 0 and 15 against the extreme activations
    s.codes[1] = 0x00;
    const std::vector<k3test::Packing> packings =
        k3test::packings_of(layer(), pack_w4b64_generic(s));
    std::vector<float> a(static_cast<std::size_t>(m * k));
    for (std::int64_t r = 0; r < m; ++r) {
      for (std::int64_t i = 0; i < k; ++i)
        a[static_cast<std::size_t>(r * k + i)] =
            static_cast<float>(static_cast<int>(rng.next() % 255) - 127);
      a[static_cast<std::size_t>(r * k + (r * 7) % k)] = (r % 2) ? -127.0f : 127.0f;
    }
    WorkerPool pool(2);
    for (bool decode : {true, false}) {
      if (decode && m != 1) continue;
      auto act = make_packed_activations(
          m, k, decode ? ActivationLayout::kRowK256 : ActivationLayout::kRowsM4);
      if (decode)
        quantize_pack_decode(layer(), a.data(), act);
      else
        quantize_pack_prefill(layer(), a.data(), act, pool);
      // The layer on each packing and, for a layer other than generic, the generic layer on the
      // same data in this build (the generic instance itself runs on the host only).
      std::vector<std::pair<KernelPath, const k3test::Packing*>> runs;
      for (const k3test::Packing& w : packings) runs.emplace_back(layer(), &w);
      if (!is_generic()) runs.emplace_back(KernelPath::kGeneric, &packings.front());
      for (const auto& [path, w] : runs) {
        std::vector<float> got(static_cast<std::size_t>(m * n), -1.0f);
        if (decode)
          linear_decode_w4b64(path, act, w->w, {}, got.data(), pool, {});
        else
          linear_prefill_w4b64(path, act, w->w, {}, got.data(), pool, {});
        for (std::int64_t r = 0; r < m; ++r) {
          ASSERT_EQ(act.scale[static_cast<std::size_t>(r)], 1.0f);
          for (std::int64_t col = 0; col < n; ++col) {
            std::int64_t d = 0;
            for (std::int64_t i = 0; i < k; ++i)
              d += static_cast<std::int64_t>(a[static_cast<std::size_t>(r * k + i)]) *
                   (s.code(col, i) - 8);
            ASSERT_EQ(got[static_cast<std::size_t>(r * n + col)], static_cast<float>(d))
                << to_string(path) << " m=" << m << " decode=" << decode << " " << w->name
                << " row " << r << " col " << col;
          }
        }
      }
    }
  }
}

// The same at the extremes only (codes 0 and 15 everywhere in a quarter of the bytes, activations
// +-127), for every decode variant and every rows per tile the layer packs (the pre-biased signed
// nibbles of kSignedRows included).
TEST_P(LinearIntegerDotProducts, ExactAtExtremesForEveryDecodeVariantAndRowsPerTile) {
  const std::int64_t n = 48, k = 128;
  SeededRandom rng(9);
  W4B64Storage s =
      k3test::random_code_storage(n, k, rng, [](std::size_t i) { return i % 2 ? 1.0f : 0.0f; });
  for (std::int64_t i = 0; i < n * k / 4; ++i)
    s.codes[static_cast<std::size_t>(i)] = (i % 3) ? 0xFF : 0x00;
  std::vector<float> a(static_cast<std::size_t>(k));
  for (std::int64_t i = 0; i < k; ++i)
    a[static_cast<std::size_t>(i)] = (i % 5 == 0) ? 127.0f : -127.0f;
  PackedActivations act = make_packed_activations(1, k, ActivationLayout::kRowK256);
  quantize_pack_decode(layer(), a.data(), act);
  ASSERT_EQ(act.scale[0], 1.0f);
  WorkerPool pool(2);
  const W4B64Packed rowtile32 = pack_w4b64_generic(s);
  std::vector<int> rows = k3test::packable_rows(layer(), rowtile32);
  rows.push_back(0);  // 0: the kRowTile32 weights themselves
  for (int r : rows) {
    const W4B64Packed w =
        r == 0 ? rowtile32.deep_copy() : pack_w4b64_for(layer(), rowtile32.deep_copy(), r);
    for (const std::string& v : linear_variants(layer()).decode) {
      LinearTiling tiling{64};
      tiling.ukernel = v;
      std::vector<float> out(static_cast<std::size_t>(n));
      linear_decode_w4b64(layer(), act, w, {}, out.data(), pool, tiling);
      for (std::int64_t col = 0; col < n; ++col) {
        std::int64_t d = 0;
        for (std::int64_t i = 0; i < k; ++i)
          d += static_cast<std::int64_t>(a[static_cast<std::size_t>(i)]) * (s.code(col, i) - 8);
        ASSERT_EQ(out[static_cast<std::size_t>(col)], static_cast<float>(d))
            << v << " " << k3test::packing_name(w) << " col " << col;
      }
    }
  }
}

K3_SWEEP_LAYERS(LinearIntegerDotProducts);

// ---- prefetch -----------------------------------------------------------------------------------

class LinearDecodePrefetch : public k3test::OnLayer {};

// Prefetch is a hint: any distance gives the same bytes (in builds without Zicbop it is ignored).
TEST_P(LinearDecodePrefetch, DistanceNeverChangesResults) {
#ifdef K3_HAVE_ZICBOP
  EXPECT_TRUE(prefetch_built());  // the distances below do issue prefetch.r
#else
  EXPECT_FALSE(prefetch_built());
#endif
  const LinearProblem p = k3test::make_linear_problem(layer(), 1, 200, 1024, 41);
  WorkerPool pool(2);
  const W4B64Packed w = pack_w4b64_for(layer(), p.rowtile32.deep_copy());
  const std::vector<float> off = k3test::run_linear(p, layer(), w, {}, pool);
  for (int distance : {64, 1024, 1 << 16}) {
    LinearTiling tiling;
    tiling.prefetch_bytes = distance;
    EXPECT_TRUE(k3test::bitwise_equal(k3test::run_linear(p, layer(), w, tiling, pool), off))
        << "prefetch=" << distance;
  }
}

K3_SWEEP_LAYERS(LinearDecodePrefetch);

}  // namespace
