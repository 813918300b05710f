// The KV cache's key block (k3k/kv_cache.h: K stored [head_dim][key_block] per block of slots) is a
// storage choice only: on every layer (support/layer_sweep.h), decode and prefill give bitwise the
// same outputs whatever the key block - 1 (a key per block), 5 and 7 (blocks that straddle every
// chunk, kv_block and vector strip), 16, the default (this CPU's vlenb keys), and one larger than
// the capacity - for fp32 and fp16 caches, contiguous and wrapped rings, head dims whose 4 score
// chains end unevenly; each within the float64 reference's bound.
#include <gtest/gtest.h>

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
#include "support/layer_sweep.h"

namespace {

using k3k::KernelPath;
using k3k::KvDtype;
namespace ref = k3k::reference;

struct KeyBlockCase {
  const char* name;
  int n_q_heads, n_kv_heads, head_dim;
  k3k::RopeConfig rope;
  KvDtype dtype;
  bool ring;
  std::int64_t capacity, past, tokens;  // prefill: `tokens` queries after `past`; decode: 1
  int chunk;                            // decode chunk
  k3k::AttentionTiling tiling;          // prefill
};

// clang-format off
const KeyBlockCase kCases[] = {
    //           name                  nq nkv  hd  rope                 dtype         ring   cap  past  tokens chunk {q_tile, kv_block}
    KeyBlockCase{"d128_f32",            4, 2, 128, {128, 1e6},          KvDtype::f32, false, 300, 250, 50,    64,   {16, 64}},
    KeyBlockCase{"d128_f16_ring",       4, 2, 128, {128, 1e6},          KvDtype::f16, true,  100, 190, 60,    48,   {7, 32}},
    KeyBlockCase{"d70_rot40_f32_ring",  3, 1,  70, {40, 1e4},           KvDtype::f32, true,  90,  120, 40,    33,   {16, 24}},
    KeyBlockCase{"d256_f32",            4, 2, 256, k3k::kQwen35Rope,    KvDtype::f32, false, 140, 100, 40,    256,  {16, 64}}};
// clang-format on

k3test::CacheSetup setup(KernelPath path, const KeyBlockCase& c, int key_block, bool decode) {
  const k3k::KvCacheConfig cfg{c.n_kv_heads, c.head_dim, c.capacity, c.dtype,
                               c.ring,       c.rope,     key_block};
  const std::int64_t max_append = c.ring ? c.capacity : c.past + c.tokens;
  return k3test::fill_cache(path, cfg, {c.past, c.tokens}, max_append, 0, decode ? 1 : c.tokens,
                            c.n_q_heads, 1.5, 11);
}

class AttentionKeyBlocks : public k3test::OnLayerWith<KeyBlockCase> {
 protected:
  // Runs `op` on caches of every key block, each output within `bound_of`'s bound and bitwise equal
  // to the first one's.
  template <typename Run, typename Expect>
  void check(bool decode, Run run, Expect expect) {
    const KeyBlockCase& c = test_case();
    std::vector<float> first;
    for (int key_block : {0, 1, 5, 7, 16, 512}) {
      const k3test::CacheSetup s = setup(layer(), c, key_block, decode);
      const std::vector<float> out = run(s);
      const ref::AttentionReference want = expect(s);
      const auto r = ref::compare_to_reference(out, want.out, want.bound);
      const std::string what = std::string(decode ? "decode " : "prefill ") + c.name +
                               " key_block " + std::to_string(s.cache.key_block());
      EXPECT_TRUE(r.pass) << what << ": " << ref::describe(r, out, want.out, want.bound);
      if (first.empty()) {
        first = out;
      } else {
        ASSERT_EQ(std::memcmp(first.data(), out.data(), out.size() * sizeof(float)), 0) << what;
      }
    }
  }
};

TEST_P(AttentionKeyBlocks, DecodeOutputsDoNotDependOnTheKeyBlock) {
  const KeyBlockCase& c = test_case();
  const k3k::DecodeTiling tiling{c.chunk};
  check(
      true,
      [&](const k3test::CacheSetup& s) {
        std::vector<float> out(s.q.size());
        k3k::WorkerPool pool(2);
        k3k::attention_decode(layer(), s.cache, s.q, c.n_q_heads, out, pool, tiling);
        return out;
      },
      [&](const k3test::CacheSetup& s) {
        return ref::attention_decode(s.mirror, s.q, c.n_q_heads,
                                     k3test::decode_error_model(layer(), c.head_dim, tiling));
      });
}

TEST_P(AttentionKeyBlocks, PrefillOutputsDoNotDependOnTheKeyBlock) {
  const KeyBlockCase& c = test_case();
  check(
      false,
      [&](const k3test::CacheSetup& s) {
        std::vector<float> out(s.q.size());
        k3k::WorkerPool pool(2);
        k3k::attention_prefill(layer(), s.cache, s.q, c.tokens, c.n_q_heads, out, pool, c.tiling);
        return out;
      },
      [&](const k3test::CacheSetup& s) {
        return ref::attention_prefill(s.mirror, s.q, c.tokens, c.n_q_heads,
                                      k3test::prefill_error_model(layer(), c.head_dim, c.tiling));
      });
}

K3_SWEEP_LAYERS_AND_CASES(AttentionKeyBlocks, kCases);

}  // namespace
