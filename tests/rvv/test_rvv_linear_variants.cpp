// The RVV Linear microkernel variants (strip LMUL, prefill pass rows) and the kSignedRows weight
// layout at several rows per tile: every combination gives the bytes of the RVV layer on the
// kRowTile32 weights (the arithmetic per output is the same; the golden hashes pin that one), is
// within the float64 reference's bound, and the DRAM and TCM decode agree bit for bit. Runs at
// every VLEN of the qemu tests, so each variant meets strips narrower and wider than its tile.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "k3k/cpu.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/seeded_random.h"
#include "k3k/tcm.h"
#include "k3k/tcm_linear.h"
#include "support/linear_checks.h"
#include "support/test_data.h"
#include "tcm/tcm_test_support.h"

namespace {

using namespace k3k;

std::vector<float> normal_row(std::int64_t count, std::uint64_t seed) {
  std::vector<float> a(static_cast<std::size_t>(count));
  SeededRandom rng(seed);
  for (auto& x : a) x = static_cast<float>(rng.normal());
  return a;
}

using k3test::hqq_weights;

// A deep copy (packing consumes its argument).
W4B64Packed clone_packed(const W4B64Packed& src) {
  W4B64Packed p;
  p.n = src.n;
  p.k = src.k;
  p.layout = src.layout;
  p.row_tile = src.row_tile;
  p.codes = AlignedBuffer<std::uint8_t>::copy_of(src.codes.span());
  p.scale = AlignedBuffer<float>::copy_of(src.scale.span());
  p.beta = AlignedBuffer<float>::copy_of(src.beta.span());
  return p;
}

// Rows per tile to try: the default for this VLEN and a spread around it (multiples of 16).
std::vector<int> rows_to_try() {
  std::vector<int> v = {16, 32, 48, 64, 128, 256, default_weight_rows(KernelPath::kRvv, 520, 512),
                        default_weight_rows(KernelPath::kRvv, 4096, 2048)};
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

struct Problem {
  std::int64_t m, n, k;
  W4B64Storage storage;
  W4B64Packed rowtile32;
  PackedActivations act;
  std::vector<float> bias;
  LinearEpilogue ep;
};

Problem make_problem(std::int64_t m, std::int64_t n, std::int64_t k, std::uint64_t seed) {
  Problem p{m, n, k, hqq_weights(n, k, seed), {}, {}, normal_row(n, seed + 1), {}};
  p.rowtile32 = pack_w4b64_generic(p.storage);
  const bool decode = m == 1;
  p.act = make_packed_activations(m, k,
                                  decode ? ActivationLayout::kRowK256 : ActivationLayout::kRowsM4);
  const std::vector<float> a = normal_row(m * k, seed + 2);
  WorkerPool pool(1);
  if (decode)
    quantize_pack_decode(KernelPath::kRvv, a.data(), p.act);
  else
    quantize_pack_prefill(KernelPath::kRvv, a.data(), p.act, pool);
  p.ep.bias = p.bias.data();
  return p;
}

std::vector<float> run(const Problem& p, KernelPath path, const W4B64Packed& w,
                       const LinearTiling& tiling, WorkerPool& pool) {
  std::vector<float> out(static_cast<std::size_t>(p.m * p.n), -7.0f);
  if (p.m == 1)
    linear_decode_w4b64(path, p.act, w, p.ep, out.data(), pool, tiling);
  else
    linear_prefill_w4b64(path, p.act, w, p.ep, out.data(), pool, tiling);
  return out;
}

void expect_same_bytes(const std::vector<float>& got, const std::vector<float>& want,
                       const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float))) << what;
}

void check_every_variant(std::int64_t m, std::int64_t n, std::int64_t k, std::uint64_t seed) {
  SCOPED_TRACE(testing::Message() << "m=" << m << " n=" << n << " k=" << k
                                  << " vlenb=" << cpu_features().vlenb);
  const Problem p = make_problem(m, n, k, seed);
  WorkerPool pool(3);
  const std::vector<float> want = run(p, KernelPath::kRvv, p.rowtile32, {}, pool);
  const std::vector<float> generic = run(p, KernelPath::kGeneric, p.rowtile32, {}, pool);
  k3test::expect_linear_within_bound(p.storage, p.act, p.ep, m, n, want, generic);
  const LinearVariantNames names = linear_variants(KernelPath::kRvv);
  const std::vector<std::string>& variants = m == 1 ? names.decode : names.prefill;
  ASSERT_GE(variants.size(), 2u);
  for (int rows : rows_to_try()) {
    const W4B64Packed w = pack_w4b64_for(KernelPath::kRvv, clone_packed(p.rowtile32), rows);
    ASSERT_EQ(w.layout, W4B64Layout::kSignedRows);
    ASSERT_EQ(w.row_tile, rows);
    expect_same_bytes(run(p, KernelPath::kRvv, w, {}, pool), want,
                      "auto, rows=" + std::to_string(rows));
    for (const std::string& v : variants) {
      for (int tile_n : {rows, 2 * rows, 40}) {
        LinearTiling tiling{tile_n};
        tiling.ukernel = v;
        expect_same_bytes(
            run(p, KernelPath::kRvv, w, tiling, pool), want,
            v + ", rows=" + std::to_string(rows) + ", tile_n=" + std::to_string(tile_n));
        if (rows == 32) {  // the variants also read kRowTile32 (codes made signed in the loop)
          expect_same_bytes(run(p, KernelPath::kRvv, p.rowtile32, tiling, pool), want,
                            v + " on rowtile32, tile_n=" + std::to_string(tile_n));
        }
      }
    }
  }
}

TEST(RvvLinearVariants, DecodeEveryVariantAndRowsGivesTheSameBytes) {
  check_every_variant(1, 300, 256, 21);  // 300 rows: partial tiles and partial strips everywhere
  check_every_variant(1, 64, 64, 22);
}

TEST(RvvLinearVariants, PrefillEveryVariantAndRowsGivesTheSameBytes) {
  check_every_variant(6, 150, 192, 23);  // 6 rows: one full and one partial M4 group
  check_every_variant(4, 33, 64, 24);
}

// With scale 1 and beta 0 the outputs are the integer dot products (all < 2^24): the pre-biased
// signed-nibble codes are exact, at the extreme codes (0 and 15) and activations (+-127) too.
TEST(RvvLinearVariants, SignedRowsIntegerDotProductsExactAtExtremes) {
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
  quantize_pack_decode(KernelPath::kRvv, a.data(), act);
  ASSERT_EQ(act.scale[0], 1.0f);
  WorkerPool pool(2);
  for (int rows : {16, 32, 64}) {
    const W4B64Packed w = pack_w4b64_signed_rows(pack_w4b64_generic(s), rows);
    for (const std::string& v : linear_variants(KernelPath::kRvv).decode) {
      LinearTiling tiling{64};
      tiling.ukernel = v;
      std::vector<float> out(static_cast<std::size_t>(n));
      linear_decode_w4b64(KernelPath::kRvv, act, w, {}, out.data(), pool, tiling);
      for (std::int64_t col = 0; col < n; ++col) {
        std::int64_t d = 0;
        for (std::int64_t i = 0; i < k; ++i)
          d += static_cast<std::int64_t>(a[static_cast<std::size_t>(i)]) * (s.code(col, i) - 8);
        ASSERT_EQ(out[static_cast<std::size_t>(col)], static_cast<float>(d))
            << v << " rows=" << rows << " col " << col;
      }
    }
  }
}

TEST(RvvLinearVariants, TcmPipelineOnSignedRowsEqualsDram) {
  const Problem p = make_problem(1, 520, 512, 31);
  auto tcm = tcm::make_emulated({});
  WorkerPool pool(3);
  const int rows = default_weight_rows(KernelPath::kRvv, 520, 512);
  const W4B64Packed w = pack_w4b64_for(KernelPath::kRvv, clone_packed(p.rowtile32));
  ASSERT_EQ(w.row_tile, rows);
  const std::vector<float> dram = run(p, KernelPath::kRvv, w, {}, pool);
  for (int slab_rows : {0, rows, 2 * rows}) {
    TcmWorkspace ws(*tcm, pool);
    TcmDecodeParams params;
    params.use = TcmUse::kOn;
    params.compute_workers = pool.size();
    params.slab_rows = slab_rows;
    std::vector<float> out(dram.size(), -7.0f);
    const auto r =
        tcm_test::decode_with_tcm(KernelPath::kRvv, p.act, w, p.ep, out.data(), pool, &ws, params);
    EXPECT_TRUE(r.gate.use_tcm) << r.gate.reason;
    EXPECT_EQ(r.gate.slab_rows % rows, 0) << r.gate.slab_rows;
    expect_same_bytes(out, dram, "tcm slab_rows=" + std::to_string(slab_rows));
  }
  // A slab that is not a whole number of tiles is refused by the gate, not miscomputed.
  if (rows > 16) {
    TcmWorkspace ws(*tcm, pool);
    TcmDecodeParams params;
    params.use = TcmUse::kOn;
    params.slab_rows = rows + 16;
    EXPECT_FALSE(decide_tcm_decode(KernelPath::kRvv, w, &ws, params, pool.size()).use_tcm);
  }
}

// Prefetch is a hint: any distance gives the same bytes (in builds without Zicbop it is ignored).
TEST(RvvLinearVariants, PrefetchDistanceNeverChangesResults) {
#ifdef K3_HAVE_ZICBOP
  EXPECT_TRUE(prefetch_built());  // the distances below do issue prefetch.r
#else
  EXPECT_FALSE(prefetch_built());
#endif
  const Problem p = make_problem(1, 200, 1024, 41);
  WorkerPool pool(2);
  const W4B64Packed w = pack_w4b64_for(KernelPath::kRvv, clone_packed(p.rowtile32));
  const std::vector<float> off = run(p, KernelPath::kRvv, w, {}, pool);
  for (int distance : {64, 1024, 1 << 16}) {
    LinearTiling tiling;
    tiling.prefetch_bytes = distance;
    expect_same_bytes(run(p, KernelPath::kRvv, w, tiling, pool), off,
                      "prefetch=" + std::to_string(distance));
  }
}

// Default rows per tile: one full LMUL-2 strip (VLEN/4 rows, at least 64, at most 256) when the
// weight still makes 8 such tiles and, staged through TCM, two of them fit in a block; else one
// LMUL-1 strip (VLEN/8 rows, at least 64).
TEST(RvvLinearVariants, DefaultRowsFollowTheVectorLengthAndTheShape) {
  const int vlenb = cpu_features().vlenb;
  const int narrow = std::max(64, vlenb);
  const int wide = std::max(64, std::min(2 * vlenb, kMaxRowTile));
  EXPECT_EQ(default_weight_rows(KernelPath::kRvv, 8 * wide, 2048), wide);
  EXPECT_EQ(default_weight_rows(KernelPath::kRvv, 8 * wide - 16, 2048), narrow);
  EXPECT_EQ(default_weight_rows(KernelPath::kRvv, 64, 64), narrow);
  const std::int64_t two_wide = 2 * W4B64Packed::packed_bytes(wide, 2048, wide);
  EXPECT_EQ(default_weight_rows(KernelPath::kRvv, 8 * wide, 2048, two_wide), wide);
  EXPECT_EQ(default_weight_rows(KernelPath::kRvv, 8 * wide, 2048, two_wide - 1), narrow);

  // The LMUL "auto" takes covers the default tile: LMUL 2 for a wide tile (and up to VLEN 256,
  // where 64 rows exceed an LMUL-1 strip), else LMUL 1.
  for (const auto& [n, rows] : {std::pair{64, narrow}, std::pair{8 * wide, wide}}) {
    const Problem p = make_problem(1, n, 64, 51);
    const W4B64Packed w = pack_w4b64_for(KernelPath::kRvv, clone_packed(p.rowtile32));
    ASSERT_EQ(w.row_tile, rows) << "n=" << n;
    const std::string lmul = rows > vlenb ? "e8m2" : "e8m1";
    EXPECT_NE(default_linear_decode(KernelPath::kRvv, w).find(lmul), std::string::npos)
        << default_linear_decode(KernelPath::kRvv, w);
    EXPECT_NE(default_linear_prefill(KernelPath::kRvv, w).find(lmul), std::string::npos)
        << default_linear_prefill(KernelPath::kRvv, w);
  }
}

// The default for weights the decode TCM pipeline will stage leaves that pipeline usable: its
// gate takes the tiles (two per block) for a Qwen-sized K at every VLEN.
TEST(RvvLinearVariants, DefaultRowsForTcmStagingPassTheTcmGate) {
  auto tcm = tcm::make_emulated({});
  WorkerPool pool(2);
  TcmWorkspace ws(*tcm, pool);
  const std::int64_t block = static_cast<std::int64_t>(tcm->geometry().block_bytes);
  const int rows = default_weight_rows(KernelPath::kRvv, 2048, 2048, block);
  // The gate reads the shape and the layout, not the codes: 2048 x 2048 weights of that layout.
  W4B64Packed w;
  w.n = w.k = 2048;
  w.layout = W4B64Layout::kSignedRows;
  w.row_tile = rows;
  w.codes = AlignedBuffer<std::uint8_t>(static_cast<std::size_t>(w.row_tiles() * w.tile_code_bytes()));
  w.scale = AlignedBuffer<float>(static_cast<std::size_t>(w.row_tiles() * w.tile_floats()));
  w.beta = AlignedBuffer<float>(static_cast<std::size_t>(w.row_tiles() * w.tile_floats()));
  TcmDecodeParams params;
  params.use = TcmUse::kOn;
  params.compute_workers = pool.size();
  const TcmGateDecision d = decide_tcm_decode(KernelPath::kRvv, w, &ws, params, pool.size());
  EXPECT_TRUE(d.use_tcm) << "rows " << rows << ": " << d.reason;
}

TEST(RvvLinearVariants, UnknownVariantAndUnreadLayoutThrow) {
  const Problem p = make_problem(1, 64, 128, 61);
  WorkerPool pool(1);
  std::vector<float> out(64);
  LinearTiling bad;
  bad.ukernel = "linear_decode-w4b64-srows-m1-e8m8-rvv";
  EXPECT_THROW(
      linear_decode_w4b64(KernelPath::kRvv, p.act, p.rowtile32, p.ep, out.data(), pool, bad),
      std::invalid_argument);
  // The generic layer does not read kSignedRows; an RVV variant name is not a generic one.
  const W4B64Packed srows = pack_w4b64_for(KernelPath::kRvv, clone_packed(p.rowtile32), 32);
  EXPECT_THROW(linear_decode_w4b64(KernelPath::kGeneric, p.act, srows, p.ep, out.data(), pool, {}),
               std::invalid_argument);
  LinearTiling rvv_name;
  rvv_name.ukernel = linear_variants(KernelPath::kRvv).decode.front();
  EXPECT_THROW(linear_decode_w4b64(KernelPath::kGeneric, p.act, p.rowtile32, p.ep, out.data(), pool,
                                   rvv_name),
               std::invalid_argument);
}

}  // namespace
