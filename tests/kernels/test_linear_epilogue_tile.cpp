// The Linear epilogue over a tile of outputs (ukernel::StoreTileFn): every layer's, for every
// Linear variant, gives per output the bits of the scalar per-output epilogue
// (detail::store_linear_output) — on values that tell the orders apart (NaN, -0 and +0 at the
// clamp bounds, infinities, sums that round differently when fused), with every combination of
// bias, residual and clamp, both output layouts (C4 with one row is contiguous, with several it is
// strided), rows shorter and longer than a vector, one row and several (each with its own
// activation scale, from an accumulator with a row stride), and the in-place residual add (out ==
// residual).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/linear_epilogue.h"
#include "dispatch/layers.h"
#include "k3k/seeded_random.h"
#include "support/layer_sweep.h"

namespace {

using namespace k3k;

constexpr float kInf = std::numeric_limits<float>::infinity();

// Values around the clamp bounds and the special ones, then random ones whose sa*acc + bias sums
// round differently if the multiply and add were fused.
std::vector<float> tricky_values(std::size_t count, std::uint64_t seed) {
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            -0.0f,
                            0.0f,
                            kInf,
                            -kInf,
                            1.5f,
                            -1.5f,
                            0.25f,
                            -0.25f,
                            1e-38f,
                            3.0e38f,
                            -3.0e38f};
  SeededRandom rng(seed);
  std::vector<float> v(count);
  for (std::size_t i = 0; i < count; ++i) {
    v[i] = i % 3 == 0 ? specials[(i / 3) % std::size(specials)]
                      : static_cast<float>(rng.uniform(-4.0, 4.0)) * (1.0f + 0x1p-20f);
  }
  return v;
}

bool same_bits(float a, float b) {
  return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

struct Span {
  const char* variant;
  ukernel::BindStoreFn bind;  // the epilogue is bound per call, as the drivers do
};

std::vector<Span> spans_of(KernelPath path) {
  const auto& k = dispatch::usable_kernels(path, "linear");
  std::vector<Span> v;
  for (const auto& d : k.linear_decode.all) v.push_back({d.name, d.bind_store});
  for (const auto& p : k.linear_prefill.all) v.push_back({p.name, p.bind_store});
  return v;
}

class LinearEpilogueTile : public k3test::OnLayer {};

TEST_P(LinearEpilogueTile, EveryVariantGivesTheBitsOfTheScalarEpilogue) {
  const std::vector<Span> spans = spans_of(layer());
  ASSERT_FALSE(spans.empty());
  struct Clamp {
    float lo, hi;
  };
  const Clamp clamps[] = {{-kInf, kInf}, {-0.0f, 0.0f}, {0.0f, 6.0f}, {-1.0f, kInf}};
  for (const Span& span : spans) {
    for (OutputLayout layout : {OutputLayout::kRowMajor, OutputLayout::kC4}) {
      for (std::int64_t m : {1, 3}) {
        for (std::int64_t n : {5, 37, 300, 1030}) {
          const std::int64_t elements = output_elements(layout, m, n);
          const std::vector<float> bias = tricky_values(static_cast<std::size_t>(n), 7 + n);
          const std::vector<float> residual =
              tricky_values(static_cast<std::size_t>(elements), 9 + n);
          const std::vector<float> acc = tricky_values(static_cast<std::size_t>(m * n), 11 + n);
          for (int with = 0; with < 4; ++with) {
            for (const Clamp& c : clamps) {
              for (bool in_place : {false, true}) {
                if (in_place && (with & 2) == 0) continue;  // in place needs a residual
                SCOPED_TRACE(testing::Message()
                             << span.variant << " layout=" << static_cast<int>(layout) << " m=" << m
                             << " n=" << n << " bias=" << (with & 1) << " residual=" << (with & 2)
                             << " clamp=[" << c.lo << "," << c.hi << "] in_place=" << in_place);
                std::vector<float> want(static_cast<std::size_t>(elements), -7.0f);
                std::vector<float> got = in_place ? residual : want;
                if (in_place) want = residual;
                LinearEpilogue ep;
                ep.layout = layout;
                ep.bias = (with & 1) != 0 ? bias.data() : nullptr;
                ep.residual = (with & 2) != 0 ? residual.data() : nullptr;
                ep.clamp_min = c.lo;
                ep.clamp_max = c.hi;
                LinearEpilogue ep_got = ep;
                if (in_place) ep_got.residual = got.data();
                // Rows 1.. of m (all but the first), columns col0..n-1, acc rows n apart.
                const int rows = static_cast<int>(std::max<std::int64_t>(1, m - 1));
                const std::int64_t row0 = m - rows, col0 = n / 7, count = n - col0;
                const float sa[] = {1.0f / 3.0f, -2.5f, 0.1f};
                for (int r = 0; r < rows; ++r) {
                  for (std::int64_t i = 0; i < count; ++i) {
                    detail::store_linear_output(ep, want.data(), m, n, row0 + r, col0 + i, sa[r],
                                                acc[static_cast<std::size_t>(r * n + i)]);
                  }
                }
                detail::store_tile_of(span.bind, ep_got, m)(ep_got, got.data(), m, n, row0, rows,
                                                            col0, count, sa, acc.data(), n);
                for (std::size_t i = 0; i < want.size(); ++i) {
                  ASSERT_TRUE(same_bits(got[i], want[i]))
                      << "output " << i << ": " << got[i] << " != " << want[i];
                }
              }
            }
          }
        }
      }
    }
  }
}

K3_SWEEP_LAYERS(LinearEpilogueTile);

}  // namespace
