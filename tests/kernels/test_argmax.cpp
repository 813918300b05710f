// The greedy choice (k3k::argmax) on every layer against a scalar reference written here: the
// first index of the largest value that is not NaN, over lengths around the vector widths, with
// ties (first wins), -0 against +0, NaNs anywhere (ignored; 0 when all are NaN), infinities, a
// logit vector of Qwen3's vocabulary; an empty span is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

#include "k3k/small_ops.h"
#include "support/layer_sweep.h"
#include "support/test_data.h"

namespace k3k {
namespace {

std::int64_t reference_argmax(const std::vector<float>& x) {
  std::int64_t best = -1;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) continue;
    if (best < 0 || x[i] > x[static_cast<std::size_t>(best)]) best = static_cast<std::int64_t>(i);
  }
  return best < 0 ? 0 : best;
}

class Argmax : public k3test::OnLayer {};

TEST_P(Argmax, FirstOfTheLargestNonNanValue) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const std::int64_t n : {1, 2, 31, 32, 33, 255, 256, 257, 1000, 151936}) {
    SCOPED_TRACE(testing::Message() << "n=" << n);
    auto x = k3test::random_floats(static_cast<std::size_t>(n), 7 + static_cast<std::uint64_t>(n));
    EXPECT_EQ(argmax(layer(), x), reference_argmax(x));
    // A tie of the maximum late and early: the first wins.
    x[static_cast<std::size_t>(n - 1)] = 50.0f;
    x[static_cast<std::size_t>(n / 2)] = 50.0f;
    EXPECT_EQ(argmax(layer(), x), reference_argmax(x));
    // NaNs before and at the maximum's place, an infinity after.
    for (std::size_t i = 0; i < x.size(); i += 3) x[i] = nan;
    EXPECT_EQ(argmax(layer(), x), reference_argmax(x));
    x[static_cast<std::size_t>(n - 1)] = inf;
    EXPECT_EQ(argmax(layer(), x), reference_argmax(x));
    // Every value NaN: 0.
    std::fill(x.begin(), x.end(), nan);
    EXPECT_EQ(argmax(layer(), x), 0);
    // All zeros of either sign, the largest at the first zero; all -inf: the first.
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = i % 2 == 0 ? -0.0f : 0.0f;
    EXPECT_EQ(argmax(layer(), x), reference_argmax(x));
    std::fill(x.begin(), x.end(), -inf);
    EXPECT_EQ(argmax(layer(), x), 0);
  }
  EXPECT_THROW(argmax(layer(), std::span<const float>()), std::invalid_argument);
}

K3_SWEEP_LAYERS(Argmax);

}  // namespace
}  // namespace k3k
