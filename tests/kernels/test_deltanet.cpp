// Gated DeltaNet recurrence on every layer (support/layer_sweep.h): the chunked prefill (several
// chunk sizes, a ragged last chunk) and the decode step against the token-by-token float64
// recurrence under the layer's bound, and a layer other than generic within the sum of both
// layers' bounds of the generic layer; the decode step equal to a one-token chunk; outputs
// independent of the worker count and the column split (Qwen3.5 shapes, GQA-style key heads and
// odd ones: state rows not a multiple of 4, partial strips and blocks); deliberate defects caught;
// argument errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "k3k/deltanet.h"
#include "k3k/worker_pool.h"
#include "support/deltanet_checks.h"
#include "support/layer_sweep.h"
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

class GatedDeltaNet : public k3test::OnLayer {};

TEST_P(GatedDeltaNet, ChunkedPrefillMatchesRecurrenceAndGeneric) {
  const GdnCase c = make_gdn_case(kGrouped, 150, 11);  // 150: ragged last chunk for 16 and 64
  for (int chunk : {1, 16, 64, 150}) {
    const std::string what =
        std::string(k3k::to_string(layer())) + " prefill chunk " + std::to_string(chunk);
    const auto run = k3test::run_gdn_prefill(layer(), c, chunk, 64, pool(2));
    const auto ref = k3test::expect_gdn_matches_recurrence(what, layer(), c, chunk, run);
    if (!is_generic()) {
      const auto gen = k3test::run_gdn_prefill(KernelPath::kGeneric, c, chunk, 64, pool(2));
      k3test::expect_gdn_near_generic(what, c, chunk, ref, run, gen);
    }
  }
}

TEST_P(GatedDeltaNet, Qwen35LayerShapes) {
  const GdnCase c = make_gdn_case(kQwen35, 40, 21);
  const std::string name = k3k::to_string(layer());
  const auto run = k3test::run_gdn_prefill(layer(), c, 32, 64, pool(2));
  k3test::expect_gdn_matches_recurrence(name + " prefill 16x128x128", layer(), c, 32, run);
  const auto dec = k3test::run_gdn_decode(layer(), c, 64, pool(2));
  k3test::expect_gdn_matches_recurrence(name + " decode 16x128x128", layer(), c, 1, dec);
}

// The decode step is a one-token chunk, bit for bit, whatever the column split and workers: GQA
// key heads, and the Qwen3.5 shape.
TEST_P(GatedDeltaNet, DecodeIsAOneTokenChunk) {
  struct Shape {
    k3k::GdnDims dims;
    std::int64_t tokens;
    std::uint64_t seed;
    int decode_columns, prefill_columns;
  };
  for (const Shape& s : {Shape{kGrouped, 33, 31, 32, 64}, Shape{kQwen35, 12, 21, 64, 128}}) {
    const GdnCase c = make_gdn_case(s.dims, s.tokens, s.seed);
    const auto dec = k3test::run_gdn_decode(layer(), c, s.decode_columns, pool(2));
    const auto pre = k3test::run_gdn_prefill(layer(), c, 1, s.prefill_columns, pool(3));
    EXPECT_TRUE(k3test::bitwise_equal(dec.out, pre.out)) << s.dims.v_heads << " heads";
    EXPECT_TRUE(k3test::bitwise_equal(dec.state, pre.state)) << s.dims.v_heads << " heads";
  }
}

TEST_P(GatedDeltaNet, SameBitsForAnyWorkerCountAndColumnSplit) {
  const GdnCase c = make_gdn_case({3, 3, 64, 96}, 70, 41);  // 96 columns: a partial block of 64
  const auto base = k3test::run_gdn_prefill(layer(), c, 16, 96, pool(1));
  for (int workers : {2, 3}) {
    for (int columns : {16, 64, 96}) {
      const auto r = k3test::run_gdn_prefill(layer(), c, 16, columns, pool(workers));
      EXPECT_TRUE(k3test::bitwise_equal(base.out, r.out)) << workers << " workers, " << columns;
      EXPECT_TRUE(k3test::bitwise_equal(base.state, r.state)) << workers << " workers, " << columns;
    }
  }
  const auto d1 = k3test::run_gdn_decode(layer(), c, 96, pool(1));
  const auto d3 = k3test::run_gdn_decode(layer(), c, 16, pool(3));
  EXPECT_TRUE(k3test::bitwise_equal(d1.out, d3.out));
  EXPECT_TRUE(k3test::bitwise_equal(d1.state, d3.state));
}

// k_dim 37 (state rows not a multiple of 4), 45 columns (a partial strip), 7 tokens per chunk (a
// partial block of 4 tokens).
TEST_P(GatedDeltaNet, OddShapesMatchRecurrenceAndSameBitsForAnyWorkerCount) {
  const GdnCase c = make_gdn_case({1, 3, 37, 45}, 23, 31);
  const auto base = k3test::run_gdn_prefill(layer(), c, 7, 45, pool(1));
  k3test::expect_gdn_matches_recurrence(
      std::string(k3k::to_string(layer())) + " prefill 3x37x45 chunk 7", layer(), c, 7, base);
  for (int workers : {2, 3}) {
    for (int columns : {8, 45}) {
      const auto r = k3test::run_gdn_prefill(layer(), c, 7, columns, pool(workers));
      EXPECT_TRUE(k3test::bitwise_equal(base.out, r.out)) << workers << " workers, " << columns;
      EXPECT_TRUE(k3test::bitwise_equal(base.state, r.state)) << workers << " workers, " << columns;
    }
  }
}

TEST_P(GatedDeltaNet, EmptyPrefillLeavesTheState) {
  GdnCase c = make_gdn_case(kGrouped, 0, 5);
  const auto run = k3test::run_gdn_prefill(layer(), c, 64, 64, pool(2));
  EXPECT_TRUE(k3test::bitwise_equal(run.state, c.state));
}

// The bound is tight enough to see a wrong kernel: the comparisons must fail for a kernel that
// ignores one token's decay, swaps key heads, or drops the initial state.
TEST_P(GatedDeltaNet, DeliberateDefectsAreCaught) {
  const GdnCase c = make_gdn_case(kGrouped, 40, 51);
  const auto ref = k3test::gdn_reference(layer(), c, 16);
  auto fails = [&](const GdnCase& wrong) {
    const auto run = k3test::run_gdn_prefill(layer(), wrong, 16, 64, pool(2));
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
  auto run = k3test::run_gdn_prefill(layer(), c, 16, 64, pool(2));
  run.state[1234] += 1e-3f;
  EXPECT_FALSE(k3k::reference::compare_to_reference(run.state, ref.state, ref.state_bound).pass);
}

TEST_P(GatedDeltaNet, ArgumentErrorsNameTheField) {
  GdnCase c = make_gdn_case(kGrouped, 4, 61);
  std::vector<float> out(static_cast<std::size_t>(c.out_floats()));
  auto prefill_rejects = [&](const std::string& field, k3k::GdnDims d, k3k::GdnInputs in,
                             std::span<float> state, int chunk) {
    k3test::expect_rejected(layer(), field, [&](KernelPath path) {
      k3k::gdn_prefill(path, d, 4, in, state, out, pool(1), {chunk, 64});
    });
  };
  prefill_rejects("v_heads (4) must be a positive multiple of k_heads (3)", {3, 4, 128, 128},
                  c.inputs(), c.state, 16);
  auto narrow = c.inputs();
  narrow.v_stride = 100;
  prefill_rejects("v_stride (100)", kGrouped, narrow, c.state, 16);
  prefill_rejects("state.size() (10)", kGrouped, c.inputs(), std::span(c.state).first(10), 16);
  prefill_rejects("chunk (0)", kGrouped, c.inputs(), c.state, 0);
  auto missing = c.inputs();
  missing.beta = nullptr;
  prefill_rejects("beta", kGrouped, missing, c.state, 16);
  k3test::expect_rejected(layer(), "out.size() (10)", [&](KernelPath path) {
    k3k::gdn_decode(path, kGrouped, c.inputs(), c.state, std::span(out).first(10), pool(1));
  });
}

K3_SWEEP_LAYERS(GatedDeltaNet);

}  // namespace
