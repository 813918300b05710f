// The checks the swept Linear tests apply to one layer's output: within the float64 reference's
// bound, within twice that bound of the generic layer's output on the same inputs (both are within
// the bound of the same reference), and C4 pad lanes exactly 0.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/reference/compare.h"
#include "k3k/reference/linear.h"
#include "k3k/w4b64.h"

namespace k3test {

// out and generic_out are in ep.layout; ep.residual (if set) is in ep.layout too. generic_out is
// null when `out` is the generic layer's own.
inline void expect_linear_within_bound(const k3k::W4B64Storage& s,
                                       const k3k::PackedActivations& act,
                                       const k3k::LinearEpilogue& ep, std::int64_t m,
                                       std::int64_t n, const std::vector<float>& out,
                                       const std::vector<float>* generic_out) {
  namespace reference = k3k::reference;
  const auto codes = reference::unpack_codes(act);
  const auto res_rm =
      ep.residual ? reference::to_row_major(ep.residual, ep.layout, m, n) : std::vector<float>{};
  const auto ref =
      reference::linear_w4b64(s, codes.data(), act.scale.data(), m, ep.bias,
                              ep.residual ? res_rm.data() : nullptr, ep.clamp_min, ep.clamp_max);
  const auto got = reference::to_row_major(out.data(), ep.layout, m, n);
  const auto cmp = reference::compare_to_reference(got, ref.y, ref.bound);
  EXPECT_TRUE(cmp.pass) << reference::describe(cmp, got, ref.y, ref.bound);
  if (generic_out != nullptr) {
    const auto gen = reference::to_row_major(generic_out->data(), ep.layout, m, n);
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_LE(std::fabs(double(got[i]) - gen[i]), 2 * ref.bound[i]) << "element " << i;
    }
  }
  if (ep.layout == k3k::OutputLayout::kC4) {
    for (std::int64_t row = 0; row < m; ++row)
      for (std::int64_t col = n; col < (n + 3) / 4 * 4; ++col)
        ASSERT_EQ(out[static_cast<std::size_t>(k3k::output_index(ep.layout, m, n, row, col))],
                  0.0f);
  }
}

}  // namespace k3test
