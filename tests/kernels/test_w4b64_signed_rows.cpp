// The RVV layer's weight layout kSignedRows (k3k/w4b64.h): every byte, scale and beta checked
// against the storage form through the layout the header states, for several rows per tile
// (including N not a multiple of R, so padding rows), and the arguments it refuses.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

#include "k3k/seeded_random.h"
#include "k3k/w4b64.h"
#include "support/test_data.h"

namespace k3k {
namespace {

std::size_t sz(std::int64_t v) {
  return static_cast<std::size_t>(v);
}

// The signed nibble (two's complement) in bits [shift, shift + 4) of a byte.
int signed_nibble(std::uint8_t byte, int shift) {
  const int v = (byte >> shift) & 0x0F;
  return v >= 8 ? v - 16 : v;
}

TEST(W4B64SignedRows, BytesScalesAndPaddingFollowTheStatedLayout) {
  SeededRandom rng(17);
  const std::int64_t n = 70, k = 192, nb = k / kW4BlockK;
  const W4B64Storage s = k3test::random_code_storage(
      n, k, rng, [&](std::size_t) { return static_cast<float>(rng.normal()); });
  const W4B64Packed rowtile32 = pack_w4b64_generic(s);
  for (int rows : {16, 32, 48, 128, 256}) {
    SCOPED_TRACE(testing::Message() << "rows=" << rows);
    const W4B64Packed p = pack_w4b64_signed_rows(rowtile32, rows);
    ASSERT_EQ(p.layout, W4B64Layout::kSignedRows);
    ASSERT_EQ(p.row_tile, rows);
    ASSERT_EQ(p.n, n);
    ASSERT_EQ(p.k, k);
    const std::int64_t tiles = (n + rows - 1) / rows;
    ASSERT_EQ(p.codes.size(), sz(tiles * nb * 32 * rows));
    ASSERT_EQ(p.pairs.size(), sz(2 * tiles * nb * rows));
    ASSERT_EQ(p.bytes(), W4B64Packed::packed_bytes(n, k, rows));
    for (std::int64_t row = 0; row < tiles * rows; ++row) {
      const std::int64_t t = row / rows, r = row % rows;
      for (std::int64_t b = 0; b < nb; ++b) {
        const std::int64_t unit = t * nb + b;
        // The pair word of (tile, block, row): beta, then scale, as fp16.
        const float be = p.beta_at(unit * rows + r), sc = p.scale_at(unit * rows + r);
        ASSERT_EQ(sc, row < n ? w4b64_pair_value(s.scale(row, b)) : 0.0f)
            << "row " << row << " block " << b;
        ASSERT_EQ(be, row < n ? w4b64_pair_value(s.beta(row, b)) : 0.0f)
            << "row " << row << " block " << b;
        for (int j = 0; j < 32; ++j) {
          const std::uint8_t byte = p.codes[sz((unit * 32 + j) * rows + r)];
          const int lo = row < n ? s.code(row, 64 * b + j) - 8 : 0;
          const int hi = row < n ? s.code(row, 64 * b + 32 + j) - 8 : 0;
          ASSERT_EQ(signed_nibble(byte, 0), lo) << "row " << row << " k " << 64 * b + j;
          ASSERT_EQ(signed_nibble(byte, 4), hi) << "row " << row << " k " << 64 * b + 32 + j;
        }
      }
    }
  }
}

TEST(W4B64SignedRows, RefusesBadRowsAndOtherLayouts) {
  SeededRandom rng(3);
  const W4B64Storage s =
      k3test::random_code_storage(40, 128, rng, [](std::size_t) { return 1.0f; });
  const W4B64Packed w = pack_w4b64_generic(s);
  for (int rows : {0, 8, 24, 272, -16}) {
    EXPECT_THROW(pack_w4b64_signed_rows(w, rows), std::invalid_argument) << "rows=" << rows;
  }
  const W4B64Packed once = pack_w4b64_signed_rows(w, 32);
  EXPECT_THROW(pack_w4b64_signed_rows(once, 32), std::invalid_argument);
  EXPECT_STREQ(to_string(once.layout), "srows");
}

}  // namespace
}  // namespace k3k
