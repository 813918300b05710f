// Runs of the Gated DeltaNet ops on one layer and their check against the float64 recurrence under
// the layer's bound (support/layer_bounds.h), for the swept tests
// (tests/kernels/test_deltanet.cpp). The runs return outputs and state, so a caller can compare
// runs and layers.
#pragma once

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "k3k/deltanet.h"
#include "k3k/reference/deltanet.h"
#include "support/deltanet_cases.h"
#include "support/layer_bounds.h"
#include "support/layer_checks.h"

namespace k3test {

struct GdnRun {
  std::vector<float> out, state;
};

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

// The token-by-token float64 recurrence with the bounds of `path`'s kernels at `chunk`.
inline k3k::reference::GdnReference gdn_reference(k3k::KernelPath path, const GdnCase& c,
                                                  int chunk) {
  return k3k::reference::gated_deltanet(c.dims, c.tokens, c.inputs(), c.state,
                                        gdn_model(path, c.dims.k_dim, chunk));
}

// Outputs and final state against the recurrence; returns it (its bounds are `path`'s).
inline k3k::reference::GdnReference expect_gdn_matches_recurrence(const std::string& what,
                                                                  k3k::KernelPath path,
                                                                  const GdnCase& c, int chunk,
                                                                  const GdnRun& run) {
  auto ref = gdn_reference(path, c, chunk);
  expect_within(what + " outputs", run.out, ref.out, ref.out_bound);
  expect_within(what + " state", run.state, ref.state, ref.state_bound);
  return ref;
}

// A layer's run against the generic layer's on the same case: within the sum of both layers'
// bounds (`ref` is the recurrence with the layer's bounds).
inline void expect_gdn_near_generic(const std::string& what, const GdnCase& c, int chunk,
                                    const k3k::reference::GdnReference& ref, const GdnRun& run,
                                    const GdnRun& generic) {
  const auto gen_ref = gdn_reference(k3k::KernelPath::kGeneric, c, chunk);
  expect_near_generic(what + " outputs", run.out, generic.out,
                      sum_of(ref.out_bound, gen_ref.out_bound));
  expect_near_generic(what + " state", run.state, generic.state,
                      sum_of(ref.state_bound, gen_ref.state_bound));
}

}  // namespace k3test
