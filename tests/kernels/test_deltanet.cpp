// Gated DeltaNet recurrence on the generic layer: the chunked prefill (several chunk sizes, a
// ragged last chunk) and the decode step against the token-by-token float64 recurrence under the
// derived bound, the decode step equal to a one-token chunk, outputs independent of the worker
// count and the column split, GQA-style key heads, deliberate defects caught, argument errors.
#include <gtest/gtest.h>

#include <cmath>

#include "k3k/deltanet.h"
#include "k3k/worker_pool.h"
#include "support/deltanet_checks.h"
#include "support/test_data.h"

namespace {

using k3k::KernelPath;
using k3test::GdnCase;
using k3test::make_gdn_case;

constexpr k3k::GdnDims kQwen35{16, 16, 128, 128};
constexpr k3k::GdnDims kGrouped{2, 4, 128, 128};  // value heads share key heads

k3k::WorkerPool& pool(int n) {
  static k3k::WorkerPool p1(1), p2(2), p3(3);
  return n == 1 ? p1 : n == 2 ? p2 : p3;
}

TEST(GatedDeltaNet, ChunkedPrefillMatchesRecurrence) {
  const GdnCase c = make_gdn_case(kGrouped, 150, 11);  // 150: ragged last chunk for 16 and 64
  for (int chunk : {1, 16, 64, 150}) {
    const auto run = k3test::run_gdn_prefill(KernelPath::kGeneric, c, chunk, 64, pool(2));
    k3test::expect_gdn_matches_recurrence("generic prefill chunk " + std::to_string(chunk),
                                          KernelPath::kGeneric, c, chunk, run);
  }
}

TEST(GatedDeltaNet, Qwen35LayerShapes) {
  const GdnCase c = make_gdn_case(kQwen35, 40, 21);
  const auto run = k3test::run_gdn_prefill(KernelPath::kGeneric, c, 32, 64, pool(2));
  k3test::expect_gdn_matches_recurrence("generic prefill 16x128x128", KernelPath::kGeneric, c, 32,
                                        run);
  const auto dec = k3test::run_gdn_decode(KernelPath::kGeneric, c, 64, pool(2));
  k3test::expect_gdn_matches_recurrence("generic decode 16x128x128", KernelPath::kGeneric, c, 1,
                                        dec);
}

TEST(GatedDeltaNet, DecodeIsAOneTokenChunk) {
  const GdnCase c = make_gdn_case(kGrouped, 33, 31);
  const auto dec = k3test::run_gdn_decode(KernelPath::kGeneric, c, 32, pool(2));
  const auto pre = k3test::run_gdn_prefill(KernelPath::kGeneric, c, 1, 64, pool(3));
  EXPECT_TRUE(k3test::bitwise_equal(dec.out, pre.out));
  EXPECT_TRUE(k3test::bitwise_equal(dec.state, pre.state));
}

TEST(GatedDeltaNet, SameBitsForAnyWorkerCountAndColumnSplit) {
  const GdnCase c = make_gdn_case({3, 3, 64, 96}, 70, 41);  // 96 columns: a partial block of 64
  const auto base = k3test::run_gdn_prefill(KernelPath::kGeneric, c, 16, 96, pool(1));
  for (int workers : {2, 3}) {
    for (int columns : {16, 64, 96}) {
      const auto r = k3test::run_gdn_prefill(KernelPath::kGeneric, c, 16, columns, pool(workers));
      EXPECT_TRUE(k3test::bitwise_equal(base.out, r.out)) << workers << " workers, " << columns;
      EXPECT_TRUE(k3test::bitwise_equal(base.state, r.state)) << workers << " workers, " << columns;
    }
  }
  const auto d1 = k3test::run_gdn_decode(KernelPath::kGeneric, c, 96, pool(1));
  const auto d3 = k3test::run_gdn_decode(KernelPath::kGeneric, c, 16, pool(3));
  EXPECT_TRUE(k3test::bitwise_equal(d1.out, d3.out));
  EXPECT_TRUE(k3test::bitwise_equal(d1.state, d3.state));
}

TEST(GatedDeltaNet, EmptyPrefillLeavesTheState) {
  GdnCase c = make_gdn_case(kGrouped, 0, 5);
  const auto run = k3test::run_gdn_prefill(KernelPath::kGeneric, c, 64, 64, pool(2));
  EXPECT_TRUE(k3test::bitwise_equal(run.state, c.state));
}

// The bound is tight enough to see a wrong kernel: the comparisons must fail for a kernel that
// ignores one token's decay, swaps key heads, or drops the initial state.
TEST(GatedDeltaNet, DeliberateDefectsAreCaught) {
  const GdnCase c = make_gdn_case(kGrouped, 40, 51);
  const auto ref = k3k::reference::gated_deltanet(
      c.dims, c.tokens, c.inputs(), c.state, k3test::gdn_model(KernelPath::kGeneric, 128, 16));
  auto fails = [&](const GdnCase& wrong) {
    const auto run = k3test::run_gdn_prefill(KernelPath::kGeneric, wrong, 16, 64, pool(2));
    return !k3k::reference::compare_to_reference(run.out, ref.out, ref.out_bound).pass;
  };
  GdnCase no_decay = c;
  no_decay.g[20 * c.dims.v_heads + 1] = 0.0f;
  EXPECT_TRUE(fails(no_decay));
  GdnCase swapped = c;  // key heads 0 and 1 exchanged for one token
  for (int i = 0; i < 128; ++i) std::swap(swapped.k[7 * 256 + i], swapped.k[7 * 256 + 128 + i]);
  EXPECT_TRUE(fails(swapped));
  GdnCase zero_state = c;
  std::fill(zero_state.state.begin(), zero_state.state.end(), 0.0f);
  EXPECT_TRUE(fails(zero_state));
  // One state element off by 1e-3 (the state is O(1)): the final-state comparison must see it.
  auto run = k3test::run_gdn_prefill(KernelPath::kGeneric, c, 16, 64, pool(2));
  run.state[1234] += 1e-3f;
  EXPECT_FALSE(k3k::reference::compare_to_reference(run.state, ref.state, ref.state_bound).pass);
}

TEST(GatedDeltaNet, ArgumentErrorsNameTheField) {
  GdnCase c = make_gdn_case(kGrouped, 4, 61);
  std::vector<float> out(static_cast<std::size_t>(c.out_floats()));
  auto prefill = [&](k3k::GdnDims d, k3k::GdnInputs in, std::span<float> state, int chunk) {
    return k3test::thrown_message(
        [&] { k3k::gdn_prefill(KernelPath::kGeneric, d, 4, in, state, out, pool(1), {chunk, 64}); });
  };
  EXPECT_NE(prefill({3, 4, 128, 128}, c.inputs(), c.state, 16).find("v_heads (4) must be a positive multiple of k_heads (3)"),
            std::string::npos);
  auto narrow = c.inputs();
  narrow.v_stride = 100;
  EXPECT_NE(prefill(kGrouped, narrow, c.state, 16).find("v_stride (100)"), std::string::npos);
  EXPECT_NE(prefill(kGrouped, c.inputs(), std::span(c.state).first(10), 16).find("state.size() (10)"),
            std::string::npos);
  EXPECT_NE(prefill(kGrouped, c.inputs(), c.state, 0).find("chunk (0)"), std::string::npos);
  auto missing = c.inputs();
  missing.beta = nullptr;
  EXPECT_NE(prefill(kGrouped, missing, c.state, 16).find("beta"), std::string::npos);
  EXPECT_NE(k3test::thrown_message([&] {
              k3k::gdn_decode(KernelPath::kGeneric, kGrouped, c.inputs(), c.state,
                              std::span(out).first(10), pool(1));
            }).find("out.size() (10)"),
            std::string::npos);
}

}  // namespace
