// The packed layouts' fp16 (beta, scale) pairs: packing rounds the storage form's pairs to fp16
// (nearest even, checked against an independent float64 rounding), refuses a pair without a
// finite fp16 with one line naming it, the float64 reference and dequantisation read the same
// fp16 values, the branch-free conversions the kernels use are exact for every finite half, and
// a packed matrix is 4.5 bits per weight (codes plus 4 bytes per 64 weights, padding aside).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "k3k/fp16.h"
#include "k3k/linear.h"
#include "k3k/seeded_random.h"
#include "k3k/w4b64.h"
#include "support/test_data.h"

#include <algorithm>

namespace k3k {
namespace {

std::size_t sz(std::int64_t v) {
  return static_cast<std::size_t>(v);
}

// IEEE binary16 round-to-nearest-even of x, in float64 (independent of k3k::fp32_to_fp16).
double fp16_rounding(double x) {
  const double ax = std::fabs(x);
  if (ax == 0.0) return x;
  int e2 = 0;
  std::frexp(ax, &e2);
  const int quantum = std::max(e2 - 1, -14) - 10;  // 11 significant bits; subnormals 2^-24 apart
  const double r = std::ldexp(std::nearbyint(std::ldexp(ax, -quantum)), quantum);
  return std::copysign(r, x);
}

TEST(W4B64Pairs, PackingRoundsEveryPairToItsNearestFp16) {
  SeededRandom rng(41);
  const std::int64_t n = 45, k = 192, nb = k / kW4BlockK;
  // Pairs over many binades, subnormal halves included, none exactly representable by chance.
  const W4B64Storage s = k3test::random_code_storage(n, k, rng, [&](std::size_t) {
    return static_cast<float>(rng.normal() *
                              std::ldexp(1.0, static_cast<int>(rng.next() % 30) - 24));
  });
  const W4B64Packed p = pack_w4b64_generic(s);
  ASSERT_EQ(p.pairs.size(), sz(2 * p.row_tiles() * nb * kW4RowTile));
  for (std::int64_t row = 0; row < p.row_tiles() * kW4RowTile; ++row) {
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::int64_t i = (row / kW4RowTile * nb + b) * kW4RowTile + row % kW4RowTile;
      const double beta = row < n ? fp16_rounding(s.beta(row, b)) : 0.0;
      const double scale = row < n ? fp16_rounding(s.scale(row, b)) : 0.0;
      ASSERT_EQ(double(p.beta_at(i)), beta) << "row " << row << " block " << b;
      ASSERT_EQ(double(p.scale_at(i)), scale) << "row " << row << " block " << b;
      ASSERT_EQ(double(w4b64_pair_value(s.scale(std::min(row, n - 1), b))),
                fp16_rounding(s.scale(std::min(row, n - 1), b)));
    }
  }
}

TEST(W4B64Pairs, ReferenceDequantisationReadsTheFp16Pairs) {
  SeededRandom rng(42);
  const std::int64_t n = 3, k = 128;
  const W4B64Storage s = k3test::random_code_storage(
      n, k, rng, [&](std::size_t) { return static_cast<float>(rng.normal() * 0.0137); });
  std::vector<double> row(sz(k));
  for (std::int64_t r = 0; r < n; ++r) {
    dequantize_w4b64_row(s, r, row.data());
    for (std::int64_t c = 0; c < k; ++c) {
      const double scale = fp16_rounding(s.scale(r, c / 64)),
                   beta = fp16_rounding(s.beta(r, c / 64));
      ASSERT_EQ(row[sz(c)], scale * (s.code(r, c) - 8.0) + beta) << r << "," << c;
    }
  }
}

TEST(W4B64Pairs, APairWithoutAFiniteFp16IsRefusedNamingIt) {
  SeededRandom rng(43);
  W4B64Storage s = k3test::random_code_storage(4, 128, rng, [](std::size_t) { return 0.01f; });
  s.alpha[sz((2 * 2 + 1) * 2 + 1)] = 70000.0f;  // row 2, block 1: the scale (beyond 65504)
  const std::string message = k3test::thrown_message([&] { pack_w4b64_generic(s); });
  EXPECT_NE(message.find("scale of row 2, block 1"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  s.alpha[sz((2 * 2 + 1) * 2 + 1)] = 65504.0f;  // the largest half: packed as it is
  EXPECT_EQ(pack_w4b64_generic(s).scale_at((0 * 2 + 1) * kW4RowTile + 2), 65504.0f);
  s.alpha[sz(0)] = std::nanf("");
  EXPECT_NE(k3test::thrown_message([&] { pack_w4b64_generic(s); }).find("beta of row 0, block 0"),
            std::string::npos);
}

// The kernels' conversions (w4b64.h "Scaled pairs", k3k/fp16.h) against fp16_to_fp32 for every
// finite half: the scaled float times 2^112 is the half's value, bit for bit, and so are the
// scale and beta read from a pair word with shifts and one mask.
TEST(W4B64Pairs, ScaledConversionsAreExactForEveryFiniteHalf) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto half = static_cast<fp16_t>(h);
    if ((h & 0x7C00u) == 0x7C00u) continue;  // inf and NaN: never in a pair
    const float want = fp16_to_fp32(half);
    ASSERT_EQ(std::bit_cast<std::uint32_t>(fp16_finite_to_fp32(half)),
              std::bit_cast<std::uint32_t>(want))
        << h;
    ASSERT_EQ(std::bit_cast<std::uint32_t>(fp16_scaled_2m112(half) * 0x1p112f),
              std::bit_cast<std::uint32_t>(want))
        << h;
    // A word with this half as the scale (high) and as the beta (low), the other half arbitrary.
    const std::int32_t as_scale = static_cast<std::int32_t>(h << 16 | (h * 7919u & 0xFFFFu));
    const std::int32_t as_beta = static_cast<std::int32_t>((h * 104729u & 0xFFFFu) << 16 | h);
    const float scale =
        std::bit_cast<float>(static_cast<std::uint32_t>(as_scale >> 3) & kPairScaledMask);
    const float beta = std::bit_cast<float>(
        static_cast<std::uint32_t>(
            static_cast<std::int32_t>(static_cast<std::uint32_t>(as_beta) << 16) >> 3) &
        kPairScaledMask);
    ASSERT_EQ(std::bit_cast<std::uint32_t>(scale * 0x1p112f), std::bit_cast<std::uint32_t>(want))
        << h;
    ASSERT_EQ(std::bit_cast<std::uint32_t>(beta * 0x1p112f), std::bit_cast<std::uint32_t>(want))
        << h;
  }
}

// 4.5 bits per weight: codes (4 bits) plus one fp16 pair (4 bytes) per 64 weights, exactly, for
// every row count a layer packs (rows padded to whole tiles aside).
TEST(W4B64Pairs, APackedMatrixIsFourAndAHalfBitsPerWeight) {
  for (const int rows : {16, 32, 64, 128, 256}) {
    for (const std::int64_t n : {256, 1024, 3072}) {
      const std::int64_t k = 1024, weights = n * k;
      EXPECT_EQ(W4B64Packed::packed_code_bytes(n, k, rows), weights / 2) << rows;
      EXPECT_EQ(W4B64Packed::packed_pair_bytes(n, k, rows), weights / kW4BlockK * 4) << rows;
      EXPECT_EQ(8 * W4B64Packed::packed_bytes(n, k, rows), 9 * weights / 2) << rows;
    }
  }
  SeededRandom rng(44);
  const W4B64Storage s =
      k3test::random_code_storage(256, 256, rng, [](std::size_t) { return 0.5f; });
  const W4B64Packed p = pack_w4b64_generic(s);
  EXPECT_EQ(p.code_bytes(), 256 * 256 / 2);
  EXPECT_EQ(p.pair_bytes(), 256 * 256 / 64 * 4);
  EXPECT_EQ(p.bytes(), 36864);  // 65,536 weights at 4.5 bits (5.0 bits with fp32 pairs: 40,960)
}

}  // namespace
}  // namespace k3k
