// The IME2 weight layout (kIme2, kernels/ime2/README.md) checked byte by byte against the storage
// form, and the layers that do not read it refusing it (at every VLEN: packing needs no IME2).
// Linear on the ime2 layer itself is swept with the other layers (tests/kernels/test_linear_*).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "k3k/embedding.h"
#include "k3k/ime2.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "support/test_data.h"

namespace {

using namespace k3k;
using k3test::hqq_weights;

// The layout contract in kernels/ime2/README.md, checked against the storage form directly.
TEST(Ime2Layout, PackedUnitsHoldTheDocumentedCodes) {
  const std::int64_t n = 70, k = 192;
  const W4B64Storage s = hqq_weights(n, k, 21);
  const W4B64Packed g = pack_w4b64_generic(s);
  const W4B64Packed p = ime2::pack_w4b64(g);
  ASSERT_EQ(p.layout, W4B64Layout::kIme2);
  ASSERT_EQ(p.codes.size(), g.codes.size());
  ASSERT_EQ(0, std::memcmp(p.pairs.data(), g.pairs.data(), g.pairs.size_bytes()));
  const std::int64_t nb = k / 64;
  for (std::int64_t t = 0; t < p.row_tiles(); ++t)
    for (std::int64_t b = 0; b < nb; ++b)
      for (int ks = 0; ks < 2; ++ks)
        for (int sub = 0; sub < 4; ++sub)
          for (int col = 0; col < 8; ++col)
            for (int jj = 0; jj < 16; ++jj) {
              const std::int64_t row = t * 32 + 8 * sub + col;
              const std::uint8_t byte = p.codes[static_cast<std::size_t>(
                  (t * nb + b) * 1024 + (4 * ks + sub) * 128 + 16 * col + jj)];
              const std::int64_t k_lo = 64 * b + 16 * ks + jj, k_hi = k_lo + 32;
              ASSERT_EQ(byte & 15, row < n ? s.code(row, k_lo) : 8)
                  << "t " << t << " b " << b << " row " << row;
              ASSERT_EQ(byte >> 4, row < n ? s.code(row, k_hi) : 8)
                  << "t " << t << " b " << b << " row " << row;
            }
  EXPECT_THROW(ime2::pack_w4b64(p), std::invalid_argument);
}

// The IME2 layer's embedding reads its own layout (a tied table is packed once, for the lm_head):
// the kRowTile32 table's row, bit for bit; the other layers refuse the layout.
TEST(Ime2Layout, OtherLayersRefuseIme2Weights) {
  const W4B64Packed rowtile32 = pack_w4b64_generic(hqq_weights(32, 64, 5));
  const W4B64Packed p = ime2::pack_w4b64(pack_w4b64_generic(hqq_weights(32, 64, 5)));
  WorkerPool pool(1);
  auto act = make_packed_activations(1, 64, ActivationLayout::kRowK256);
  std::vector<float> out(32);
  EXPECT_THROW(
      k3k::linear_decode_w4b64(k3k::KernelPath::kGeneric, act, p, {}, out.data(), pool, {}),
      std::invalid_argument);
  EXPECT_THROW(k3k::linear_decode_w4b64(KernelPath::kRvv, act, p, {}, out.data(), pool, {}),
               std::invalid_argument);
  const std::int32_t token = 19;
  std::vector<float> row(64), want(64);
  for (KernelPath other : {KernelPath::kGeneric, KernelPath::kRvv})
    EXPECT_THROW(k3k::embedding_lookup_w4b64(other, p, &token, 1, row.data(), pool),
                 std::invalid_argument);
  if (!ime2::unusable_because()) {
    k3k::embedding_lookup_w4b64(KernelPath::kIme2, rowtile32, &token, 1, want.data(), pool);
    k3k::embedding_lookup_w4b64(KernelPath::kIme2, p, &token, 1, row.data(), pool);
    EXPECT_TRUE(k3test::bitwise_equal(row, want));
  }
}

}  // namespace
