// Fused activation quantisation + packing (prefill M4 and decode K256 packs) on every layer
// (support/layer_sweep.h) against the float64 reference reference::quantize_rows, through the
// stable pack accessors (code, block_codes, block_sum, scale); a layer other than generic packs
// bit for bit what the generic layer packs (codes, block sums and scales), edge rows included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "k3k/quantize.h"
#include "k3k/reference/linear.h"
#include "k3k/seeded_random.h"
#include "k3k/worker_pool.h"
#include "support/layer_sweep.h"

namespace k3k {
namespace {

std::size_t sz(std::int64_t v) {
  return static_cast<std::size_t>(v);
}

// LLM-like activations: normal(0,1), a few outlier channels (x12), ~2% exact zeros, each row with
// its own magnitude (10^[-3,3]). If `zero_row` >= 0 that row is all zeros.
std::vector<float> make_activations(std::int64_t m, std::int64_t k, std::uint64_t seed,
                                    std::int64_t zero_row = -1) {
  SeededRandom rng(seed);
  std::vector<float> a(sz(m * k));
  for (std::int64_t r = 0; r < m; ++r) {
    const double row_scale = std::pow(10.0, rng.uniform(-3.0, 3.0));
    for (std::int64_t i = 0; i < k; ++i) {
      double x = rng.normal();
      if (i % 97 == 13) x *= 12.0;
      if (rng.uniform() < 0.02) x = 0.0;
      a[sz(r * k + i)] = r == zero_row ? 0.0f : static_cast<float>(x * row_scale);
    }
  }
  return a;
}

PackedActivations pack_prefill(KernelPath path, const std::vector<float>& a, std::int64_t m,
                               std::int64_t k, WorkerPool& pool) {
  PackedActivations p = make_packed_activations(m, k, ActivationLayout::kRowsM4);
  k3k::quantize_pack_prefill(path, a.data(), p, pool);
  return p;
}

PackedActivations pack_decode(KernelPath path, const float* a, std::int64_t k) {
  PackedActivations p = make_packed_activations(1, k, ActivationLayout::kRowK256);
  k3k::quantize_pack_decode(path, a, p);
  return p;
}

// Codes (padding included), block sums and scales bit for bit.
void expect_same_pack(const PackedActivations& want, const PackedActivations& got) {
  ASSERT_EQ(want.codes.size(), got.codes.size());
  EXPECT_EQ(0, std::memcmp(want.codes.data(), got.codes.data(), want.codes.size_bytes()))
      << "codes differ";
  EXPECT_EQ(0,
            std::memcmp(want.block_sum.data(), got.block_sum.data(), want.block_sum.size_bytes()))
      << "block sums differ";
  EXPECT_EQ(0, std::memcmp(want.scale.data(), got.scale.data(), want.scale.size_bytes()))
      << "scales differ";
}

// Codes must equal the float64 reference, except that the kernel may land on the other side of a
// rounding tie. Derivation: the kernel computes fl(a * fl(127/absmax)) = x (1+d1)(1+d2), |di| <= u
// (for rows below 127/FLT_MAX, a and absmax are first scaled by 2^64, exactly, which changes
// nothing), where x = 127 a / absmax, |x| <= 127; so it is within |x|(2u + u^2) <= 127 * 2^-23 <
// 2^-16 of x (the reference's own x = a / (absmax/127) in double errs by ~2^-46). A code can
// therefore differ from round-half-even(x) only when x is within 2^-16 of a .5 tie, and then by
// exactly one, to the other neighbour of the tie.
struct CodeCheck {
  int tie_flips = 0;
};

void expect_codes_match_reference(const PackedActivations& p, const float* a, std::int64_t m,
                                  std::int64_t k, CodeCheck* stats = nullptr) {
  const reference::QuantizedRows ref = reference::quantize_rows(a, m, k);
  int flips = 0;
  for (std::int64_t r = 0; r < m; ++r) {
    for (std::int64_t i = 0; i < k; ++i) {
      const int got = p.code(r, i);
      const int want = ref.codes[sz(r * k + i)];
      if (got == want) continue;
      const double x = ref.unrounded[sz(r * k + i)];
      const double tie = std::floor(x) + 0.5;
      ASSERT_LE(std::fabs(x - tie), 0x1.0p-16)
          << "row " << r << " col " << i << ": code " << got << " != reference " << want
          << " (a=" << a[r * k + i] << ", unrounded " << x << ") and not at a rounding tie";
      ASSERT_TRUE(got == std::floor(x) || got == std::floor(x) + 1) << "row " << r << " col " << i;
      ++flips;
    }
  }
  if (stats != nullptr) stats->tie_flips += flips;
}

void expect_sums_and_scales(const PackedActivations& p, const float* a, std::int64_t m,
                            std::int64_t k) {
  const std::int64_t nb = k / 64;
  ASSERT_EQ(p.scale.size(), sz(m));
  ASSERT_EQ(p.block_sum.size(), sz(m * nb));
  for (std::int64_t r = 0; r < m; ++r) {
    float absmax = 0.0f;
    for (std::int64_t i = 0; i < k; ++i) absmax = std::max(absmax, std::fabs(a[r * k + i]));
    const float want = absmax / 127.0f;
    ASSERT_EQ(std::memcmp(&p.scale[sz(r)], &want, sizeof(float)), 0)
        << "row " << r << ": sa " << p.scale[sz(r)] << " != absmax/127 " << want;
    for (std::int64_t b = 0; b < nb; ++b) {
      std::int32_t s = 0;
      for (int j = 0; j < 64; ++j) s += p.code(r, b * 64 + j);
      ASSERT_EQ(p.block_sum[sz(r * nb + b)], s) << "row " << r << " block " << b;
    }
  }
}

class QuantizePack : public k3test::OnLayer {
 protected:
  // The layer's packs against the reference (codes, block sums, scales) and, for a layer other
  // than generic, against the generic layer's packs bit for bit; returns the layer's pack.
  PackedActivations checked_prefill(const std::vector<float>& a, std::int64_t m, std::int64_t k,
                                    WorkerPool& pool, CodeCheck* stats = nullptr) {
    PackedActivations p = pack_prefill(layer(), a, m, k, pool);
    expect_codes_match_reference(p, a.data(), m, k, stats);
    expect_sums_and_scales(p, a.data(), m, k);
    if (!is_generic()) expect_same_pack(pack_prefill(KernelPath::kGeneric, a, m, k, pool), p);
    return p;
  }
  PackedActivations checked_decode(const float* a, std::int64_t k) {
    PackedActivations d = pack_decode(layer(), a, k);
    expect_codes_match_reference(d, a, 1, k);
    expect_sums_and_scales(d, a, 1, k);
    if (!is_generic()) expect_same_pack(pack_decode(KernelPath::kGeneric, a, k), d);
    return d;
  }
};

TEST_P(QuantizePack, PrefillMatchesReferenceAcrossShapes) {
  WorkerPool pool(2);
  // Two grids: M across the 4-row groups and large, K from one block to 2048 (3, 5 and 7 blocks
  // leave a part-filled last strip at 2 and 4 blocks per strip).
  struct Grid {
    std::vector<std::int64_t> ms, ks;
  };
  for (const Grid& grid : {Grid{{1, 3, 4, 5, 513}, {64, 128, 320, 2048}},
                           Grid{{1, 3, 4, 5, 13}, {64, 192, 320, 448, 1024}}}) {
    CodeCheck stats;
    std::int64_t total = 0;
    for (std::int64_t m : grid.ms) {
      for (std::int64_t k : grid.ks) {
        SCOPED_TRACE(testing::Message() << "M=" << m << " K=" << k);
        const std::vector<float> a =
            make_activations(m, k, 1000 + m * 7 + k, /*zero_row=*/m > 2 ? m / 2 : -1);
        const PackedActivations p = checked_prefill(a, m, k, pool, &stats);
        ASSERT_EQ(p.m, m);
        ASSERT_EQ(p.k, k);
        ASSERT_EQ(p.layout, ActivationLayout::kRowsM4);
        total += m * k;
      }
    }
    // Ties within 2^-16 are rare with random data; a large count would mean a systematic rounding
    // bug.
    EXPECT_LT(stats.tie_flips, 20) << "of " << total << " codes";
  }
}

TEST_P(QuantizePack, DecodeMatchesReferenceAndPrefillPack) {
  WorkerPool pool(1);
  for (std::int64_t k : {64, 128, 192, 320, 448, 1024, 2048}) {
    SCOPED_TRACE(testing::Message() << "K=" << k);
    // Row 2 of a 5-row prefill pack and a decode pack of the same data must agree exactly.
    const std::vector<float> a = make_activations(5, k, 77 + k);
    const float* row = a.data() + 2 * k;
    const PackedActivations d = checked_decode(row, k);
    ASSERT_EQ(d.m, 1);
    ASSERT_EQ(d.layout, ActivationLayout::kRowK256);

    const PackedActivations p5 = pack_prefill(layer(), a, 5, k, pool);
    const std::vector<float> one(row, row + k);
    const PackedActivations p1 = pack_prefill(layer(), one, 1, k, pool);
    for (const PackedActivations* p : {&p5, &p1}) {
      const std::int64_t r = p == &p5 ? 2 : 0;
      for (std::int64_t i = 0; i < k; ++i) ASSERT_EQ(d.code(0, i), p->code(r, i)) << "col " << i;
      for (std::int64_t b = 0; b < k / 64; ++b) {
        ASSERT_EQ(d.block_sum[sz(b)], p->block_sum[sz(r * (k / 64) + b)]) << "block " << b;
      }
      ASSERT_EQ(std::memcmp(&d.scale[0], &p->scale[sz(r)], sizeof(float)), 0);
    }
  }
}

TEST_P(QuantizePack, RoundHalfEvenOnExactTies) {
  // absmax 254 makes 127/absmax = 0.5 exactly, so a * 0.5 is exact and every odd a is a tie.
  std::vector<float> a(64, 0.0f);
  const float in[] = {254, 5, 7, -5, -7, 1, 3, -1, -3, 253, -254, 9, 11, 2, -2, 0};
  const int want[] = {127, 2, 4, -2, -4, 0, 2, 0, -2, 126, -127, 4, 6, 1, -1, 0};
  for (std::size_t i = 0; i < std::size(in); ++i) a[i] = in[i];
  const PackedActivations d = pack_decode(layer(), a.data(), 64);
  WorkerPool pool(1);
  const PackedActivations p = pack_prefill(layer(), a, 1, 64, pool);
  for (std::size_t i = 0; i < std::size(in); ++i) {
    EXPECT_EQ(d.code(0, static_cast<std::int64_t>(i)), want[i]) << "a=" << in[i];
    EXPECT_EQ(p.code(0, static_cast<std::int64_t>(i)), want[i]) << "a=" << in[i];
  }
  EXPECT_EQ(d.scale[0], 2.0f);
  EXPECT_EQ(d.block_sum[0], 127 + 2 + 4 - 2 - 4 + 0 + 2 + 0 - 2 + 126 - 127 + 4 + 6 + 1 - 1);
  // The reference agrees on these exact ties (no tolerance needed).
  expect_codes_match_reference(d, a.data(), 1, 64);
}

TEST_P(QuantizePack, AllZeroRowGivesZeroScaleAndCodes) {
  WorkerPool pool(2);
  const std::int64_t m = 6, k = 192;
  std::vector<float> a = make_activations(m, k, 5);
  std::fill(a.begin() + 3 * k, a.begin() + 4 * k, 0.0f);
  std::fill(a.begin() + 5 * k, a.begin() + 6 * k, -0.0f);
  const PackedActivations p = pack_prefill(layer(), a, m, k, pool);
  for (std::int64_t r : {3, 5}) {
    EXPECT_EQ(p.scale[sz(r)], 0.0f);
    for (std::int64_t i = 0; i < k; ++i) ASSERT_EQ(p.code(r, i), 0) << r << "," << i;
    for (std::int64_t b = 0; b < k / 64; ++b) EXPECT_EQ(p.block_sum[sz(r * 3 + b)], 0);
  }
  EXPECT_GT(p.scale[2], 0.0f);
  const std::vector<float> zeros(sz(k), 0.0f);
  const PackedActivations d = pack_decode(layer(), zeros.data(), k);
  EXPECT_EQ(d.scale[0], 0.0f);
  for (std::int64_t i = 0; i < k; ++i) ASSERT_EQ(d.code(0, i), 0);
  for (std::int64_t b = 0; b < k / 64; ++b) EXPECT_EQ(d.block_sum[sz(b)], 0);
}

// Rows the quantiser treats specially, each against the reference and the generic layer: all zero,
// exact .5 ties, subnormal (the 2^64 prescale), near FLT_MAX.
TEST_P(QuantizePack, EdgeRowsMatchReferenceAndGeneric) {
  WorkerPool pool(1);
  const std::int64_t k = 128;
  std::vector<float> a(4 * k, 0.0f);  // row 0 all zero
  for (std::int64_t i = 0; i < k; ++i) {
    a[sz(k + i)] = (i % 2 ? -1.0f : 1.0f) * 2.5f * static_cast<float>(i % 5);  // exact .5 ties
    a[sz(2 * k + i)] = 1e-39f * static_cast<float>(i + 1);                     // subnormal row
    a[sz(3 * k + i)] = 3e38f * (i % 3 ? 1.0f : -1.0f);                         // near FLT_MAX
  }
  checked_prefill(a, 4, k, pool);
}

TEST_P(QuantizePack, Qwen3_0_6bShape) {
  WorkerPool pool(2);
  const std::vector<float> a = make_activations(17, 3072, 99);
  checked_prefill(a, 17, 3072, pool);
}

TEST_P(QuantizePack, M4LayoutPaddingAndAccessors) {
  WorkerPool pool(3);
  for (std::int64_t m : {1, 3, 4, 5, 513}) {
    const std::int64_t k = 320, nb = k / 64;
    const std::int64_t padded = (m + 3) / 4 * 4;
    SCOPED_TRACE(testing::Message() << "M=" << m);
    const std::vector<float> a = make_activations(m, k, 31 + m);
    const PackedActivations p = pack_prefill(layer(), a, m, k, pool);
    ASSERT_EQ(p.codes.size(), sz(padded * k));
    // The documented M4 layout: [ceil(M/4)][K/64][4 rows][64].
    for (std::int64_t r = 0; r < padded; ++r) {
      for (std::int64_t b = 0; b < nb; ++b) {
        const std::int8_t* blk = p.block_codes(r, b);
        ASSERT_EQ(blk - p.codes.data(), (((r / 4) * nb + b) * 4 + r % 4) * 64) << r << "," << b;
        if (r >= m) {
          for (int j = 0; j < 64; ++j)
            ASSERT_EQ(blk[j], 0) << "padding row " << r << " block " << b;
        }
      }
    }
    for (std::int64_t r = 0; r < m; ++r)
      for (std::int64_t i = 0; i < k; ++i)
        ASSERT_EQ(p.code(r, i), p.block_codes(r, i / 64)[i % 64]);
  }
  // Decode pack: one row in natural K order.
  const std::vector<float> a = make_activations(1, 320, 3);
  const PackedActivations d = pack_decode(layer(), a.data(), 320);
  ASSERT_EQ(d.codes.size(), 320u);
  for (std::int64_t b = 0; b < 5; ++b) EXPECT_EQ(d.block_codes(0, b), d.codes.data() + b * 64);
}

TEST_P(QuantizePack, PrefillIsIdenticalForEveryWorkerCount) {
  const std::int64_t m = 37, k = 320;
  const std::vector<float> a = make_activations(m, k, 404);
  WorkerPool p1(1);
  const PackedActivations ref = pack_prefill(layer(), a, m, k, p1);
  for (int workers : {2, 3, 4}) {
    WorkerPool pool(workers);
    const PackedActivations p = pack_prefill(layer(), a, m, k, pool);
    EXPECT_EQ(std::memcmp(p.codes.data(), ref.codes.data(), ref.codes.size_bytes()), 0) << workers;
    EXPECT_EQ(std::memcmp(p.scale.data(), ref.scale.data(), ref.scale.size_bytes()), 0) << workers;
    EXPECT_EQ(std::memcmp(p.block_sum.data(), ref.block_sum.data(), ref.block_sum.size_bytes()), 0)
        << workers;
  }
}

TEST_P(QuantizePack, RequantizingIntoAPackOverwritesEverything) {
  // A pack is reused token after token: a second quantisation must not depend on the first.
  WorkerPool pool(2);
  const std::int64_t m = 5, k = 128;
  const std::vector<float> a = make_activations(m, k, 1);
  const std::vector<float> b = make_activations(m, k, 2);
  PackedActivations p = make_packed_activations(m, k, ActivationLayout::kRowsM4);
  k3k::quantize_pack_prefill(layer(), a.data(), p, pool);
  k3k::quantize_pack_prefill(layer(), b.data(), p, pool);
  expect_codes_match_reference(p, b.data(), m, k);
  expect_sums_and_scales(p, b.data(), m, k);
  PackedActivations d = make_packed_activations(1, k, ActivationLayout::kRowK256);
  k3k::quantize_pack_decode(layer(), a.data(), d);
  k3k::quantize_pack_decode(layer(), b.data(), d);
  expect_codes_match_reference(d, b.data(), 1, k);
  expect_sums_and_scales(d, b.data(), 1, k);
}

TEST_P(QuantizePack, SmallMagnitudeRowsMatchReference) {
  // Rows far below 1 in magnitude (127/absmax stays finite in float) quantise like any other row.
  for (float mag : {1e-6f, 1e-20f, 1e-30f, 1e-36f}) {
    std::vector<float> a = make_activations(1, 128, 9);
    float absmax = 0.0f;
    for (float x : a) absmax = std::max(absmax, std::fabs(x));
    for (float& x : a) x = x / absmax * mag;
    SCOPED_TRACE(testing::Message() << "magnitude " << mag);
    checked_decode(a.data(), 128);
  }
}

TEST_P(QuantizePack, TinyMagnitudeRowMatchesReference) {
  // Rows whose absmax is below 127/FLT_MAX (~3.73e-37), subnormal rows included, are valid input
  // and the float64 reference quantises them like any other row. (127.0f/absmax overflows to +inf
  // there: a kernel that used it directly would saturate every non-zero code to +-127 and turn zero
  // elements into NaN -> int8, undefined behaviour.) Magnitudes on both sides of the threshold.
  for (float mag : {3.8e-37f, 3.7e-37f, 3e-37f, 1e-38f, 1e-40f, 1e-44f}) {
    SCOPED_TRACE(testing::Message() << "magnitude " << mag);
    std::vector<float> a(192, 0.0f);
    for (int i = 0; i < 192; ++i) {
      // Non-zero values in [mag/6, mag] of both signs, plus exact zeros in the last block.
      a[sz(i)] = i >= 160 && i % 3 == 0
                     ? 0.0f
                     : mag * static_cast<float>((i % 6) + 1) / 6.0f * (i % 2 ? -1.0f : 1.0f);
    }
    checked_decode(a.data(), 192);
    WorkerPool pool(1);
    checked_prefill(a, 1, 192, pool);
  }
}

// A pack of the wrong layout (or an empty pack) is rejected by the quantisers.
TEST_P(QuantizePack, WrongOrEmptyPackIsRejected) {
  WorkerPool pool(1);
  const std::vector<float> a(256, 1.0f);
  PackedActivations dec = make_packed_activations(1, 256, ActivationLayout::kRowK256);
  PackedActivations pre = make_packed_activations(1, 256, ActivationLayout::kRowsM4);
  PackedActivations empty;
  EXPECT_THROW(k3k::quantize_pack_prefill(layer(), a.data(), dec, pool), std::invalid_argument);
  EXPECT_THROW(k3k::quantize_pack_decode(layer(), a.data(), pre), std::invalid_argument);
  EXPECT_THROW(k3k::quantize_pack_prefill(layer(), a.data(), empty, pool), std::invalid_argument);
  empty.layout = ActivationLayout::kRowK256;
  EXPECT_THROW(k3k::quantize_pack_decode(layer(), a.data(), empty), std::invalid_argument);
}

K3_SWEEP_LAYERS(QuantizePack);

// ---- layer-free: the pack's own shape checks
// -----------------------------------------------------

TEST(PackedActivationsShape, InvalidArgumentsThrow) {
  EXPECT_THROW(make_packed_activations(0, 64, ActivationLayout::kRowsM4), std::invalid_argument);
  EXPECT_THROW(make_packed_activations(-1, 64, ActivationLayout::kRowsM4), std::invalid_argument);
  EXPECT_THROW(make_packed_activations(0, 64, ActivationLayout::kRowK256), std::invalid_argument);
  for (std::int64_t k : {0, -64, 32, 100, 65}) {
    EXPECT_THROW(make_packed_activations(2, k, ActivationLayout::kRowsM4), std::invalid_argument)
        << k;
    EXPECT_THROW(make_packed_activations(1, k, ActivationLayout::kRowK256), std::invalid_argument)
        << k;
  }
  EXPECT_THROW(make_packed_activations(2, 64, ActivationLayout::kRowK256), std::invalid_argument);
  EXPECT_THROW(make_packed_activations(4, 256, ActivationLayout::kRowK256), std::invalid_argument);
  EXPECT_NO_THROW(make_packed_activations(1, 64, ActivationLayout::kRowK256));
  EXPECT_NO_THROW(make_packed_activations(3, 64, ActivationLayout::kRowsM4));
}

}  // namespace
}  // namespace k3k
