// What only the RVV layer's Linear has: its variants (strip LMUL, prefill rows per pass: at least
// two per op), the kSignedRows layout with rows per tile chosen for the VLEN and the shape (and for
// TCM staging), and the decode TCM pipeline on those tiles equal to the DRAM decode bit for bit.
// That every variant, rows per tile and packing gives the same bytes, on every layer, is
// tests/kernels/test_linear_variants.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "k3k/cpu.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/seeded_random.h"
#include "k3k/tcm.h"
#include "k3k/tcm_linear.h"
#include "support/linear_packings.h"
#include "support/linear_problem.h"
#include "support/test_data.h"
#include "tcm/tcm_test_support.h"

namespace {

using namespace k3k;

using k3test::LinearProblem;

LinearProblem make_problem(std::int64_t m, std::int64_t n, std::int64_t k, std::uint64_t seed) {
  return k3test::make_linear_problem(KernelPath::kRvv, m, n, k, seed);
}

// At least two variants per op (the sweep in tests/kernels runs each), all reading kSignedRows,
// which the RVV layer packs at load time.
TEST(RvvLinearVariants, TwoOrMoreVariantsPerOpAndSignedRowsPacking) {
  const LinearVariantNames names = linear_variants(KernelPath::kRvv);
  EXPECT_GE(names.decode.size(), 2u);
  EXPECT_GE(names.prefill.size(), 2u);
  const LinearProblem p = make_problem(1, 64, 128, 61);
  for (int rows : {0, 16, 32, 256}) {
    const W4B64Packed w = pack_w4b64_for(KernelPath::kRvv, p.rowtile32.deep_copy(), rows);
    EXPECT_EQ(w.layout, W4B64Layout::kSignedRows) << rows;
    EXPECT_EQ(w.row_tile, rows == 0 ? default_weight_rows(KernelPath::kRvv, 64, 128) : rows);
  }
}

TEST(RvvLinearVariants, TcmPipelineOnSignedRowsEqualsDram) {
  const LinearProblem p = make_problem(1, 520, 512, 31);
  auto tcm = tcm::make_emulated({});
  WorkerPool pool(3);
  const int rows = default_weight_rows(KernelPath::kRvv, 520, 512);
  const W4B64Packed w = pack_w4b64_for(KernelPath::kRvv, p.rowtile32.deep_copy());
  ASSERT_EQ(w.row_tile, rows);
  const std::vector<float> dram = k3test::run_linear(p, KernelPath::kRvv, w, {}, pool);
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
    EXPECT_TRUE(k3test::bitwise_equal(out, dram)) << "tcm slab_rows=" << slab_rows;
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

// Default rows per tile: one full LMUL-2 strip (VLEN/4 rows, at least 64, at most 256), no more
// rows than the weight has (in strips of 16), and, staged through TCM, tiles of which two fit in a
// block (the largest such multiple of 16).
TEST(RvvLinearVariants, DefaultRowsFollowTheVectorLengthAndTheShape) {
  const int vlenb = cpu_features().vlenb;
  const int wide = std::max(64, std::min(2 * vlenb, kMaxRowTile));
  for (const std::int64_t n : {wide, 4 * wide, 8 * wide, 8 * wide - 16, 151936})
    EXPECT_EQ(default_weight_rows(KernelPath::kRvv, n, 2048), wide) << n;
  EXPECT_EQ(default_weight_rows(KernelPath::kRvv, 16, 1024), 16);
  EXPECT_EQ(default_weight_rows(KernelPath::kRvv, 40, 1024), std::min(48, wide));
  const std::int64_t two_wide = 2 * W4B64Packed::packed_bytes(wide, 2048, wide);
  EXPECT_EQ(default_weight_rows(KernelPath::kRvv, 8 * wide, 2048, two_wide), wide);
  const int staged = default_weight_rows(KernelPath::kRvv, 8 * wide, 2048, two_wide - 1);
  EXPECT_EQ(staged, wide - 16);
  EXPECT_LE(2 * W4B64Packed::packed_bytes(staged, 2048, staged), two_wide - 1);
  const int narrow = default_weight_rows(KernelPath::kRvv, 64, 64);
  EXPECT_EQ(narrow, 64);

  // The LMUL "auto" takes covers the default tile: LMUL 2 for a wide tile (and up to VLEN 256,
  // where 64 rows exceed an LMUL-1 strip), else LMUL 1.
  for (const auto& [n, rows] : {std::pair{64, narrow}, std::pair{8 * wide, wide}}) {
    const LinearProblem p = make_problem(1, n, 64, 51);
    const W4B64Packed w = pack_w4b64_for(KernelPath::kRvv, p.rowtile32.deep_copy());
    ASSERT_EQ(w.row_tile, rows) << "n=" << n;
    const std::string lmul = rows > vlenb ? "e8m2" : "e8m1";
    EXPECT_NE(default_linear_decode(KernelPath::kRvv, w).find(lmul), std::string::npos)
        << default_linear_decode(KernelPath::kRvv, w);
    EXPECT_NE(default_linear_prefill(KernelPath::kRvv, w).find(lmul), std::string::npos)
        << default_linear_prefill(KernelPath::kRvv, w);
  }
}

// The defaults never change a result: decode and prefill outputs of weights packed with the
// default rows per tile (for DRAM and for TCM staging) are bitwise those of 32-row kRowTile32
// weights, on shapes smaller than a strip, between strips and of many tiles.
TEST(RvvLinearVariants, DefaultRowsDoNotChangeOutputs) {
  WorkerPool pool(2);
  for (const auto& [m, n, k] :
       {std::tuple{1, 16, 128}, std::tuple{1, 40, 192}, std::tuple{5, 300, 256},
        std::tuple{1, 1030, 512}, std::tuple{9, 520, 128}}) {
    const LinearProblem p = make_problem(m, n, k, 71);
    const std::vector<float> want = k3test::run_linear(p, KernelPath::kRvv, p.rowtile32, {}, pool);
    for (const std::int64_t tcm_block : {std::int64_t{0}, std::int64_t{96} << 10}) {
      const int rows = default_weight_rows(KernelPath::kRvv, n, k, tcm_block);
      const W4B64Packed w = pack_w4b64_for(KernelPath::kRvv, p.rowtile32.deep_copy(), rows);
      EXPECT_TRUE(k3test::bitwise_equal(k3test::run_linear(p, KernelPath::kRvv, w, {}, pool), want))
          << "m=" << m << " n=" << n << " k=" << k << " rows=" << rows;
    }
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
  w.codes =
      AlignedBuffer<std::uint8_t>(static_cast<std::size_t>(w.row_tiles() * w.tile_code_bytes()));
  w.pairs = AlignedBuffer<fp16_t>(static_cast<std::size_t>(2 * w.row_tiles() * w.tile_pairs()));
  TcmDecodeParams params;
  params.use = TcmUse::kOn;
  params.compute_workers = pool.size();
  const TcmGateDecision d = decide_tcm_decode(KernelPath::kRvv, w, &ws, params, pool.size());
  EXPECT_TRUE(d.use_tcm) << "rows " << rows << ": " << d.reason;
}

}  // namespace
