// RVV attention prefill / decode vs the float64 reference within the RVV error model
// (reference::rvv_*_error_model at this CPU's VLEN) and vs the generic layer (within the sum of
// both layers' bounds), at small odd shapes (S 1/3/17/130, contexts not multiples of the block,
// chunk or VLMAX; head_dim 128, 256 with rotary 64, and 72 with rotary 40; GQA 1/2/3/4; fp32/fp16;
// ring wrap) and one Qwen3-0.6B shape each; bitwise identical across worker counts 1/2/3; a
// mutation; argument errors. Shapes are kept small: the whole suite runs under qemu-user at every
// VLEN.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "k3k/attention.h"
#include "k3k/dispatch.h"
#include "k3k/kv_cache.h"
#include "k3k/reference/attention.h"
#include "k3k/reference/compare.h"
#include "k3k/attention.h"
#include "k3k/embedding.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/small_ops.h"
#include "k3k/seeded_random.h"
#include "k3k/worker_pool.h"
#include "support/test_data.h"

namespace {

using k3test::random_floats;
using k3test::thrown_message;
using k3test::bitwise_equal;

namespace ref = k3k::reference;
using k3k::KvDtype;

constexpr k3k::RopeConfig kD128{128, 1.0e6};
constexpr k3k::RopeConfig kD256Partial{64, 1.0e7};

int vlenb() {
  return k3k::cpu_features().vlenb;
}

struct CacheSetup {
  k3k::KvCache cache;
  ref::RefKvCache mirror;
  std::vector<float> q;
};

// Fills the cache (through the RVV appends) and its reference mirror with `bulk` tokens appended
// in pieces of at most `max_append`, then `singles` tokens one at a time; q has q_tokens rows.
CacheSetup make_setup(const k3k::KvCacheConfig& cfg, std::int64_t bulk, std::int64_t max_append,
                      std::int64_t singles, std::int64_t q_tokens, int n_q_heads, double qk_stddev,
                      std::uint64_t seed) {
  CacheSetup s{k3k::KvCache(cfg), ref::RefKvCache(cfg), {}};
  k3k::WorkerPool pool(2);
  const std::int64_t row = static_cast<std::int64_t>(cfg.n_kv_heads) * cfg.head_dim;
  std::uint64_t chunk_seed = seed * 1000;
  while (bulk > 0) {
    const std::int64_t n = std::min(bulk, max_append);
    const auto k = random_floats(static_cast<std::size_t>(n * row), ++chunk_seed, qk_stddev);
    const auto v = random_floats(static_cast<std::size_t>(n * row), ++chunk_seed);
    k3k::kv_append(k3k::KernelPath::kRvv, s.cache, k, v, n, pool);
    s.mirror.append(k, v, n);
    bulk -= n;
  }
  for (std::int64_t t = 0; t < singles; ++t) {
    const auto k = random_floats(static_cast<std::size_t>(row), ++chunk_seed, qk_stddev);
    const auto v = random_floats(static_cast<std::size_t>(row), ++chunk_seed);
    k3k::kv_append_one(k3k::KernelPath::kRvv, s.cache, k, v, pool);
    s.mirror.append(k, v, 1);
  }
  s.q =
      random_floats(static_cast<std::size_t>(q_tokens * n_q_heads * cfg.head_dim), seed, qk_stddev);
  return s;
}

// RVV output vs reference (RVV bound) and vs the generic output (|rvv - gen| <= both bounds).
void check_outputs(const std::string& what, const std::vector<float>& rvv,
                   const std::vector<float>& gen, const ref::AttentionReference& expect_rvv,
                   const std::vector<double>& bound_gen) {
  const auto r = ref::compare_to_reference(rvv, expect_rvv.out, expect_rvv.bound);
  EXPECT_TRUE(r.pass) << what << " vs reference: "
                      << ref::describe(r, rvv, expect_rvv.out, expect_rvv.bound);
  std::vector<double> gen_d(gen.begin(), gen.end());
  std::vector<double> both(bound_gen.size());
  for (std::size_t i = 0; i < both.size(); ++i) both[i] = expect_rvv.bound[i] + bound_gen[i];
  const auto rg = ref::compare_to_reference(rvv, gen_d, both);
  EXPECT_TRUE(rg.pass) << what << " vs generic: " << ref::describe(rg, rvv, gen_d, both);
  const auto gr = ref::compare_to_reference(gen, expect_rvv.out, bound_gen);
  std::printf(
      "[ stats    ] %s: rvv err/bound %.3g (max abs %.3g), generic err/bound %.3g, "
      "|rvv-generic|/(sum of bounds) %.3g\n",
      what.c_str(), r.worst_ratio, r.max_abs_err, gr.worst_ratio, rg.worst_ratio);
}

// ---- prefill ------------------------------------------------------------------------------------

struct PrefillCase {
  const char* name;
  int n_q_heads;
  int n_kv_heads;
  int head_dim;
  k3k::RopeConfig rope;
  KvDtype dtype;
  bool ring;
  std::int64_t capacity;
  std::int64_t past;  // tokens appended before the S new ones
  std::int64_t S;
  k3k::AttentionTiling tiling;
  double qk_stddev = 1.5;
};

CacheSetup prefill_setup(const PrefillCase& c, std::uint64_t seed) {
  const k3k::KvCacheConfig cfg{c.n_kv_heads, c.head_dim, c.capacity, c.dtype, c.ring, c.rope};
  const std::int64_t max_append = c.ring ? c.capacity : c.past + c.S;
  return make_setup(cfg, c.past + c.S, max_append, 0, c.S, c.n_q_heads, c.qk_stddev, seed);
}

std::vector<float> run_prefill(bool rvv, const CacheSetup& s, const PrefillCase& c, int workers,
                               const k3k::AttentionTiling& tiling) {
  std::vector<float> out(s.q.size());
  k3k::WorkerPool pool(workers);
  if (rvv) {
    k3k::attention_prefill(k3k::KernelPath::kRvv, s.cache, s.q, c.S, c.n_q_heads, out, pool, tiling);
  } else {
    k3k::attention_prefill(k3k::KernelPath::kGeneric, s.cache, s.q, c.S, c.n_q_heads, out, pool, tiling);
  }
  return out;
}

class RvvAttentionPrefill : public ::testing::TestWithParam<PrefillCase> {};

TEST_P(RvvAttentionPrefill, WithinBoundVsReferenceAndGenericDeterministic) {
  const PrefillCase& c = GetParam();
  const CacheSetup s = prefill_setup(c, 1);
  const auto out = run_prefill(true, s, c, 2, c.tiling);
  const auto gen = run_prefill(false, s, c, 2, c.tiling);
  const auto expect = ref::attention_prefill(
      s.mirror, s.q, c.S, c.n_q_heads, ref::rvv_prefill_error_model(c.head_dim, c.tiling, vlenb()));
  const auto bound_gen = ref::attention_prefill_bound(
      s.mirror, s.q, c.S, c.n_q_heads, ref::generic_prefill_error_model(c.head_dim, c.tiling));
  check_outputs(std::string("prefill ") + c.name, out, gen, expect, bound_gen);
  for (int workers : {1, 3}) {
    EXPECT_TRUE(bitwise_equal(out, run_prefill(true, s, c, workers, c.tiling)))
        << "workers " << workers;
  }
  // q_tile does not change any row's reduction order.
  EXPECT_TRUE(bitwise_equal(out, run_prefill(true, s, c, 2, {5, c.tiling.kv_block})));
}

// clang-format off
INSTANTIATE_TEST_SUITE_P(
    RvvAttentionPrefillShapes, RvvAttentionPrefill,
    ::testing::Values(
        //          name                                nq nkv  hd  rope          dtype         ring  cap  past  S    {q_tile, kv_block} [qk_stddev]
        PrefillCase{"d128_gqa1_f32_S1",                  2, 2, 128, kD128,        KvDtype::f32, false, 4,    0,   1,  {16, 64}},
        PrefillCase{"d128_gqa2_f32_S3_past5",            4, 2, 128, kD128,        KvDtype::f32, false, 16,   5,   3,  {16, 64}},
        PrefillCase{"d128_gqa4_f16_S17_past40",          4, 1, 128, kD128,        KvDtype::f16, false, 64,  40,  17,  {16, 64}},
        PrefillCase{"d128_gqa2_f32_S130_blk37",          2, 1, 128, kD128,        KvDtype::f32, false, 130,  0, 130,  {7, 37}},
        PrefillCase{"d256_rot64_gqa2_f16_S17_past30",    4, 2, 256, kD256Partial, KvDtype::f16, false, 64,  30,  17,  {16, 64}},
        PrefillCase{"d256_rot64_gqa1_f32_S3_blk1",       2, 2, 256, kD256Partial, KvDtype::f32, false, 8,    2,   3,  {4, 1}},
        PrefillCase{"ring_d128_gqa2_f32_wrap",           2, 1, 128, kD128,        KvDtype::f32, true,  48,  70,  20,  {16, 32}},
        PrefillCase{"ring_d256_rot64_gqa4_f16_S_eq_cap", 4, 1, 256, kD256Partial, KvDtype::f16, true,  24,  50,  24,  {16, 16}},
        PrefillCase{"d128_gqa2_f32_peaked",              2, 1, 128, kD128,        KvDtype::f32, false, 40,  10,  30,  {16, 64}, 4.0},
        PrefillCase{"d72_rot40_gqa2_f16_S9_past11",      2, 1,  72, {40, 1e4},    KvDtype::f16, false, 20,  11,   9,  {4, 8}},
        PrefillCase{"qwen3_0p6b_S64",                   16, 8, 128, k3k::kQwen3Rope, KvDtype::f32, false, 64, 0, 64, {16, 64}}),
    [](const auto& info) { return std::string(info.param.name); });
// clang-format on

TEST(RvvAttentionPrefillMutation, PerturbedElementFails) {
  const PrefillCase c{"mut", 4, 2, 128, kD128, KvDtype::f32, false, 40, 10, 9, {16, 64}};
  const CacheSetup s = prefill_setup(c, 9);
  const auto out = run_prefill(true, s, c, 2, c.tiling);
  const auto expect = ref::attention_prefill(s.mirror, s.q, c.S, c.n_q_heads,
                                             ref::rvv_prefill_error_model(128, c.tiling, vlenb()));
  ASSERT_TRUE(ref::compare_to_reference(out, expect.out, expect.bound).pass);
  for (std::size_t i : {std::size_t{0}, out.size() / 2 + 3, out.size() - 1}) {
    std::vector<float> bad = out;
    bad[i] = static_cast<float>(expect.out[i] + 2.0 * expect.bound[i]);
    const auto r = ref::compare_to_reference(bad, expect.out, expect.bound);
    EXPECT_FALSE(r.pass) << i;
    EXPECT_EQ(r.first_failure, static_cast<std::int64_t>(i));
  }
  // A kernel that dropped the causal mask would be caught too.
  const auto non_causal = ref::attention_prefill(
      s.mirror, s.q, c.S, c.n_q_heads, ref::rvv_prefill_error_model(128, c.tiling, vlenb()), 0.0,
      {.causal = false});
  EXPECT_FALSE(ref::compare_to_reference(out, non_causal.out, non_causal.bound).pass);
}

// ---- decode -------------------------------------------------------------------------------------

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

CacheSetup decode_setup(const DecodeCase& c, std::uint64_t seed) {
  const k3k::KvCacheConfig cfg{c.n_kv_heads, c.head_dim, c.capacity, c.dtype, c.ring, c.rope};
  const std::int64_t bulk = c.context - 1;
  return make_setup(cfg, bulk, c.ring ? c.capacity : std::max<std::int64_t>(bulk, 1), 1, 1,
                    c.n_q_heads, c.qk_stddev, seed);
}

std::vector<float> run_decode(bool rvv, const CacheSetup& s, const DecodeCase& c, int workers) {
  std::vector<float> out(s.q.size());
  k3k::WorkerPool pool(workers);
  if (rvv) {
    k3k::attention_decode(k3k::KernelPath::kRvv, s.cache, s.q, c.n_q_heads, out, pool, {c.chunk});
  } else {
    k3k::attention_decode(k3k::KernelPath::kGeneric, s.cache, s.q, c.n_q_heads, out, pool, {c.chunk});
  }
  return out;
}

class RvvAttentionDecode : public ::testing::TestWithParam<DecodeCase> {};

TEST_P(RvvAttentionDecode, WithinBoundVsReferenceAndGenericDeterministic) {
  const DecodeCase& c = GetParam();
  const CacheSetup s = decode_setup(c, 2);
  const auto out = run_decode(true, s, c, 2);
  const auto gen = run_decode(false, s, c, 2);
  const auto expect = ref::attention_decode(
      s.mirror, s.q, c.n_q_heads, ref::rvv_decode_error_model(c.head_dim, {c.chunk}, vlenb()));
  const auto bound_gen = ref::attention_decode_bound(
      s.mirror, s.q, c.n_q_heads, ref::generic_decode_error_model(c.head_dim, {c.chunk}));
  check_outputs(std::string("decode ") + c.name, out, gen, expect, bound_gen);
  for (int workers : {1, 3}) {
    EXPECT_TRUE(bitwise_equal(out, run_decode(true, s, c, workers))) << "workers " << workers;
  }
}

// clang-format off
INSTANTIATE_TEST_SUITE_P(
    RvvAttentionDecodeShapes, RvvAttentionDecode,
    ::testing::Values(
        //         name                                   nq nkv  hd  rope              dtype         ring  cap  ctx  chunk [qk_stddev]
        DecodeCase{"d128_gqa2_f32_ctx1",                   4, 2, 128, kD128,            KvDtype::f32, false, 4,    1, 256},
        DecodeCase{"d128_gqa1_f16_ctx37_chunk16",          2, 2, 128, kD128,            KvDtype::f16, false, 40,  37,  16},
        DecodeCase{"d128_gqa3_f32_ctx130_chunk33",         6, 2, 128, kD128,            KvDtype::f32, false, 130, 130, 33},
        DecodeCase{"d128_gqa4_f16_ctx300",                 4, 1, 128, kD128,            KvDtype::f16, false, 300, 300, 256},
        DecodeCase{"d256_rot64_gqa2_f32_ctx17_chunk5",     4, 2, 256, kD256Partial,     KvDtype::f32, false, 20,  17,   5},
        DecodeCase{"d256_rot64_gqa4_f16_ctx70",            4, 1, 256, kD256Partial,     KvDtype::f16, false, 70,  70,  64},
        DecodeCase{"ring_d128_gqa2_f32_ctx150_cap64",      2, 1, 128, kD128,            KvDtype::f32, true,  64, 150,  24},
        DecodeCase{"ring_d256_rot64_gqa4_f16_ctx100_cap40",4, 1, 256, kD256Partial,     KvDtype::f16, true,  40, 100,  16},
        DecodeCase{"d128_gqa2_f32_peaked",                 2, 1, 128, kD128,            KvDtype::f32, false, 90,  90,  32, 4.0},
        DecodeCase{"d72_rot40_gqa3_f32_ctx45_chunk7",      3, 1,  72, {40, 1e4},        KvDtype::f32, false, 45,  45,   7},
        DecodeCase{"qwen3_0p6b_f16_ctx512",               16, 8, 128, k3k::kQwen3Rope,  KvDtype::f16, false, 512, 512, 256}),
    [](const auto& info) { return std::string(info.param.name); });
// clang-format on

// Decode loop: append one token (RVV kv_append_one), decode it, check; a ring that wraps.
TEST(RvvAttentionDecodeLoop, EveryStepWithinBound) {
  for (auto dtype : {KvDtype::f32, KvDtype::f16}) {
    const int nq = 4, nkv = 2, hd = 128;
    const k3k::KvCacheConfig cfg{nkv, hd, 12, dtype, true, kD128};
    k3k::KvCache cache(cfg);
    ref::RefKvCache mirror(cfg);
    k3k::WorkerPool pool(3);
    const auto k0 = random_floats(10 * nkv * hd, 31, 1.5);
    const auto v0 = random_floats(10 * nkv * hd, 32);
    k3k::kv_append(k3k::KernelPath::kRvv, cache, k0, v0, 10, pool);
    mirror.append(k0, v0, 10);
    const k3k::DecodeTiling tiling{5};
    for (int step = 0; step < 6; ++step) {
      const auto k = random_floats(nkv * hd, 100 + step, 1.5);
      const auto v = random_floats(nkv * hd, 200 + step);
      const auto q = random_floats(nq * hd, 300 + step, 1.5);
      k3k::kv_append_one(k3k::KernelPath::kRvv, cache, k, v, pool);
      mirror.append(k, v, 1);
      std::vector<float> out(q.size());
      k3k::attention_decode(k3k::KernelPath::kRvv, cache, q, nq, out, pool, tiling);
      const auto expect =
          ref::attention_decode(mirror, q, nq, ref::rvv_decode_error_model(hd, tiling, vlenb()));
      const auto r = ref::compare_to_reference(out, expect.out, expect.bound);
      ASSERT_TRUE(r.pass) << to_string(dtype) << " step " << step << ": "
                          << ref::describe(r, out, expect.out, expect.bound);
    }
  }
}

TEST(RvvAttentionDecodeMutation, PerturbedElementAndWrongGqaFail) {
  const DecodeCase c{"mut", 4, 2, 128, kD128, KvDtype::f32, false, 100, 100, 32};
  const CacheSetup s = decode_setup(c, 6);
  const auto out = run_decode(true, s, c, 2);
  const auto model = ref::rvv_decode_error_model(128, {c.chunk}, vlenb());
  const auto expect = ref::attention_decode(s.mirror, s.q, c.n_q_heads, model);
  ASSERT_TRUE(ref::compare_to_reference(out, expect.out, expect.bound).pass);
  std::vector<float> bad = out;
  bad[77] = static_cast<float>(expect.out[77] - 2.0 * expect.bound[77]);
  const auto r = ref::compare_to_reference(bad, expect.out, expect.bound);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.failures, 1);
  const auto wrong =
      ref::attention_decode(s.mirror, s.q, c.n_q_heads, model, 0.0, {.interleaved_gqa = true});
  EXPECT_FALSE(ref::compare_to_reference(out, wrong.out, wrong.bound).pass);
}

// ---- error model and arguments ------------------------------------------------------------------

TEST(RvvAttentionModel, DotDepthFollowsTheReductionStructure) {
  // ceil(n / vlenb) e32m4 lane steps + 2 folds + vlenb / 4 m1 lanes in the vfredusum tree.
  EXPECT_EQ(ref::rvv_dot_depth(128, 32), 4 + 2 + 8);    // VLEN 256
  EXPECT_EQ(ref::rvv_dot_depth(128, 128), 1 + 2 + 32);  // VLEN 1024
  EXPECT_EQ(ref::rvv_dot_depth(256, 16), 16 + 2 + 4);   // VLEN 128
  EXPECT_EQ(ref::rvv_prefill_error_model(128, {16, 48}, 64).block, 48);
  EXPECT_EQ(ref::rvv_decode_error_model(256, {100}, 64).dot_depth, 4 + 2 + 16);
  EXPECT_THROW(ref::rvv_dot_depth(128, 24), std::invalid_argument);
  std::printf("[ stats    ] vlenb %d: rvv dot depth (hd 128) %lld vs generic %lld\n", vlenb(),
              static_cast<long long>(ref::rvv_dot_depth(128, vlenb())),
              static_cast<long long>(ref::generic_prefill_error_model(128, {}).dot_depth));
}

TEST(RvvAttentionArgs, SameErrorsAsGeneric) {
  k3k::WorkerPool pool(1);
  k3k::KvCache empty({8, 128, 16, KvDtype::f16, false, k3k::kQwen3Rope});
  std::vector<float> q16(16 * 128), out16(q16.size()), q12(12 * 128);
  auto same = [](auto&& rvv_call, auto&& gen_call) {
    const std::string r = thrown_message(rvv_call), g = thrown_message(gen_call);
    EXPECT_EQ(r, g);
    EXPECT_EQ(r.find("<no"), std::string::npos) << r;
  };
  same([&] { k3k::attention_decode(k3k::KernelPath::kRvv, empty, q16, 16, out16, pool); },
       [&] { k3k::attention_decode(k3k::KernelPath::kGeneric, empty, q16, 16, out16, pool); });
  k3k::KvCache cache({8, 128, 16, KvDtype::f32, false, k3k::kQwen3Rope});
  std::vector<float> kv(4 * 8 * 128);
  k3k::kv_append(k3k::KernelPath::kRvv, cache, kv, kv, 4, pool);
  std::vector<float> q4(4 * 16 * 128), o4(q4.size()), q5(5 * 16 * 128), o5(q5.size());
  same([&] { k3k::attention_decode(k3k::KernelPath::kRvv, cache, q12, 12, q12, pool); },
       [&] { k3k::attention_decode(k3k::KernelPath::kGeneric, cache, q12, 12, q12, pool); });
  same([&] { k3k::attention_decode(k3k::KernelPath::kRvv, cache, q16, 16, out16, pool, {0}); },
       [&] { k3k::attention_decode(k3k::KernelPath::kGeneric, cache, q16, 16, out16, pool, {0}); });
  same([&] { k3k::attention_decode(k3k::KernelPath::kRvv, cache, q16, 16, out16, pool, {}, NAN); },
       [&] { k3k::attention_decode(k3k::KernelPath::kGeneric, cache, q16, 16, out16, pool, {}, NAN); });
  same([&] { k3k::attention_prefill(k3k::KernelPath::kRvv, cache, q5, 5, 16, o5, pool); },
       [&] { k3k::attention_prefill(k3k::KernelPath::kGeneric, cache, q5, 5, 16, o5, pool); });
  same([&] { k3k::attention_prefill(k3k::KernelPath::kRvv, cache, q4, 4, 16, o5, pool); },
       [&] { k3k::attention_prefill(k3k::KernelPath::kGeneric, cache, q4, 4, 16, o5, pool); });
  same(
      [&] {
        k3k::attention_prefill(k3k::KernelPath::kRvv, cache, q4, 4, 16, o4, pool, {0, 64});
      },
      [&] {
        k3k::attention_prefill(k3k::KernelPath::kGeneric, cache, q4, 4, 16, o4, pool, {0, 64});
      });
  same(
      [&] {
        k3k::attention_prefill(k3k::KernelPath::kRvv, cache, q4, 4, 16, o4, pool, {16, -1});
      },
      [&] {
        k3k::attention_prefill(k3k::KernelPath::kGeneric, cache, q4, 4, 16, o4, pool, {16, -1});
      });
  same([&] { k3k::attention_prefill(k3k::KernelPath::kRvv, cache, q4, 4, 16, o4, pool, {}, -1.0f); },
       [&] { k3k::attention_prefill(k3k::KernelPath::kGeneric, cache, q4, 4, 16, o4, pool, {}, -1.0f); });
}

}  // namespace
