// RVV Gated DeltaNet ops vs their float64 references (the RVV dot depth for the vlenb this runs
// at) and vs the generic layer (within the sum of both layers' bounds): the chunked prefill at
// several chunk sizes, the decode step (equal to a one-token chunk), Qwen3.5 shapes, GQA key
// heads, worker-count and column-split invariance; the row-wise ops likewise.
#include <gtest/gtest.h>

#include "k3k/deltanet.h"
#include "k3k/worker_pool.h"
#include "support/deltanet_checks.h"
#include "support/gdn_rows_checks.h"
#include "support/test_data.h"

namespace {

using k3k::KernelPath;
using k3test::GdnCase;
using k3test::make_gdn_case;

k3k::WorkerPool& pool(int n) {
  static k3k::WorkerPool p1(1), p2(2), p3(3);
  return n == 1 ? p1 : n == 2 ? p2 : p3;
}

// rvv within the sum of the two layers' bounds of generic.
void expect_layers_agree(const std::string& what, const GdnCase& c, int chunk,
                         const k3test::GdnRun& rvv, const k3test::GdnRun& gen) {
  const auto rr = k3k::reference::gated_deltanet(c.dims, c.tokens, c.inputs(), c.state,
                                                 k3test::gdn_model(KernelPath::kRvv, c.dims.k_dim, chunk));
  const auto rg = k3k::reference::gated_deltanet(
      c.dims, c.tokens, c.inputs(), c.state, k3test::gdn_model(KernelPath::kGeneric, c.dims.k_dim, chunk));
  auto sum = [](const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> s(a.size());
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = a[i] + b[i];
    return s;
  };
  k3test::expect_within(what + " outputs vs generic", rvv.out,
                        std::vector<double>(gen.out.begin(), gen.out.end()),
                        sum(rr.out_bound, rg.out_bound));
  k3test::expect_within(what + " state vs generic", rvv.state,
                        std::vector<double>(gen.state.begin(), gen.state.end()),
                        sum(rr.state_bound, rg.state_bound));
}

TEST(RvvGatedDeltaNet, ChunkedPrefillMatchesRecurrenceAndGeneric) {
  const GdnCase c = make_gdn_case({2, 4, 128, 128}, 75, 11);
  for (int chunk : {1, 16, 64}) {
    const auto rvv = k3test::run_gdn_prefill(KernelPath::kRvv, c, chunk, 64, pool(2));
    k3test::expect_gdn_matches_recurrence("rvv prefill chunk " + std::to_string(chunk),
                                          KernelPath::kRvv, c, chunk, rvv);
    const auto gen = k3test::run_gdn_prefill(KernelPath::kGeneric, c, chunk, 64, pool(2));
    expect_layers_agree("rvv prefill chunk " + std::to_string(chunk), c, chunk, rvv, gen);
  }
}

TEST(RvvGatedDeltaNet, DecodeMatchesRecurrenceAndIsAOneTokenChunk) {
  const GdnCase c = make_gdn_case({16, 16, 128, 128}, 12, 21);
  const auto dec = k3test::run_gdn_decode(KernelPath::kRvv, c, 64, pool(2));
  k3test::expect_gdn_matches_recurrence("rvv decode 16x128x128", KernelPath::kRvv, c, 1, dec);
  const auto pre = k3test::run_gdn_prefill(KernelPath::kRvv, c, 1, 128, pool(3));
  EXPECT_TRUE(k3test::bitwise_equal(dec.out, pre.out));
  EXPECT_TRUE(k3test::bitwise_equal(dec.state, pre.state));
}

TEST(RvvGatedDeltaNet, OddShapesAndSameBitsForAnyWorkerCount) {
  // k_dim 37 (state rows not a multiple of 4), 45 columns (a partial strip), 7 tokens per chunk
  // (a partial block of 4 tokens).
  const GdnCase c = make_gdn_case({1, 3, 37, 45}, 23, 31);
  const auto base = k3test::run_gdn_prefill(KernelPath::kRvv, c, 7, 45, pool(1));
  k3test::expect_gdn_matches_recurrence("rvv prefill 3x37x45 chunk 7", KernelPath::kRvv, c, 7, base);
  for (int workers : {2, 3}) {
    for (int columns : {8, 45}) {
      const auto r = k3test::run_gdn_prefill(KernelPath::kRvv, c, 7, columns, pool(workers));
      EXPECT_TRUE(k3test::bitwise_equal(base.out, r.out)) << workers << " workers, " << columns;
      EXPECT_TRUE(k3test::bitwise_equal(base.state, r.state)) << workers << " workers, " << columns;
    }
  }
}

TEST(RvvGdnRows, AgainstReferenceAndGeneric) {
  const auto gates_r = k3test::check_gates(KernelPath::kRvv, 50, 16, 32, pool(3));
  const auto gates_g = k3test::check_gates(KernelPath::kGeneric, 50, 16, 32, pool(3));
  // Both within gamma_27 of the reference: within 2 gamma_27 relative of each other.
  for (std::size_t i = 0; i < gates_r.g.size(); ++i) {
    EXPECT_NEAR(gates_r.g[i], gates_g.g[i], 3.3e-6 * std::fabs(gates_g.g[i]) + 1e-30) << i;
  }
  const auto l2 = k3test::check_l2norm(KernelPath::kRvv, 20, 16, 128, 6144, pool(3));
  EXPECT_TRUE(k3test::bitwise_equal(l2, k3test::check_l2norm(KernelPath::kRvv, 20, 16, 128, 6144, pool(1))));
  k3test::check_l2norm(KernelPath::kRvv, 3, 3, 37, 200, pool(2));
  const auto conv = k3test::check_conv(KernelPath::kRvv, 37, 6144, 4, pool(3));
  EXPECT_TRUE(k3test::bitwise_equal(conv, k3test::check_conv(KernelPath::kRvv, 37, 6144, 4, pool(1))));
  k3test::check_conv(KernelPath::kRvv, 2, 300, 4, pool(2));
  k3test::check_gated_rmsnorm(KernelPath::kRvv, 40, 128, pool(3));
  k3test::check_gated_rmsnorm(KernelPath::kRvv, 3, 45, pool(2));
  k3test::check_sigmoid_gate(KernelPath::kRvv, 4099, pool(3));
}

}  // namespace
