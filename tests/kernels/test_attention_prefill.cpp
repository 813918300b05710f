// Attention prefill on every layer (support/layer_sweep.h) vs the float64 reference within the
// layer's derived bound over head dims (128, 256 with rotary 64, 72 with rotary 40), partial RoPE,
// GQA ratios, dtypes, lengths (S 1 to 130, contexts not multiples of the block or VLMAX), past
// context, ring wrap-around and the real model shapes; a layer other than generic within the sum of
// both layers' bounds of the generic layer; bitwise identical across worker counts and q_tile;
// every kv_block within its own bound; mutations; argument errors.
#include <gtest/gtest.h>

#include <algorithm>
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
namespace ref = k3k::reference;

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
  double qk_stddev = 1.5;  // q and k magnitudes set how peaked the softmax is
  float scale = 0.0f;
};

// Cache (appended on `path`) and reference mirror holding the same `past` + S tokens.
CacheSetup make_setup(KernelPath path, const PrefillCase& c, std::uint64_t seed) {
  const k3k::KvCacheConfig cfg{c.n_kv_heads, c.head_dim, c.capacity, c.dtype, c.ring, c.rope};
  return k3test::fill_cache(path, cfg, {c.past, c.S}, c.ring ? c.capacity : c.past + c.S, 0, c.S,
                            c.n_q_heads, c.qk_stddev, seed);
}

std::vector<float> run_kernel(KernelPath path, const CacheSetup& s, const PrefillCase& c,
                              int workers, const k3k::AttentionTiling& tiling) {
  std::vector<float> out(s.q.size());
  k3k::WorkerPool pool(workers);
  k3k::attention_prefill(path, s.cache, s.q, c.S, c.n_q_heads, out, pool, tiling, c.scale);
  return out;
}

constexpr k3k::RopeConfig kD128{128, 1.0e6};
constexpr k3k::RopeConfig kD256Partial{64, 1.0e7};

// clang-format off
const PrefillCase kShapes[] = {
    //          name                                     nq nkv  hd  rope             dtype         ring  cap   past  S    {q_tile, kv_block} [qk_stddev, scale]
    PrefillCase{"d128_gqa1_f32_S1",                       4, 4, 128, kD128,           KvDtype::f32, false, 8,    0,    1,   {16, 64}},
    PrefillCase{"d128_gqa1_nq2_f32_S1_cap4",              2, 2, 128, kD128,           KvDtype::f32, false, 4,    0,    1,   {16, 64}},
    PrefillCase{"d128_gqa2_f32_S3_past5",                 8, 4, 128, kD128,           KvDtype::f32, false, 16,   5,    3,   {16, 64}},
    PrefillCase{"d128_gqa2_nq4_f32_S3_past5",             4, 2, 128, kD128,           KvDtype::f32, false, 16,   5,    3,   {16, 64}},
    PrefillCase{"d128_gqa4_f16_S17_past40",               8, 2, 128, kD128,           KvDtype::f16, false, 64,   40,   17,  {16, 64}},
    PrefillCase{"d128_gqa4_nq4_f16_S17_past40",           4, 1, 128, kD128,           KvDtype::f16, false, 64,   40,   17,  {16, 64}},
    PrefillCase{"d128_gqa2_f32_S130_past70_blk32",        4, 2, 128, kD128,           KvDtype::f32, false, 200,  70,   130, {7, 32}},
    PrefillCase{"d128_gqa2_f32_S130_blk37",               2, 1, 128, kD128,           KvDtype::f32, false, 130,  0,    130, {7, 37}},
    PrefillCase{"d256_rot64_gqa4_f32_S64_past100",        8, 2, 256, kD256Partial,    KvDtype::f32, false, 164,  100,  64,  {16, 64}},
    PrefillCase{"d256_rot64_gqa2_f16_S130",               4, 2, 256, kD256Partial,    KvDtype::f16, false, 130,  0,    130, {16, 64}},
    PrefillCase{"d256_rot64_gqa2_f16_S17_past30",         4, 2, 256, kD256Partial,    KvDtype::f16, false, 64,   30,   17,  {16, 64}},
    PrefillCase{"d256_rot64_gqa1_f32_S17_blk1",           2, 2, 256, kD256Partial,    KvDtype::f32, false, 40,   3,    17,  {4, 1}},
    PrefillCase{"d256_rot64_gqa1_f32_S3_blk1",            2, 2, 256, kD256Partial,    KvDtype::f32, false, 8,    2,    3,   {4, 1}},
    PrefillCase{"d72_rot40_gqa2_f16_S9_past11",           2, 1,  72, {40, 1e4},       KvDtype::f16, false, 20,   11,   9,   {4, 8}},
    PrefillCase{"ring_d128_gqa2_f32_wrap",                4, 2, 128, kD128,           KvDtype::f32, true,  96,   150,  40,  {16, 64}},
    PrefillCase{"ring_d128_gqa2_nq2_f32_wrap_cap48",      2, 1, 128, kD128,           KvDtype::f32, true,  48,   70,   20,  {16, 32}},
    PrefillCase{"ring_d256_rot64_gqa4_f16_wrap_S_eq_cap", 8, 2, 256, kD256Partial,    KvDtype::f16, true,  64,   100,  64,  {16, 48}},
    PrefillCase{"ring_d256_rot64_gqa4_f16_S_eq_cap24",    4, 1, 256, kD256Partial,    KvDtype::f16, true,  24,   50,   24,  {16, 16}},
    PrefillCase{"ring_d128_gqa1_f16_long_pos",            2, 2, 128, kD128,           KvDtype::f16, true,  64,   4000, 17,  {8, 16}},
    PrefillCase{"d128_gqa2_f32_peaked_scores",            4, 2, 128, kD128,           KvDtype::f32, false, 80,   20,   40,  {16, 64}, 4.0},
    PrefillCase{"d128_gqa2_nq2_f32_peaked",               2, 1, 128, kD128,           KvDtype::f32, false, 40,   10,   30,  {16, 64}, 4.0},
    PrefillCase{"d128_gqa2_f32_custom_scale",             4, 2, 128, kD128,           KvDtype::f32, false, 80,   10,   33,  {16, 64}, 1.0, 0.3f},
    PrefillCase{"qwen3_0p6b_S64",                        16, 8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 64,  0,    64,  {16, 64}},
    PrefillCase{"qwen3_1p7b_S128",                       16, 8, 128, k3k::kQwen3Rope,  KvDtype::f32, false, 128, 0,    128, {16, 64}},
    PrefillCase{"qwen3_1p7b_f16_S64_past64",             16, 8, 128, k3k::kQwen3Rope,  KvDtype::f16, false, 128, 64,   64,  {16, 64}},
    PrefillCase{"qwen35_S64_past64",                      8, 2, 256, k3k::kQwen35Rope, KvDtype::f32, false, 128, 64,   64,  {16, 64}}};
// clang-format on

class AttentionPrefill : public k3test::OnLayerWith<PrefillCase> {};

TEST_P(AttentionPrefill, WithinBoundAndDeterministic) {
  const PrefillCase& c = test_case();
  const CacheSetup s = make_setup(layer(), c, 1);
  const auto out = run_kernel(layer(), s, c, 2, c.tiling);
  const auto expect =
      ref::attention_prefill(s.mirror, s.q, c.S, c.n_q_heads,
                             k3test::prefill_error_model(layer(), c.head_dim, c.tiling), c.scale);
  const std::string what = std::string(k3k::to_string(layer())) + " prefill " + c.name;
  k3test::expect_within(what, out, expect.out, expect.bound);
  if (!is_generic()) {
    const auto bound_gen = ref::attention_prefill_bound(
        s.mirror, s.q, c.S, c.n_q_heads,
        k3test::prefill_error_model(KernelPath::kGeneric, c.head_dim, c.tiling), c.scale);
    k3test::expect_near_generic(what, out, run_kernel(KernelPath::kGeneric, s, c, 2, c.tiling),
                                k3test::sum_of(expect.bound, bound_gen));
  }
  // Bitwise identical for other worker counts, and for other q_tile (each row's reduction order
  // depends only on kv_block).
  for (int workers : {1, 3, 5}) {
    const auto other = run_kernel(layer(), s, c, workers, c.tiling);
    ASSERT_EQ(std::memcmp(out.data(), other.data(), out.size() * sizeof(float)), 0)
        << "workers " << workers;
  }
  for (int q_tile : {1, 5, 64}) {
    const auto other = run_kernel(layer(), s, c, 2, {q_tile, c.tiling.kv_block});
    ASSERT_EQ(std::memcmp(out.data(), other.data(), out.size() * sizeof(float)), 0)
        << "q_tile " << q_tile;
  }
}

K3_SWEEP_LAYERS_AND_CASES(AttentionPrefill, kShapes);

// kv_block changes the rescaling order, so outputs may differ in the last bits; each is checked
// against the reference with its own error model.
class AttentionPrefillTiling : public k3test::OnLayer {};

TEST_P(AttentionPrefillTiling, EveryKvBlockWithinItsBound) {
  const PrefillCase c{"blk", 4, 2, 128, kD128, KvDtype::f16, false, 120, 50, 70, {16, 64}};
  const CacheSetup s = make_setup(layer(), c, 3);
  for (int kv_block : {1, 16, 33, 64, 256}) {
    const k3k::AttentionTiling tiling{16, kv_block};
    const auto out = run_kernel(layer(), s, c, 2, tiling);
    const auto expect = ref::attention_prefill(s.mirror, s.q, c.S, c.n_q_heads,
                                               k3test::prefill_error_model(layer(), 128, tiling));
    const auto r = ref::compare_to_reference(out, expect.out, expect.bound);
    EXPECT_TRUE(r.pass) << "kv_block " << kv_block << ": "
                        << ref::describe(r, out, expect.out, expect.bound);
  }
}

K3_SWEEP_LAYERS(AttentionPrefillTiling);

// The bound is tight enough to see a wrong kernel.
class AttentionPrefillMutation : public k3test::OnLayer {
 protected:
  const PrefillCase c{"mut", 8, 2, 128, kD128, KvDtype::f32, false, 64, 10, 30, {16, 64}};
  const CacheSetup s = make_setup(layer(), c, 9);
  const std::vector<float> out = run_kernel(layer(), s, c, 2, c.tiling);
  const ref::AttentionErrorModel model = k3test::prefill_error_model(layer(), 128, c.tiling);
};

TEST_P(AttentionPrefillMutation, PerturbedElementFails) {
  const auto expect = ref::attention_prefill(s.mirror, s.q, c.S, c.n_q_heads, model);
  ASSERT_TRUE(ref::compare_to_reference(out, expect.out, expect.bound).pass);
  for (std::size_t i : {std::size_t{0}, out.size() / 2, out.size() / 2 + 3, out.size() - 1}) {
    std::vector<float> bad = out;
    bad[i] = static_cast<float>(expect.out[i] + 2.0 * expect.bound[i]);
    const auto r = ref::compare_to_reference(bad, expect.out, expect.bound);
    EXPECT_FALSE(r.pass) << i;
    EXPECT_EQ(r.first_failure, static_cast<std::int64_t>(i));
  }
}

TEST_P(AttentionPrefillMutation, DroppedCausalMaskFails) {
  const auto non_causal =
      ref::attention_prefill(s.mirror, s.q, c.S, c.n_q_heads, model, 0.0, {.causal = false});
  EXPECT_FALSE(ref::compare_to_reference(out, non_causal.out, non_causal.bound).pass);
}

TEST_P(AttentionPrefillMutation, WrongGqaMappingFails) {
  const auto wrong = ref::attention_prefill(s.mirror, s.q, c.S, c.n_q_heads, model, 0.0,
                                            {.interleaved_gqa = true});
  EXPECT_FALSE(ref::compare_to_reference(out, wrong.out, wrong.bound).pass);
}

TEST_P(AttentionPrefillMutation, Fp32ReferenceRejectsFp16Cache) {
  // A reference that believes the cache is fp32 (no rounded V, tighter K bound) must reject the
  // fp16 kernel: the fp16 effects are far above the fp32 bound.
  PrefillCase f16{"f16", 4, 2, 128, kD128, KvDtype::f16, false, 64, 10, 30, {16, 64}};
  const CacheSetup s16 = make_setup(layer(), f16, 4);
  const auto out16 = run_kernel(layer(), s16, f16, 2, f16.tiling);
  f16.dtype = KvDtype::f32;
  const CacheSetup s32 = make_setup(layer(), f16, 4);  // same inputs, fp32 mirror
  const auto expect = ref::attention_prefill(s32.mirror, s16.q, f16.S, f16.n_q_heads,
                                             k3test::prefill_error_model(layer(), 128, f16.tiling));
  EXPECT_FALSE(ref::compare_to_reference(out16, expect.out, expect.bound).pass);
}

K3_SWEEP_LAYERS(AttentionPrefillMutation);

class AttentionPrefillArgs : public k3test::OnLayer {};

TEST_P(AttentionPrefillArgs, BadArgumentsNameTheFieldAsTheGenericLayer) {
  k3k::WorkerPool pool(1);
  k3k::KvCache cache({8, 128, 16, KvDtype::f32, false, k3k::kQwen3Rope});
  std::vector<float> kv(4 * 8 * 128);
  k3k::kv_append(layer(), cache, kv, kv, 4, pool);
  std::vector<float> q12(4 * 12 * 128), q16(4 * 16 * 128), out16(q16.size());
  std::vector<float> q5(5 * 16 * 128), o5(q5.size());
  auto rejects = [&](const std::string& field, std::span<const float> q, std::int64_t tokens,
                     int n_q_heads, std::span<float> out, const k3k::AttentionTiling& tiling = {},
                     float scale = 0.0f) {
    k3test::expect_rejected(layer(), field, [&](KernelPath path) {
      k3k::attention_prefill(path, cache, q, tokens, n_q_heads, out, pool, tiling, scale);
    });
  };
  EXPECT_EQ(k3test::thrown_message(
                [&] { k3k::attention_prefill(layer(), cache, q12, 4, 12, q12, pool); }),
            "attention_prefill: n_q_heads (12) is not a multiple of n_kv_heads (8)");
  rejects("q.size()", q12, 4, 16, out16);
  rejects("out.size()", q16, 4, 16, q12);
  rejects("out.size()", q16, 4, 16, o5);
  rejects("tokens (5) exceeds cache.length() (4)", q5, 5, 16, o5);
  rejects("tiling.q_tile (0)", q16, 4, 16, out16, {0, 64});
  rejects("tiling.kv_block (-1)", q16, 4, 16, out16, {16, -1});
  rejects("scale (-1)", q16, 4, 16, out16, {}, -1.0f);
  rejects("n_q_heads (0)", q16, 4, 0, out16);
}

K3_SWEEP_LAYERS(AttentionPrefillArgs);

}  // namespace
