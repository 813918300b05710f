// W4B64 format: the MNN storage form (nibble order, alpha pairs), HQQ quantisation quality,
// synthetic weights, dequantisation, and the storage -> generic-layout repack checked only through
// a kernel's output (the generic byte layout is private and may change).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "k3k/embedding.h"
#include "k3k/reference/compare.h"
#include "k3k/reference/linear.h"
#include "k3k/rounding.h"
#include "k3k/seeded_random.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"

namespace k3k {
namespace {

std::size_t sz(std::int64_t v) {
  return static_cast<std::size_t>(v);
}

// Writes a code into the storage form by hand: first element of each pair in the HIGH nibble.
void set_storage_code(W4B64Storage& s, std::int64_t row, std::int64_t col, std::uint8_t q) {
  std::uint8_t& byte = s.codes[sz(row * (s.k / 2) + col / 2)];
  byte = (col % 2 == 0) ? static_cast<std::uint8_t>((byte & 0x0F) | (q << 4))
                        : static_cast<std::uint8_t>((byte & 0xF0) | q);
}

// Raw decode of a storage code from the bytes (independent of W4B64Storage::code).
int raw_code(const W4B64Storage& s, std::int64_t row, std::int64_t col) {
  const std::uint8_t byte = s.codes[sz(row * (s.k / 2) + col / 2)];
  return (col % 2 == 0) ? (byte >> 4) : (byte & 0x0F);
}

// Hand-built matrix whose blocks are exactly representable: w = s*(q-8) + beta with s a power of
// two, beta = s*j (j integer) and the codes of every block spanning the full range 0..15. Then
// HQQ's initial parameters are exact: max-min = 15 s, quant scale 15/(15 s) = 1/s, zero
// round(-min/s) = 8 - j, codes round(w/s + 8 - j) = q; the block error is 0, so refinement
// cannot improve on it and the result is exact for any iteration count.
struct ExactMatrix {
  std::int64_t n, k;
  std::vector<int> q;       // [N][K]
  std::vector<float> s;     // [N][K/64]
  std::vector<float> beta;  // [N][K/64]
  std::vector<float> w;     // [N][K]
};

ExactMatrix make_exact_matrix(std::int64_t n, std::int64_t k) {
  ExactMatrix m{n, k, {}, {}, {}, {}};
  const std::int64_t nb = k / kW4BlockK;
  const float scales[] = {0x1.0p-6f, 0x1.0p-9f, 0x1.0p-4f, 1.0f, 0x1.0p-12f};
  const int js[] = {0, 3, -5, 8, 11, -1, 2};
  m.q.resize(sz(n * k));
  m.w.resize(sz(n * k));
  m.s.resize(sz(n * nb));
  m.beta.resize(sz(n * nb));
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t b = 0; b < nb; ++b) {
      const float s = scales[(r * 3 + b) % 5];
      const int j = js[(r * 5 + b * 2) % 7];
      m.s[sz(r * nb + b)] = s;
      m.beta[sz(r * nb + b)] = s * static_cast<float>(j);
      for (int i = 0; i < kW4BlockK; ++i) {
        // 7 is coprime with 16, so every block holds all of 0..15 (in a row/block-dependent order).
        const int q = static_cast<int>((i * 7 + r * 3 + b * 5) % 16);
        const std::int64_t col = b * kW4BlockK + i;
        m.q[sz(r * k + col)] = q;
        m.w[sz(r * k + col)] = s * static_cast<float>(q - 8 + j);  // exact: small integer times 2^e
      }
    }
  }
  return m;
}

void expect_storage_equals_exact(const W4B64Storage& st, const ExactMatrix& m) {
  const std::int64_t nb = m.k / kW4BlockK;
  ASSERT_EQ(st.n, m.n);
  ASSERT_EQ(st.k, m.k);
  ASSERT_EQ(st.codes.size(), sz(m.n * m.k / 2));
  ASSERT_EQ(st.alpha.size(), sz(m.n * nb * 2));
  for (std::int64_t r = 0; r < m.n; ++r) {
    for (std::int64_t col = 0; col < m.k; col += 2) {
      const std::uint8_t byte = st.codes[sz(r * (m.k / 2) + col / 2)];
      ASSERT_EQ(byte >> 4, m.q[sz(r * m.k + col)])
          << "high nibble must hold the even element, row " << r << " col " << col;
      ASSERT_EQ(byte & 0x0F, m.q[sz(r * m.k + col + 1)])
          << "low nibble must hold the odd element, row " << r << " col " << col + 1;
      ASSERT_EQ(st.code(r, col), m.q[sz(r * m.k + col)]);
      ASSERT_EQ(st.code(r, col + 1), m.q[sz(r * m.k + col + 1)]);
    }
    for (std::int64_t b = 0; b < nb; ++b) {
      // alpha pairs are (beta, scale), blocks row-major.
      EXPECT_EQ(st.alpha[sz((r * nb + b) * 2)], m.beta[sz(r * nb + b)])
          << "beta of row " << r << " block " << b;
      EXPECT_EQ(st.alpha[sz((r * nb + b) * 2 + 1)], m.s[sz(r * nb + b)])
          << "scale of row " << r << " block " << b;
      EXPECT_EQ(st.beta(r, b), m.beta[sz(r * nb + b)]);
      EXPECT_EQ(st.scale(r, b), m.s[sz(r * nb + b)]);
    }
  }
}

TEST(W4B64Format, StorageNibbleOrderAndAlphaPairsOnExactBlocks) {
  const ExactMatrix m = make_exact_matrix(3, 192);
  for (int iterations : {0, 20}) {
    SCOPED_TRACE(testing::Message() << "iterations=" << iterations);
    const W4B64Storage st = quantize_w4b64_hqq(m.w, m.n, m.k, iterations);
    expect_storage_equals_exact(st, m);
    std::vector<double> row(sz(m.k));
    for (std::int64_t r = 0; r < m.n; ++r) {
      dequantize_w4b64_row(st, r, row.data());
      for (std::int64_t c = 0; c < m.k; ++c)
        ASSERT_EQ(row[sz(c)], double(m.w[sz(r * m.k + c)])) << r << "," << c;
    }
  }
}

TEST(W4B64Format, NonPowerOfTwoScaleBlockReproducesCodes) {
  // s is not a power of two, so scale and beta pick up rounding; the codes must still be exact
  // (every w/s + zero is within a few ulps of an integer, far from a .5 tie) and the dequantised
  // value within the fp16 roundings of the pair of w (u16 = 2^-11): |s' - s| <~ u16 s, and
  // beta' = fp16(s' (8 - z)) with 8 - z = j, so |beta' - beta| <~ u16 |j| s + |j| |s' - s|; then
  // |err| <= |q - 8| |s' - s| + |beta' - beta| <~ u16 s (8 + 2|j|); 2^-10 s (8 + |j| + 1) covers
  // it.
  const std::int64_t k = 128;
  const float s = 0.0123f;
  const int j = 2;
  std::vector<int> q(sz(k));
  std::vector<float> w(sz(k));
  for (std::int64_t i = 0; i < k; ++i) {
    q[sz(i)] = static_cast<int>((i * 11 + 3) % 16);
    w[sz(i)] = s * static_cast<float>(q[sz(i)] - 8 + j);
  }
  for (int iterations : {0, 20}) {
    const W4B64Storage st = quantize_w4b64_hqq(w, 1, k, iterations);
    std::vector<double> row(sz(k));
    dequantize_w4b64_row(st, 0, row.data());
    for (std::int64_t i = 0; i < k; ++i) {
      ASSERT_EQ(raw_code(st, 0, i), q[sz(i)]) << "iterations=" << iterations << " col " << i;
      EXPECT_LE(std::fabs(row[sz(i)] - double(w[sz(i)])), 0x1.0p-10 * s * (8 + std::abs(j) + 1))
          << i;
    }
  }
}

TEST(W4B64Format, DequantizeRowEqualsFormulaFromRawStorage) {
  const std::int64_t n = 7, k = 256, nb = k / kW4BlockK;
  const AlignedBuffer<float> w = make_synthetic_weights(n, k, {.seed = 99});
  const W4B64Storage st = quantize_w4b64_hqq(w.span(), n, k);
  std::vector<double> row(sz(k));
  for (std::int64_t r = 0; r < n; ++r) {
    dequantize_w4b64_row(st, r, row.data());
    for (std::int64_t c = 0; c < k; ++c) {
      const double beta = st.alpha[sz((r * nb + c / 64) * 2)];
      const double s = st.alpha[sz((r * nb + c / 64) * 2 + 1)];
      const double want = s * (raw_code(st, r, c) - 8.0) + beta;
      ASSERT_EQ(row[sz(c)], want) << r << "," << c;
    }
  }
}

// Mean abs dequantisation error of one block, in double, from the stored (float) parameters.
double block_mean_abs_error(const float* w, const double* deq) {
  double e = 0.0;
  for (int i = 0; i < kW4BlockK; ++i) e += std::fabs(double(w[i]) - deq[i]);
  return e / kW4BlockK;
}

TEST(W4B64Format, HqqErrorIsSmallOnSyntheticWeights) {
  // Bound derivation. With R = max - min of a block, HQQ starts from qs = 15/R and the integer
  // zero z0 = round(-min*qs). Then x = w*qs + z0 lies in [min*qs + z0, min*qs + z0 + 15], and
  // |min*qs + z0| <= 1/2, so x is in [-1/2, 15 + 1/2] and clamp(round(x), 0, 15) is within 1/2 of
  // x: every element errs by at most 0.5/qs = (R/15)*0.5 = R/30 before refinement. The solver only
  // keeps a refined zero when it lowers the block's mean abs error, so the final mean abs error is
  // <= R/30 too. Storing s and beta as floats adds at most u(8 s + |beta|) + rounding of the
  // dequant itself per element; 2^-20 (R + |beta|) covers that slack.
  const std::int64_t n = 96, k = 512, nb = k / kW4BlockK;
  const AlignedBuffer<float> w = make_synthetic_weights(n, k, {.seed = 7});
  const W4B64Storage st = quantize_w4b64_hqq(w.span(), n, k);
  const W4B64Storage st0 = quantize_w4b64_hqq(w.span(), n, k, /*iterations=*/0);
  std::vector<double> row(sz(k)), row0(sz(k));
  double worst_ratio = 0.0, sum_err = 0.0, sum_err0 = 0.0;
  for (std::int64_t r = 0; r < n; ++r) {
    dequantize_w4b64_row(st, r, row.data());
    dequantize_w4b64_row(st0, r, row0.data());
    for (std::int64_t b = 0; b < nb; ++b) {
      const float* wb = w.data() + r * k + b * kW4BlockK;
      const auto [lo, hi] = std::minmax_element(wb, wb + kW4BlockK);
      const double range = double(*hi) - double(*lo);
      ASSERT_GT(range, 0.0);
      const double slack = 0x1.0p-20 * (range + std::fabs(double(st.beta(r, b))));
      const double err = block_mean_abs_error(wb, row.data() + b * kW4BlockK);
      const double err0 = block_mean_abs_error(wb, row0.data() + b * kW4BlockK);
      EXPECT_LE(err, range / 30.0 + slack) << "row " << r << " block " << b;
      EXPECT_LE(err0, range / 30.0 + slack) << "row " << r << " block " << b << " (iterations=0)";
      // Refinement never makes a block worse (it keeps the best zero).
      EXPECT_LE(err, err0 + slack) << "row " << r << " block " << b;
      worst_ratio = std::max(worst_ratio, err / (range / 30.0));
      sum_err += err;
      sum_err0 += err0;
    }
  }
  // Refinement must have improved the matrix as a whole (it ran and was kept somewhere).
  EXPECT_LT(sum_err, sum_err0);
  std::printf(
      "[          ] HQQ worst block mean-abs-error / (R/30) = %.4f; refined/initial total = %.4f\n",
      worst_ratio, sum_err / sum_err0);
}

TEST(W4B64Format, HqqZeroIsNonIntegerAfterRefinement) {
  // z = 8 - beta/s. Recovering z from the fp16 pair errs by ~2 u16 |8 - z| (u16 = 2^-11): below
  // 0.01 for |8 - z| <= 9, so the integer zeros of iterations=0 read within 2^-10 (|8 - z| + 1) of
  // an integer, and a fractional zero is one further than 0.02 from every integer.
  const std::int64_t n = 32, k = 256, nb = k / kW4BlockK;
  const AlignedBuffer<float> w = make_synthetic_weights(n, k, {.seed = 11});
  const W4B64Storage st = quantize_w4b64_hqq(w.span(), n, k);
  const W4B64Storage st0 = quantize_w4b64_hqq(w.span(), n, k, /*iterations=*/0);
  int non_integer = 0;
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t b = 0; b < nb; ++b) {
      const double z = 8.0 - double(st.beta(r, b)) / double(st.scale(r, b));
      const double z0 = 8.0 - double(st0.beta(r, b)) / double(st0.scale(r, b));
      EXPECT_LE(std::fabs(z0 - std::round(z0)), 0x1.0p-10 * (std::fabs(8.0 - z0) + 1.0))
          << "iterations=0 keeps the integer zero";
      EXPECT_GE(z0, -0.5);
      EXPECT_LE(z0, 15.5);
      if (std::fabs(z - std::round(z)) > 0.02) ++non_integer;
    }
  }
  // Typically ~80% of blocks end up with a fractional zero; require at least half.
  EXPECT_GE(non_integer, n * nb / 2)
      << non_integer << " of " << n * nb << " blocks have a fractional zero";
}

// A constant block is carried by beta with scale 1: its value is the fp16 rounding of the constant
// (what the packed layouts hold), exactly.
TEST(W4B64Format, ConstantBlocksReproduceTheirFp16ValueExactly) {
  const std::int64_t k = 128;
  const float constants[] = {0.0f, 0.0173f, -3.5f, 1e-3f, 1234.5f, -0.02f, 0x1.0p-20f, 7.0f};
  const std::int64_t n = static_cast<std::int64_t>(std::size(constants));
  std::vector<float> w(sz(n * k));
  SeededRandom rng(5);
  for (std::int64_t r = 0; r < n; ++r) {
    // Block 0 constant, block 1 ordinary (so constant handling is per block).
    for (std::int64_t c = 0; c < 64; ++c) w[sz(r * k + c)] = constants[r];
    for (std::int64_t c = 64; c < k; ++c)
      w[sz(r * k + c)] = static_cast<float>(rng.normal(0.0, 0.02));
  }
  const W4B64Storage st = quantize_w4b64_hqq(w, n, k);
  std::vector<double> row(sz(k));
  for (std::int64_t r = 0; r < n; ++r) {
    dequantize_w4b64_row(st, r, row.data());
    for (std::int64_t c = 0; c < 64; ++c) {
      ASSERT_EQ(row[sz(c)], double(w4b64_pair_value(constants[r])))
          << "constant " << constants[r] << " col " << c;
    }
    // The ordinary block is not constant after dequantisation.
    const auto [lo, hi] = std::minmax_element(row.begin() + 64, row.begin() + k);
    EXPECT_LT(*lo, *hi);
  }
  // Through the kernel too: the embedding of a constant block is its fp16 value, bit for bit.
  const W4B64Packed packed = pack_w4b64_generic(st);
  WorkerPool pool(1);
  std::vector<std::int32_t> tokens(sz(n));
  for (std::int64_t r = 0; r < n; ++r) tokens[sz(r)] = static_cast<std::int32_t>(r);
  std::vector<float> out(sz(n * k));
  k3k::embedding_lookup_w4b64(k3k::KernelPath::kGeneric, packed, tokens.data(), n, out.data(),
                              pool);
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < 64; ++c)
      ASSERT_EQ(out[sz(r * k + c)], w4b64_pair_value(constants[r])) << r << "," << c;
}

TEST(W4B64Format, InvalidShapesThrow) {
  std::vector<float> w(64 * 4, 0.5f);
  for (std::int64_t k : {32, 100, 65, 63, 1}) {
    std::vector<float> wk(sz(2 * k), 0.1f);
    EXPECT_THROW(quantize_w4b64_hqq(wk, 2, k), std::invalid_argument) << "k=" << k;
  }
  EXPECT_THROW(quantize_w4b64_hqq(std::span<const float>(), 1, 0), std::invalid_argument);
  EXPECT_THROW(quantize_w4b64_hqq(w, 4, -64), std::invalid_argument);
  EXPECT_THROW(quantize_w4b64_hqq(std::span<const float>(), 0, 64), std::invalid_argument);
  // Size mismatch with N*K.
  EXPECT_THROW(quantize_w4b64_hqq(w, 3, 64), std::invalid_argument);
  EXPECT_NO_THROW(quantize_w4b64_hqq(w, 4, 64));
  EXPECT_NO_THROW(quantize_w4b64_hqq(w, 2, 128));
}

TEST(W4B64Format, SyntheticWeightsAreSeededAndRealistic) {
  const std::int64_t n = 256, k = 1024;
  const AlignedBuffer<float> a = make_synthetic_weights(n, k, {.seed = 42});
  const AlignedBuffer<float> b = make_synthetic_weights(n, k, {.seed = 42});
  const AlignedBuffer<float> c = make_synthetic_weights(n, k, {.seed = 43});
  ASSERT_EQ(a.size(), sz(n * k));
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size_bytes()), 0)
      << "same seed must give the same bits";
  std::size_t differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += (a[i] != c[i]);
  EXPECT_GT(differ, a.size() * 99 / 100) << "different seeds must give different data";

  // Statistics: variance (1 - f) sd^2 + f (12 sd)^2 = sd^2 (1 + 143 f) -> std 0.02*sqrt(1.286)
  // = 0.02268; with 262144 samples the estimate is within ~1% (outliers dominate the variance of
  // the estimate), so 5% is a safe deterministic tolerance. Large values |x| > 6 sd come almost
  // only from outliers: P = f * P(|N(0,12)| > 6) = 0.002 * 0.617 = 0.00123 (~324 samples, sd ~18).
  double sum = 0.0, sum2 = 0.0;
  std::size_t large = 0;
  for (float x : a) {
    sum += x;
    sum2 += double(x) * x;
    large += std::fabs(x) > 6 * 0.02;
  }
  const double count = double(a.size());
  const double mean = sum / count;
  const double sd = std::sqrt(sum2 / count - mean * mean);
  EXPECT_LT(std::fabs(mean), 5 * 0.0227 / std::sqrt(count));
  EXPECT_NEAR(sd, 0.02 * std::sqrt(1.0 + 143 * 0.002), 0.05 * 0.0227);
  EXPECT_GT(double(large) / count, 0.0008);
  EXPECT_LT(double(large) / count, 0.0017);

  const AlignedBuffer<float> plain =
      make_synthetic_weights(64, 1024, {.seed = 3, .outlier_fraction = 0.0});
  std::size_t plain_large = 0;
  for (float x : plain) plain_large += std::fabs(x) > 6 * 0.02;
  EXPECT_EQ(plain_large, 0u) << "without outliers nothing should exceed 6 sd";
}

TEST(W4B64Format, GenericPackRoundTripsThroughEmbeddingKernel) {
  // Every code of the storage form must land where the kernel reads it: the embedding of each row
  // equals the dequantised storage row within the reference bound.
  const std::int64_t n = 37, k = 320;
  const AlignedBuffer<float> w = make_synthetic_weights(n, k, {.seed = 21});
  const W4B64Storage st = quantize_w4b64_hqq(w.span(), n, k);
  const W4B64Packed packed = pack_w4b64_generic(st);
  EXPECT_EQ(packed.n, n);
  EXPECT_EQ(packed.k, k);
  EXPECT_EQ(packed.blocks_per_row(), k / 64);
  std::vector<std::int32_t> tokens(sz(n));
  for (std::int64_t r = 0; r < n; ++r) tokens[sz(r)] = static_cast<std::int32_t>(n - 1 - r);
  std::vector<float> out(sz(n * k));
  WorkerPool pool(2);
  k3k::embedding_lookup_w4b64(k3k::KernelPath::kGeneric, packed, tokens.data(), n, out.data(),
                              pool);
  const reference::LinearResult ref = reference::embedding_lookup(st, tokens.data(), n);
  const reference::CompareResult cmp = reference::compare_to_reference(out, ref.y, ref.bound);
  EXPECT_TRUE(cmp.pass) << reference::describe(cmp, out, ref.y, ref.bound);
}

TEST(W4B64Format, EverySingleCodeChangeMovesExactlyOneKernelOutput) {
  // Exhaustive position test of the repack: change one code at a time in the storage form, repack,
  // and the embedding of that row must change at exactly that column, to s*(q'-8)+beta.
  const std::int64_t n = 2, k = 128;
  const AlignedBuffer<float> w = make_synthetic_weights(n, k, {.seed = 8});
  const W4B64Storage base = quantize_w4b64_hqq(w.span(), n, k);
  WorkerPool pool(1);
  const W4B64Packed base_packed = pack_w4b64_generic(base);
  std::vector<float> before(sz(k)), after(sz(k));
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int32_t token = static_cast<std::int32_t>(r);
    k3k::embedding_lookup_w4b64(k3k::KernelPath::kGeneric, base_packed, &token, 1, before.data(),
                                pool);
    for (std::int64_t col = 0; col < k; ++col) {
      W4B64Storage mutated = base.deep_copy();
      const int q_new = (raw_code(base, r, col) + 5) % 16;
      set_storage_code(mutated, r, col, static_cast<std::uint8_t>(q_new));
      ASSERT_EQ(raw_code(mutated, r, col), q_new);
      const W4B64Packed packed = pack_w4b64_generic(mutated);
      k3k::embedding_lookup_w4b64(k3k::KernelPath::kGeneric, packed, &token, 1, after.data(), pool);
      for (std::int64_t c = 0; c < k; ++c) {
        if (c == col) {
          const double s = base.scale(r, c / 64), beta = base.beta(r, c / 64);
          const double want = s * (q_new - 8) + beta;
          ASSERT_LE(std::fabs(after[sz(c)] - want),
                    gamma_f32(2) * (std::fabs(s * (q_new - 8)) + std::fabs(beta)))
              << "row " << r << " col " << col;
          ASSERT_NE(after[sz(c)], before[sz(c)]) << "row " << r << " col " << col;
        } else {
          ASSERT_EQ(after[sz(c)], before[sz(c)])
              << "changing (" << r << "," << col << ") moved col " << c;
        }
      }
    }
  }
}

}  // namespace
}  // namespace k3k
