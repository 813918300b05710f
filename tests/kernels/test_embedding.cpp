// W4B64 embedding lookup on every layer (support/layer_sweep.h) against reference::embedding_lookup
// (dequantised storage rows in float64 with the bound of a float32 s*(q-8)+beta), a layer other
// than generic within twice that bound of the generic layer, rows at the 32-row tile edges, token
// validation before anything is written, and worker-count invariance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "k3k/embedding.h"
#include "k3k/reference/compare.h"
#include "k3k/reference/linear.h"
#include "k3k/seeded_random.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"
#include "support/layer_sweep.h"
#include "support/test_data.h"

namespace k3k {
namespace {

std::size_t sz(std::int64_t v) {
  return static_cast<std::size_t>(v);
}

struct Table {
  W4B64Storage storage;
  W4B64Packed packed;
};

Table make_table(std::int64_t n, std::int64_t k, std::uint64_t seed) {
  const AlignedBuffer<float> w = make_synthetic_weights(n, k, {.seed = seed});
  Table t;
  t.storage = quantize_w4b64_hqq(w.span(), n, k);
  t.packed = pack_w4b64_generic(t.storage);
  return t;
}

// Random ids plus the edge ids 0 and n-1 and a repeat.
std::vector<std::int32_t> make_tokens(std::int64_t count, std::int64_t n, std::uint64_t seed) {
  SeededRandom rng(seed);
  std::vector<std::int32_t> t(sz(count));
  for (auto& x : t) x = static_cast<std::int32_t>(rng.next() % static_cast<std::uint64_t>(n));
  if (count >= 4) {
    t[0] = 0;
    t[1] = static_cast<std::int32_t>(n - 1);
    t[2] = t[3];
  }
  return t;
}

std::vector<float> lookup(KernelPath path, const Table& t, const std::vector<std::int32_t>& tokens,
                          WorkerPool& pool) {
  std::vector<float> out(tokens.size() * sz(t.packed.k), std::numeric_limits<float>::quiet_NaN());
  k3k::embedding_lookup_w4b64(path, t.packed, tokens.data(),
                              static_cast<std::int64_t>(tokens.size()), out.data(), pool);
  return out;
}

class Embedding : public k3test::OnLayer {
 protected:
  std::vector<float> lookup(const Table& t, const std::vector<std::int32_t>& tokens,
                            WorkerPool& pool) {
    return k3k::lookup(layer(), t, tokens, pool);
  }
  // out (the layer's) within the reference bound and, for a layer other than generic, within twice
  // the bound of the generic layer's lookup; returns the worst error/bound ratio.
  double check(const Table& t, const std::vector<std::int32_t>& tokens,
               const std::vector<float>& out) {
    const reference::LinearResult ref = reference::embedding_lookup(
        t.storage, tokens.data(), static_cast<std::int64_t>(tokens.size()));
    const reference::CompareResult cmp = reference::compare_to_reference(out, ref.y, ref.bound);
    EXPECT_TRUE(cmp.pass) << reference::describe(cmp, out, ref.y, ref.bound);
    if (!is_generic()) {
      WorkerPool pool(2);
      const std::vector<float> gen = k3k::lookup(KernelPath::kGeneric, t, tokens, pool);
      for (std::size_t i = 0; i < out.size(); ++i)
        EXPECT_LE(std::fabs(double(out[i]) - gen[i]), 2 * ref.bound[i]) << "element " << i;
    }
    return cmp.worst_ratio;
  }
};

TEST_P(Embedding, MatchesReferenceOnSmallTables) {
  WorkerPool pool(2);
  double worst = 0.0;
  for (std::int64_t k : {64, 192, 320}) {
    for (std::int64_t n : {1, 7, 300}) {
      for (std::int64_t count : {1, 5, 50}) {
        SCOPED_TRACE(testing::Message() << "N=" << n << " K=" << k << " T=" << count);
        const Table t = make_table(n, k, 100 + n + k);
        const std::vector<std::int32_t> tokens = make_tokens(count, n, count + n);
        worst = std::max(worst, check(t, tokens, lookup(t, tokens, pool)));
      }
    }
  }
  std::printf("[          ] Embedding max err/bound: %.4f\n", worst);
}

// Ids on both sides of the 32-row tile edges (31, 32, 33, 64) and the last row of a partial tile.
TEST_P(Embedding, RowsAtTileEdgesMatchReference) {
  Table t;
  t.storage = k3test::hqq_weights(70, 192, 9);
  t.packed = pack_w4b64_generic(t.storage);
  const std::vector<std::int32_t> ids = {0, 69, 31, 32, 33, 5, 64};
  WorkerPool pool(2);
  check(t, ids, lookup(t, ids, pool));
}

TEST_P(Embedding, Qwen3SizedHiddenDim1024) {
  // Qwen3-0.6B's hidden size is 1024; a 2048-row slice of the (tied) table keeps quantisation
  // cheap.
  const std::int64_t n = 2048, k = 1024;
  const Table t = make_table(n, k, 151936);
  WorkerPool pool(2), p1(1);
  const std::vector<std::int32_t> tokens = make_tokens(17, n, 3);
  const std::vector<float> out = lookup(t, tokens, pool);
  check(t, tokens, out);
  const std::vector<float> out1 = lookup(t, tokens, p1);
  EXPECT_EQ(std::memcmp(out.data(), out1.data(), out.size() * sizeof(float)), 0);
}

TEST_P(Embedding, ExactTableGivesExactValues) {
  // s a power of two and beta = s*j: s*(q-8)+beta is exact in float, so the kernel must reproduce
  // every element bit for bit, wherever the repack puts the codes.
  const std::int64_t n = 3, k = 128;
  std::vector<float> w(sz(n * k));
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < k; ++c) {
      const float s = std::ldexp(1.0f, -static_cast<int>(4 + (r + c / 64) % 5));
      const int j = static_cast<int>((r * 3 + c / 64) % 7) - 3;
      const int q = static_cast<int>((c * 5 + r) % 16);  // every block holds all of 0..15
      w[sz(r * k + c)] = s * static_cast<float>(q - 8 + j);
    }
  Table t;
  t.storage = quantize_w4b64_hqq(w, n, k);
  t.packed = pack_w4b64_generic(t.storage);
  WorkerPool pool(1);
  const std::vector<std::int32_t> tokens = {2, 0, 1, 2};
  const std::vector<float> out = lookup(t, tokens, pool);
  for (std::size_t i = 0; i < tokens.size(); ++i)
    for (std::int64_t c = 0; c < k; ++c)
      ASSERT_EQ(out[i * sz(k) + sz(c)], w[sz(tokens[i] * k + c)]) << "token " << i << " col " << c;
}

TEST_P(Embedding, OutOfRangeTokenThrowsBeforeWriting) {
  const Table t = make_table(10, 64, 5);
  WorkerPool pool(2);
  for (std::int32_t bad : {-1, 10, 11, std::numeric_limits<std::int32_t>::max(),
                           std::numeric_limits<std::int32_t>::min()}) {
    // The bad id is last, so a kernel that validated lazily would already have written rows.
    const std::vector<std::int32_t> tokens = {0, 3, 9, bad};
    std::vector<float> out(tokens.size() * 64, 5.0f);
    EXPECT_THROW(k3k::embedding_lookup_w4b64(layer(), t.packed, tokens.data(), 4, out.data(), pool),
                 std::invalid_argument)
        << bad;
    for (float v : out)
      ASSERT_EQ(v, 5.0f) << "output written before the invalid token was rejected";
  }
  const std::vector<std::int32_t> edge = {9, 0};
  std::vector<float> out(2 * 64);
  EXPECT_NO_THROW(k3k::embedding_lookup_w4b64(layer(), t.packed, edge.data(), 2, out.data(), pool));
  // count 0 is a no-op.
  EXPECT_NO_THROW(k3k::embedding_lookup_w4b64(layer(), t.packed, edge.data(), 0, out.data(), pool));
}

TEST_P(Embedding, IdenticalBitsForEveryWorkerCount) {
  const Table t = make_table(500, 256, 77);
  const std::vector<std::int32_t> tokens = make_tokens(123, 500, 78);
  WorkerPool p1(1);
  const std::vector<float> base = lookup(t, tokens, p1);
  check(t, tokens, base);
  for (int workers : {2, 3, 4}) {
    WorkerPool pool(workers);
    for (int rep = 0; rep < 3; ++rep) {
      const std::vector<float> out = lookup(t, tokens, pool);
      EXPECT_EQ(std::memcmp(out.data(), base.data(), base.size() * sizeof(float)), 0) << workers;
    }
  }
}

K3_SWEEP_LAYERS(Embedding);

}  // namespace
}  // namespace k3k
