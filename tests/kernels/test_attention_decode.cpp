// Attention decode on every layer (support/layer_sweep.h) vs the float64 reference within the
// layer's derived bound at several context lengths (including ones not a multiple of the chunk or
// VLMAX), head dims, GQA ratios 1 to 4, dtypes, ring wrap-around and decode loops; a layer other
// than generic within the sum of both layers' bounds of the generic layer; determinism across
// worker counts; every chunk within its own bound; mutations; argument errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "k3k/attention.h"
#include "k3k/kv_cache.h"
#include "k3k/reference/attention.h"
#include "k3k/reference/compare.h"
#include "k3k/worker_pool.h"
#include "support/attention_setup.h"
#include "support/layer_bounds.h"
#include "support/layer_checks.h"
#include "support/layer_sweep.h"
#include "support/test_data.h"

namespace {

using k3k::KernelPath;
using k3k::KvDtype;
using k3test::CacheSetup;
using k3test::random_floats;
namespace ref = k3k::reference;

struct DecodeCase {
  const char* name;
  int n_q_heads;
  int n_kv_heads;
  int head_dim;
  k3k::RopeConfig rope;
  KvDtype dtype;
  bool ring;
  std::int64_t capacity;
  std::int64_t context;  // cache length at the decode step (the query is the last token)
  int chunk;
  double qk_stddev = 1.5;
};

// Fills the cache (on `path`) and its mirror with `context` tokens: a bulk prefill of all but the
// last token, then the query token through the decode append.
CacheSetup make_setup(KernelPath path, const DecodeCase& c, std::uint64_t seed) {
  const k3k::KvCacheConfig cfg{c.n_kv_heads, c.head_dim, c.capacity, c.dtype, c.ring, c.rope};
  const std::int64_t bulk = c.context - 1;
  return k3test::fill_cache(path, cfg, {bulk},
                            c.ring ? c.capacity : std::max<std::int64_t>(bulk, 1), 1, 1,
                            c.n_q_heads, c.qk_stddev, seed);
}

std::vector<float> run_kernel(KernelPath path, const CacheSetup& s, const DecodeCase& c,
                              int workers, int chunk) {
  std::vector<float> out(s.q.size());
  k3k::WorkerPool pool(workers);
  k3k::attention_decode(path, s.cache, s.q, c.n_q_heads, out, pool, {chunk});
  return out;
}

constexpr k3k::RopeConfig kD128{128, 1.0e6};
constexpr k3k::RopeConfig kD256Partial{64, 1.0e7};

// clang-format off
const DecodeCase kShapes[] = {
    //         name                                       nq nkv  hd  rope             dtype         ring  cap   ctx   chunk [qk_stddev]
    DecodeCase{"qwen3_1p7b_ctx1",                        16, 8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 8,    1,    256},
    DecodeCase{"qwen3_1p7b_ctx255",                      16, 8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 300,  255,  256},
    DecodeCase{"qwen3_1p7b_ctx256",                      16, 8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 300,  256,  256},
    DecodeCase{"qwen3_1p7b_ctx257",                      16, 8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 300,  257,  256},
    DecodeCase{"qwen3_1p7b_ctx1000",                     16, 8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 1024, 1000, 256},
    DecodeCase{"qwen3_1p7b_ctx1024",                     16, 8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 1024, 1024, 256},
    DecodeCase{"qwen3_1p7b_f16_ctx1024",                 16, 8, 128, k3k::kQwen3Rope,  KvDtype::f16, false, 1024, 1024, 256},
    DecodeCase{"qwen3_0p6b_f16_ctx512",                  16, 8, 128, k3k::kQwen3Rope,  KvDtype::f16, false, 512,  512,  256},
    DecodeCase{"qwen35_ctx700",                           8, 2, 256, k3k::kQwen35Rope, KvDtype::f32, false, 700,  700,  256},
    DecodeCase{"qwen35_f16_ctx333_chunk64",               8, 2, 256, k3k::kQwen35Rope, KvDtype::f16, false, 400,  333,  64},
    DecodeCase{"d128_gqa2_f32_ctx1",                      4, 2, 128, kD128,            KvDtype::f32, false, 4,    1,    256},
    DecodeCase{"d128_gqa1_f32_ctx77_chunk16",             4, 4, 128, kD128,            KvDtype::f32, false, 80,   77,   16},
    DecodeCase{"d128_gqa1_f16_ctx37_chunk16",             2, 2, 128, kD128,            KvDtype::f16, false, 40,   37,   16},
    DecodeCase{"d128_gqa2_f16_ctx130_chunk1",             4, 2, 128, kD128,            KvDtype::f16, false, 130,  130,  1},
    DecodeCase{"d128_gqa3_f32_ctx130_chunk33",            6, 2, 128, kD128,            KvDtype::f32, false, 130,  130,  33},
    DecodeCase{"d128_gqa4_f16_ctx300",                    4, 1, 128, kD128,            KvDtype::f16, false, 300,  300,  256},
    DecodeCase{"d256_rot64_gqa2_f32_ctx99_chunk1000",     4, 2, 256, kD256Partial,     KvDtype::f32, false, 100,  99,   1000},
    DecodeCase{"d256_rot64_gqa2_f32_ctx17_chunk5",        4, 2, 256, kD256Partial,     KvDtype::f32, false, 20,   17,   5},
    DecodeCase{"d256_rot64_gqa4_f16_ctx70",               4, 1, 256, kD256Partial,     KvDtype::f16, false, 70,   70,   64},
    DecodeCase{"d72_rot40_gqa3_f32_ctx45_chunk7",         3, 1,  72, {40, 1e4},        KvDtype::f32, false, 45,   45,   7},
    DecodeCase{"ring_d128_gqa2_f32_ctx517_cap200",        4, 2, 128, kD128,            KvDtype::f32, true,  200,  517,  64},
    DecodeCase{"ring_d128_gqa2_f32_ctx150_cap64",         2, 1, 128, kD128,            KvDtype::f32, true,  64,   150,  24},
    DecodeCase{"ring_d256_rot64_gqa4_f16_ctx300_cap128",  8, 2, 256, kD256Partial,     KvDtype::f16, true,  128,  300,  50},
    DecodeCase{"ring_d256_rot64_gqa4_f16_ctx100_cap40",   4, 1, 256, kD256Partial,     KvDtype::f16, true,  40,   100,  16},
    DecodeCase{"d128_gqa2_f32_peaked",                    4, 2, 128, kD128,            KvDtype::f32, false, 300,  300,  64, 4.0},
    DecodeCase{"d128_gqa2_nq2_f32_peaked_ctx90",          2, 1, 128, kD128,            KvDtype::f32, false, 90,   90,   32, 4.0}};
// clang-format on

class AttentionDecode : public k3test::OnLayerWith<DecodeCase> {};

TEST_P(AttentionDecode, WithinBoundAndDeterministic) {
  const DecodeCase& c = test_case();
  const CacheSetup s = make_setup(layer(), c, 2);
  const auto out = run_kernel(layer(), s, c, 2, c.chunk);
  const auto expect = ref::attention_decode(
      s.mirror, s.q, c.n_q_heads, k3test::decode_error_model(layer(), c.head_dim, {c.chunk}));
  const std::string what = std::string(k3k::to_string(layer())) + " decode " + c.name;
  k3test::expect_within(what, out, expect.out, expect.bound);
  if (!is_generic()) {
    const auto bound_gen = ref::attention_decode_bound(
        s.mirror, s.q, c.n_q_heads,
        k3test::decode_error_model(KernelPath::kGeneric, c.head_dim, {c.chunk}));
    k3test::expect_near_generic(what, out, run_kernel(KernelPath::kGeneric, s, c, 2, c.chunk),
                                k3test::sum_of(expect.bound, bound_gen));
  }
  for (int workers : {1, 3, 5}) {
    const auto other = run_kernel(layer(), s, c, workers, c.chunk);
    ASSERT_EQ(std::memcmp(out.data(), other.data(), out.size() * sizeof(float)), 0)
        << "workers " << workers;
  }
}

K3_SWEEP_LAYERS_AND_CASES(AttentionDecode, kShapes);

// A decode loop: after a prefill, every step appends one token through kv_append_one and decodes
// it; each step is checked against the reference, for both dtypes.
struct LoopCase {
  const char* name;
  bool ring;
  std::int64_t capacity;
  std::int64_t prefill, steps;
  int chunk;
};

// clang-format off
const LoopCase kLoops[] = {
    LoopCase{"cap64_chunk8",  false, 64, 20, 20, 8},
    LoopCase{"ring24_chunk8", true,  24, 20, 20, 8},  // wraps during the prefill and the loop
    LoopCase{"ring12_chunk5", true,  12, 10, 6,  5}};
// clang-format on

class AttentionDecodeLoop : public k3test::OnLayerWith<LoopCase> {};

TEST_P(AttentionDecodeLoop, EveryStepWithinBound) {
  const LoopCase& c = test_case();
  for (auto dtype : {KvDtype::f32, KvDtype::f16}) {
    const int nq = 4, nkv = 2, hd = 128;
    const k3k::KvCacheConfig cfg{nkv, hd, c.capacity, dtype, c.ring, kD128};
    k3k::KvCache cache(cfg);
    ref::RefKvCache mirror(cfg);
    k3k::WorkerPool pool(3);
    const auto k0 = random_floats(static_cast<std::size_t>(c.prefill * nkv * hd), 31, 1.5);
    const auto v0 = random_floats(static_cast<std::size_t>(c.prefill * nkv * hd), 32);
    k3k::kv_append(layer(), cache, k0, v0, c.prefill, pool);
    mirror.append(k0, v0, c.prefill);
    const k3k::DecodeTiling tiling{c.chunk};
    for (int step = 0; step < c.steps; ++step) {
      const auto k = random_floats(nkv * hd, 100 + step, 1.5);
      const auto v = random_floats(nkv * hd, 200 + step);
      const auto q = random_floats(nq * hd, 300 + step, 1.5);
      k3k::kv_append_one(layer(), cache, k, v, pool);
      mirror.append(k, v, 1);
      std::vector<float> out(q.size());
      k3k::attention_decode(layer(), cache, q, nq, out, pool, tiling);
      const auto expect =
          ref::attention_decode(mirror, q, nq, k3test::decode_error_model(layer(), hd, tiling));
      const auto r = ref::compare_to_reference(out, expect.out, expect.bound);
      ASSERT_TRUE(r.pass) << to_string(dtype) << " step " << step << ": "
                          << ref::describe(r, out, expect.out, expect.bound);
    }
  }
}

K3_SWEEP_LAYERS_AND_CASES(AttentionDecodeLoop, kLoops);

class AttentionDecodeTiling : public k3test::OnLayer {};

TEST_P(AttentionDecodeTiling, EveryChunkWithinItsBound) {
  const DecodeCase c{"chunks", 8, 2, 128, kD128, KvDtype::f32, false, 600, 600, 256};
  const CacheSetup s = make_setup(layer(), c, 5);
  // 350: a last chunk of 250 of its own; 400: the remainder of 200 joins the first chunk.
  for (int chunk : {1, 7, 64, 256, 350, 400, 599, 600, 4096}) {
    const auto out = run_kernel(layer(), s, c, 2, chunk);
    const auto expect = ref::attention_decode(s.mirror, s.q, c.n_q_heads,
                                              k3test::decode_error_model(layer(), 128, {chunk}));
    const auto r = ref::compare_to_reference(out, expect.out, expect.bound);
    EXPECT_TRUE(r.pass) << "chunk " << chunk << ": "
                        << ref::describe(r, out, expect.out, expect.bound);
  }
}

// A remainder of at most half a chunk joins the last chunk: 600 positions in chunks of 400 are
// one chunk of 600, so the result is bitwise that of chunk 600 (the cut alone decides rounding).
TEST_P(AttentionDecodeTiling, ASmallRemainderJoinsTheLastChunk) {
  const DecodeCase c{"rest", 8, 2, 128, kD128, KvDtype::f16, false, 600, 600, 256};
  const CacheSetup s = make_setup(layer(), c, 8);
  EXPECT_EQ(run_kernel(layer(), s, c, 2, 400), run_kernel(layer(), s, c, 2, 600));
  EXPECT_NE(run_kernel(layer(), s, c, 2, 350), run_kernel(layer(), s, c, 2, 600));
}

K3_SWEEP_LAYERS(AttentionDecodeTiling);

TEST(DecodeChunks, ARemainderOfAtMostHalfAChunkJoinsTheLast) {
  struct Cut {
    std::int64_t context;
    int chunk;
    std::int64_t count, longest;
  };
  for (const Cut& c : {Cut{513, 256, 2, 257}, Cut{512, 256, 2, 256}, Cut{640, 256, 2, 384},
                       Cut{641, 256, 3, 256}, Cut{100, 256, 1, 100}, Cut{7, 3, 2, 4},
                       Cut{8, 3, 3, 3}, Cut{5, 1, 5, 1}, Cut{1, 256, 1, 1}}) {
    const k3k::DecodeChunks cut = k3k::decode_chunks(c.context, c.chunk);
    EXPECT_EQ(cut.count, c.count) << c.context << " / " << c.chunk;
    EXPECT_EQ(cut.longest, c.longest) << c.context << " / " << c.chunk;
    std::int64_t covered = 0;
    for (std::int64_t i = 0; i < cut.count; ++i) covered += cut.size(i, c.context, c.chunk);
    EXPECT_EQ(covered, c.context) << c.context << " / " << c.chunk;
  }
}

// The bound is tight enough to see a wrong kernel.
class AttentionDecodeMutation : public k3test::OnLayer {
 protected:
  const DecodeCase c{"mut", 8, 2, 128, kD128, KvDtype::f32, false, 300, 300, 64};
  const CacheSetup s = make_setup(layer(), c, 6);
  const std::vector<float> out = run_kernel(layer(), s, c, 2, c.chunk);
  const ref::AttentionErrorModel model = k3test::decode_error_model(layer(), 128, {c.chunk});
};

TEST_P(AttentionDecodeMutation, PerturbedElementFails) {
  const auto expect = ref::attention_decode(s.mirror, s.q, c.n_q_heads, model);
  ASSERT_TRUE(ref::compare_to_reference(out, expect.out, expect.bound).pass);
  std::vector<float> bad = out;
  bad[77] = static_cast<float>(expect.out[77] - 2.0 * expect.bound[77]);
  const auto r = ref::compare_to_reference(bad, expect.out, expect.bound);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.failures, 1);
}

TEST_P(AttentionDecodeMutation, WrongGqaMappingFails) {
  const auto wrong =
      ref::attention_decode(s.mirror, s.q, c.n_q_heads, model, 0.0, {.interleaved_gqa = true});
  EXPECT_FALSE(ref::compare_to_reference(out, wrong.out, wrong.bound).pass);
}

K3_SWEEP_LAYERS(AttentionDecodeMutation);

class AttentionDecodeArgs : public k3test::OnLayer {};

TEST_P(AttentionDecodeArgs, BadArgumentsNameTheFieldAsTheGenericLayer) {
  k3k::WorkerPool pool(1);
  k3k::KvCache cache({8, 128, 16, KvDtype::f16, false, k3k::kQwen3Rope});
  std::vector<float> q16(16 * 128), out16(q16.size()), q12(12 * 128);
  auto rejects = [&](const std::string& field, std::span<const float> q, int n_q_heads,
                     std::span<float> out, const k3k::DecodeTiling& tiling = {},
                     float scale = 0.0f) {
    k3test::expect_rejected(layer(), field, [&](KernelPath path) {
      k3k::attention_decode(path, cache, q, n_q_heads, out, pool, tiling, scale);
    });
  };
  rejects("cache.length() is 0", q16, 16, out16);
  std::vector<float> kv(8 * 128);
  k3k::kv_append_one(layer(), cache, kv, kv, pool);
  EXPECT_EQ(
      k3test::thrown_message([&] { k3k::attention_decode(layer(), cache, q12, 12, q12, pool); }),
      "attention_decode: n_q_heads (12) is not a multiple of n_kv_heads (8)");
  rejects("q.size()", q12, 16, out16);
  rejects("out.size()", q16, 16, q12);
  rejects("tiling.chunk (0)", q16, 16, out16, {0});
  rejects("scale", q16, 16, out16, {}, NAN);
}

K3_SWEEP_LAYERS(AttentionDecodeArgs);

}  // namespace
