// Software prefetch of the attention K/V streams (AttentionTiling / DecodeTiling prefetch_bytes) on
// every layer (support/layer_sweep.h): a hint, so every distance gives bitwise the outputs of
// prefetch off, for prefill (DRAM and TCM drivers) and decode, fp32 and fp16 caches, a wrapped
// ring, and distances past the end of the cache storage (prefetch.r never faults); a distance out
// of range is refused. In builds without Zicbop the distance is ignored; the Zicbop trees (IME2)
// run these under qemu with the instructions in the binary (scripts/check-zicbop-insns.sh checks
// the attention functions hold them).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "k3k/attention.h"
#include "k3k/kv_cache.h"
#include "k3k/tcm_attention.h"
#include "k3k/worker_pool.h"
#include "support/layer_sweep.h"
#include "support/test_data.h"

namespace k3k {
namespace {

struct Filled {
  KvCache cache;
  std::vector<float> q_prefill, q_decode;
};

Filled filled_cache(KernelPath path, KvDtype dtype, bool ring, std::int64_t capacity,
                    std::int64_t tokens, std::uint64_t seed) {
  const KvCacheConfig cfg{2, 128, capacity, dtype, ring, kQwen3Rope};
  Filled f{KvCache(cfg), {}, {}};
  WorkerPool pool(2);
  for (std::int64_t left = tokens; left > 0;) {
    const std::int64_t n = std::min<std::int64_t>(left, capacity / 2);
    const auto k = k3test::random_floats(static_cast<std::size_t>(n * 256), ++seed, 0.5);
    const auto v = k3test::random_floats(static_cast<std::size_t>(n * 256), ++seed);
    kv_append(path, f.cache, k, v, n, pool);
    left -= n;
  }
  f.q_prefill = k3test::random_floats(static_cast<std::size_t>(24 * 4 * 128), ++seed, 0.5);
  f.q_decode = k3test::random_floats(static_cast<std::size_t>(4 * 128), ++seed, 0.5);
  return f;
}

class AttentionPrefetch : public k3test::OnLayer {};

TEST_P(AttentionPrefetch, DistanceNeverChangesResults) {
  WorkerPool pool(2);
  auto tcm = tcm::make_emulated({});
  TcmWorkspace ws(*tcm, pool);
  for (const KvDtype dtype : {KvDtype::f32, KvDtype::f16}) {
    for (const bool ring : {false, true}) {
      const Filled f = filled_cache(layer(), dtype, ring, ring ? 160 : 512, ring ? 300 : 200, 11);
      std::vector<float> prefill_off(f.q_prefill.size()), decode_off(f.q_decode.size());
      attention_prefill(layer(), f.cache, f.q_prefill, 24, 4, prefill_off, pool, {8, 32});
      attention_decode(layer(), f.cache, f.q_decode, 4, decode_off, pool, {64});
      for (const int distance : {64, 2048, 1 << 20}) {
        SCOPED_TRACE(testing::Message() << "f16=" << (dtype == KvDtype::f16) << " ring=" << ring
                                        << " distance=" << distance);
        std::vector<float> out(f.q_prefill.size(), -1.0f);
        attention_prefill(layer(), f.cache, f.q_prefill, 24, 4, out, pool, {8, 32, distance});
        EXPECT_TRUE(k3test::bitwise_equal(out, prefill_off)) << "prefill, DRAM";
        std::fill(out.begin(), out.end(), -1.0f);
        const TcmAttentionParams params{.use = TcmUse::kOn, .kv_blocks = 2};
        TcmAttentionStats stats;
        attention_prefill(layer(), f.cache, f.q_prefill, 24, 4, out, pool, {8, 32, distance}, 0.0f,
                          {&ws, &params, nullptr, &stats});
        EXPECT_EQ(stats.workers_with_block, 2);
        EXPECT_TRUE(k3test::bitwise_equal(out, prefill_off)) << "prefill, TCM";
        std::vector<float> dec(f.q_decode.size(), -1.0f);
        attention_decode(layer(), f.cache, f.q_decode, 4, dec, pool, {64, distance});
        EXPECT_TRUE(k3test::bitwise_equal(dec, decode_off)) << "decode";
      }
    }
  }
}

TEST_P(AttentionPrefetch, DistanceOutsideTheRangeIsRefused) {
  WorkerPool pool(1);
  const Filled f = filled_cache(layer(), KvDtype::f32, false, 64, 24, 3);
  std::vector<float> out(f.q_decode.size()), pout(f.q_prefill.size());
  EXPECT_NE(k3test::thrown_message([&] {
              attention_decode(layer(), f.cache, f.q_decode, 4, out, pool, {64, -1});
            }).find("prefetch_bytes (-1)"),
            std::string::npos);
  EXPECT_NE(
      k3test::thrown_message([&] {
        attention_prefill(layer(), f.cache, f.q_prefill, 24, 4, pout, pool, {8, 32, (1 << 20) + 1});
      }).find("prefetch_bytes (1048577)"),
      std::string::npos);
}

K3_SWEEP_LAYERS(AttentionPrefetch);

}  // namespace
}  // namespace k3k
