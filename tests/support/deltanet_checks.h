// Checks of the Gated DeltaNet ops on one layer against their float64 references, shared by the
// generic (tests/kernels) and RVV (tests/rvv) suites. Each runs the layer's kernel, compares every
// element with the reference under the layer's bound and returns the outputs (so a caller can
// compare layers with each other), printing the worst error/bound ratio.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "k3k/cpu.h"
#include "k3k/deltanet.h"
#include "k3k/reference/compare.h"
#include "k3k/reference/deltanet.h"
#include "k3k/reference/attention.h"
#include "support/deltanet_cases.h"

namespace k3test {

struct GdnRun {
  std::vector<float> out, state;
};

// The recurrence's error model for a layer (the RVV one depends on vlenb).
inline k3k::reference::GdnErrorModel gdn_model(k3k::KernelPath path, int k_dim, int chunk) {
  return path == k3k::KernelPath::kGeneric
             ? k3k::reference::generic_gdn_error_model(k_dim, chunk)
             : k3k::reference::rvv_gdn_error_model(k_dim, chunk, k3k::cpu_features().vlenb);
}

// The sum depth of a layer's sum of squares (l2norm, gated RMSNorm).
inline std::int64_t sum_depth(k3k::KernelPath path, int dim) {
  return path == k3k::KernelPath::kGeneric
             ? 0
             : k3k::reference::rvv_dot_depth(dim, k3k::cpu_features().vlenb);
}

inline void expect_within(const std::string& what, const std::vector<float>& got,
                          const std::vector<double>& ref, const std::vector<double>& bound) {
  const auto r = k3k::reference::compare_to_reference(got, ref, bound);
  EXPECT_TRUE(r.pass) << what << ": " << k3k::reference::describe(r, got, ref, bound);
  std::printf("  %-58s worst error/bound %.3g (max abs err %.3g)\n", what.c_str(), r.worst_ratio,
              r.max_abs_err);
}

inline GdnRun run_gdn_prefill(k3k::KernelPath path, const GdnCase& c, int chunk, int columns,
                              k3k::WorkerPool& pool) {
  GdnRun r{std::vector<float>(static_cast<std::size_t>(c.out_floats())), c.state};
  k3k::gdn_prefill(path, c.dims, c.tokens, c.inputs(), r.state, r.out, pool, {chunk, columns});
  return r;
}

// Token by token through gdn_decode.
inline GdnRun run_gdn_decode(k3k::KernelPath path, const GdnCase& c, int columns,
                             k3k::WorkerPool& pool) {
  GdnRun r{std::vector<float>(static_cast<std::size_t>(c.out_floats())), c.state};
  const std::size_t v_row = static_cast<std::size_t>(c.dims.v_heads) * c.dims.v_dim;
  for (std::int64_t t = 0; t < c.tokens; ++t) {
    k3k::gdn_decode(path, c.dims, c.inputs(t), r.state,
                    std::span(r.out).subspan(static_cast<std::size_t>(t) * v_row, v_row), pool,
                    {columns});
  }
  return r;
}

// Outputs and final state against the token-by-token float64 recurrence.
inline void expect_gdn_matches_recurrence(const std::string& what, k3k::KernelPath path,
                                          const GdnCase& c, int chunk, const GdnRun& run) {
  const auto ref = k3k::reference::gated_deltanet(c.dims, c.tokens, c.inputs(), c.state,
                                                  gdn_model(path, c.dims.k_dim, chunk));
  expect_within(what + " outputs", run.out, ref.out, ref.out_bound);
  expect_within(what + " state", run.state, ref.state, ref.state_bound);
}

}  // namespace k3test
