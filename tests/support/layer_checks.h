// The comparisons the swept op tests make of one layer's output: against the float64 reference
// under the layer's bound, against the generic layer's output on the same inputs (both are within
// their own bound of the same reference, so within the sum of the two bounds of each other, or
// bitwise equal where the layers promise it), and argument errors worded as the generic layer's.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "k3k/dispatch.h"
#include "k3k/reference/compare.h"
#include "support/test_data.h"

namespace k3test {

// got within bound of ref, element by element; prints the worst error/bound ratio.
inline k3k::reference::CompareResult expect_within(const std::string& what,
                                                   const std::vector<float>& got,
                                                   const std::vector<double>& ref,
                                                   const std::vector<double>& bound) {
  const auto r = k3k::reference::compare_to_reference(got, ref, bound);
  EXPECT_TRUE(r.pass) << what << ": " << k3k::reference::describe(r, got, ref, bound);
  std::printf("[ stats    ] %s: err/bound %.3g (max abs err %.3g, max rel err %.3g)\n",
              what.c_str(), r.worst_ratio, r.max_abs_err, r.max_rel_err);
  return r;
}

// A layer's output within `both` (the sum of its bound and the generic layer's) of the generic
// layer's output.
inline void expect_near_generic(const std::string& what, const std::vector<float>& got,
                                const std::vector<float>& generic,
                                const std::vector<double>& both) {
  const std::vector<double> gen(generic.begin(), generic.end());
  const auto r = k3k::reference::compare_to_reference(got, gen, both);
  EXPECT_TRUE(r.pass) << what << " vs generic: " << k3k::reference::describe(r, got, gen, both);
  std::printf("[ stats    ] %s: |layer - generic| / (sum of bounds) %.3g\n", what.c_str(),
              r.worst_ratio);
}

// call(path) must throw std::invalid_argument naming `field` on `path`, with the generic layer's
// message word for word (the argument checks are the drivers', shared by every layer).
template <typename Call>
void expect_rejected(k3k::KernelPath path, const std::string& field, Call&& call) {
  const std::string got = thrown_message([&] { call(path); });
  EXPECT_NE(got.find(field), std::string::npos)
      << "expected a message naming '" << field << "', got: " << got;
  if (path != k3k::KernelPath::kGeneric) {
    EXPECT_EQ(got, thrown_message([&] { call(k3k::KernelPath::kGeneric); }));
  }
}

}  // namespace k3test
