// Prefill attention through TCM (k3k/tcm_attention.h) against the DRAM driver of the same layer:
// bitwise identical outputs over fp32/fp16 caches, ring wrap, head_dim 128 and 72 (partial
// rotary), GQA, q_tile / kv_block / staged-block counts and worker counts 1-4; every visible K/V
// row staged once per task; the float64 reference bound on one shape (so the two drivers cannot
// agree on a wrong answer); the gate's decisions and reasons; a held block; and a randomized stress
// run (more runs under ThreadSanitizer in the tsan tree).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "k3k/attention.h"
#include "k3k/cpu.h"
#include "k3k/kv_cache.h"
#include "k3k/reference/attention.h"
#include "k3k/seeded_random.h"
#include "k3k/tcm_attention.h"
#include "support/deadline.h"
#include "support/test_data.h"

namespace k3k {
namespace {

using testing_support::run_with_deadline;

// The layer whose attention runs here: RVV on riscv64 (the generic C++ is the same on the host and
// would only slow qemu down), generic elsewhere.
KernelPath layer() {
#if defined(K3_HAVE_RVV)
  if (cpu_features().vector) return KernelPath::kRvv;
#endif
  return KernelPath::kGeneric;
}

struct AttnSetup {
  KvCacheConfig cfg;
  KvCache cache;
  reference::RefKvCache mirror;
  std::vector<float> q;
  std::int64_t tokens;
  int q_heads;
};

// A cache holding `past + tokens` positions (appended in pieces of 50, so a ring cache wraps) and
// `tokens` query rows.
AttnSetup make_setup(int kv_heads, int group, int head_dim, int rotary, KvDtype dtype, bool ring,
                     std::int64_t capacity, std::int64_t past, std::int64_t tokens,
                     std::uint64_t seed) {
  KvCacheConfig cfg{kv_heads, head_dim, capacity, dtype, ring, {rotary, 1.0e6}};
  AttnSetup s{cfg, KvCache(cfg), reference::RefKvCache(cfg), {}, tokens, kv_heads * group};
  WorkerPool pool(2);
  const std::int64_t row = static_cast<std::int64_t>(kv_heads) * head_dim;
  for (std::int64_t left = past + tokens; left > 0;) {
    const std::int64_t n = std::min<std::int64_t>({left, 50, capacity});
    const auto k = k3test::random_floats(static_cast<std::size_t>(n * row), ++seed, 0.5);
    const auto v = k3test::random_floats(static_cast<std::size_t>(n * row), ++seed);
    kv_append(KernelPath::kGeneric, s.cache, k, v, n, pool);
    s.mirror.append(k, v, n);
    left -= n;
  }
  s.q = k3test::random_floats(static_cast<std::size_t>(tokens * s.q_heads * head_dim), ++seed, 0.5);
  return s;
}

struct TcmRun {
  std::vector<float> out;
  TcmAttentionGate gate;
  TcmAttentionStats stats;
};

TcmRun run_tcm(const AttnSetup& s, WorkerPool& pool, TcmWorkspace* ws,
               const AttentionTiling& tiling, const TcmAttentionParams& params) {
  TcmRun r;
  r.out.assign(s.q.size(), -1.0f);
  r.gate = decide_tcm_attention_prefill(s.cache, s.tokens, tiling, ws, params);
  attention_prefill(layer(), s.cache, s.q, s.tokens, s.q_heads, r.out, pool, tiling, 0.0f,
                    {ws, &params, &r.gate, &r.stats});
  return r;
}

std::vector<float> run_dram(const AttnSetup& s, WorkerPool& pool, const AttentionTiling& tiling) {
  std::vector<float> out(s.q.size(), -2.0f);
  attention_prefill(layer(), s.cache, s.q, s.tokens, s.q_heads, out, pool, tiling);
  return out;
}

// K/V bytes a call stages when every task stages every visible row it reads once (fp32 in TCM).
std::int64_t expected_staged_bytes(const AttnSetup& s, int q_tile) {
  const std::int64_t first = s.cache.length() - s.tokens, lo = s.cache.first_visible();
  const std::int64_t rows_per_tile = std::min<std::int64_t>(q_tile, s.tokens);
  std::int64_t positions = 0;
  for (std::int64_t t0 = 0; t0 < s.tokens; t0 += rows_per_tile) {
    positions += first + std::min(t0 + rows_per_tile, s.tokens) - lo;
  }
  return positions * s.q_heads * 2 * s.cfg.head_dim * static_cast<std::int64_t>(sizeof(float));
}

TEST(TcmAttention, BitwiseIdenticalToDramDriver) {
  run_with_deadline(900, "TcmAttention equality matrix", [] {
    auto tcm = tcm::make_emulated({});
    WorkerPool pool(4);
    TcmWorkspace ws(*tcm, pool);
    struct Case {
      int kv_heads, group, head_dim, rotary;
      KvDtype dtype;
      bool ring;
      std::int64_t capacity, past, tokens;
    };
    const Case cases[] = {
        {2, 2, 128, 128, KvDtype::f32, false, 256, 0, 70},  // prefill from an empty cache
        {1, 3, 72, 40, KvDtype::f16, false, 256, 100, 17},  // past context, fp16, partial rotary
        {2, 1, 128, 128, KvDtype::f32, true, 96, 150, 40},  // ring cache that has wrapped
        {1, 2, 128, 128, KvDtype::f16, true, 80, 45, 1},    // one query row, wrapped ring
    };
    std::uint64_t seed = 1;
    for (const Case& c : cases) {
      const AttnSetup s = make_setup(c.kv_heads, c.group, c.head_dim, c.rotary, c.dtype, c.ring,
                                     c.capacity, c.past, c.tokens, seed++);
      for (const AttentionTiling tiling :
           {AttentionTiling{16, 64}, AttentionTiling{5, 16}, AttentionTiling{64, 24}}) {
        const std::vector<float> dram = run_dram(s, pool, tiling);
        for (int kv_blocks : {0, 1, 3}) {
          for (int workers : {1, 3, 4}) {
            SCOPED_TRACE(testing::Message()
                         << "hd=" << c.head_dim << " tokens=" << c.tokens << " past=" << c.past
                         << " ring=" << c.ring << " q_tile=" << tiling.q_tile
                         << " kv_block=" << tiling.kv_block << " kv_blocks=" << kv_blocks
                         << " workers=" << workers);
            WorkerPool small(workers);
            TcmWorkspace small_ws(*tcm, small);
            TcmAttentionParams p;
            p.use = TcmUse::kOn;
            p.kv_blocks = kv_blocks;
            const TcmRun r = run_tcm(s, small, &small_ws, tiling, p);
            ASSERT_TRUE(r.gate.use_tcm) << r.gate.reason;
            EXPECT_TRUE(k3test::bitwise_equal(r.out, dram));
            EXPECT_EQ(r.stats.workers_without_block, 0);
            EXPECT_EQ(r.stats.workers_with_block, workers);
            EXPECT_EQ(r.stats.bytes_staged, expected_staged_bytes(s, tiling.q_tile));
          }
        }
      }
    }
    for (int id = 0; id < 8; ++id) EXPECT_FALSE(tcm->status(id).acquired) << "block " << id;
  });
}

// Both drivers share the task code; the float64 reference anchors them independently.
TEST(TcmAttention, WithinTheReferenceBound) {
  auto tcm = tcm::make_emulated({});
  WorkerPool pool(3);
  TcmWorkspace ws(*tcm, pool);
  const AttnSetup s = make_setup(2, 2, 128, 128, KvDtype::f16, false, 256, 60, 33, 77);
  const AttentionTiling tiling{8, 32};
  const TcmRun r = run_tcm(s, pool, &ws, tiling, {.use = TcmUse::kOn, .kv_blocks = 2});
  ASSERT_TRUE(r.gate.use_tcm) << r.gate.reason;
  const reference::AttentionErrorModel model =
      layer() == KernelPath::kRvv ? reference::rvv_prefill_error_model(128, tiling)
                                  : reference::generic_prefill_error_model(128, tiling);
  const reference::AttentionReference ref =
      reference::attention_prefill(s.mirror, s.q, s.tokens, s.q_heads, model);
  for (std::size_t i = 0; i < r.out.size(); ++i) {
    ASSERT_LE(std::abs(static_cast<double>(r.out[i]) - ref.out[i]), ref.bound[i])
        << "element " << i;
  }
}

TEST(TcmAttention, GateDecisionsAndReasons) {
  auto tcm = tcm::make_emulated({});
  WorkerPool pool(4);
  TcmWorkspace ws(*tcm, pool);
  const AttnSetup s = make_setup(1, 2, 128, 128, KvDtype::f32, false, 2048, 1500, 16, 5);
  const AttentionTiling tiling{16, 64};
  auto decide = [&](const TcmAttentionParams& p, TcmWorkspace* w = nullptr,
                    const AttentionTiling& t = {16, 64}) {
    return decide_tcm_attention_prefill(s.cache, s.tokens, t, w, p);
  };
  TcmAttentionParams p;  // auto: emulated blocks are ordinary memory
  auto d = decide(p, &ws);
  EXPECT_FALSE(d.use_tcm);
  EXPECT_NE(d.reason.find("emulated"), std::string::npos) << d.reason;
  p.auto_allows_emulated = true;  // the remaining auto checks, as on real TCM
  d = decide(p, &ws);
  ASSERT_TRUE(d.use_tcm) << d.reason;
  // As many 64-position blocks as fit 384 KiB next to the Q tile and state, and never more than
  // the context needs.
  EXPECT_LE(tcm_attention_bytes(128, 16, 64, d.kv_blocks), 384 * 1024);
  EXPECT_GT(tcm_attention_bytes(128, 16, 64, d.kv_blocks + 1), 384 * 1024);
  p.ctx_min = 4096;
  d = decide(p, &ws);
  EXPECT_FALSE(d.use_tcm);
  EXPECT_NE(d.reason.find("ctx_min"), std::string::npos) << d.reason;
  p.use = TcmUse::kOn;  // on skips the context threshold
  EXPECT_TRUE(decide(p, &ws).use_tcm);
  p = {.use = TcmUse::kOn, .kv_blocks = 200};
  d = decide(p, &ws);
  EXPECT_FALSE(d.use_tcm);
  EXPECT_NE(d.reason.find("kv_blocks 200"), std::string::npos) << d.reason;
  p = {.use = TcmUse::kOn};
  d = decide(p, &ws, {16, 4096});  // one K/V block alone is 2 x 4096 x 128 floats
  EXPECT_FALSE(d.use_tcm);
  EXPECT_NE(d.reason.find("exceeds a TCM block"), std::string::npos) << d.reason;
  const AttnSetup tiny = make_setup(1, 1, 128, 128, KvDtype::f32, false, 64, 0, 10, 6);
  d = decide_tcm_attention_prefill(tiny.cache, tiny.tokens, tiling, &ws, p);
  ASSERT_TRUE(d.use_tcm) << d.reason;
  EXPECT_EQ(d.kv_blocks, 1);  // the whole context is one block
  EXPECT_EQ(decide({.use = TcmUse::kOff}, &ws).reason, "tcm=off");
  EXPECT_NE(decide({.use = TcmUse::kOn}, nullptr).reason.find("no TCM"), std::string::npos);
  EXPECT_NE(decide({.use = TcmUse::kOn, .table_disables = true}, &ws).reason.find("tuning table"),
            std::string::npos);
  // One block is enough: every worker stands alone.
  auto one_block = tcm::make_emulated({.block_bytes = 384 * 1024, .blocks = 1});
  TcmWorkspace ws1(*one_block, pool);
  EXPECT_TRUE(decide({.use = TcmUse::kOn}, &ws1).use_tcm);
}

TEST(TcmAttention, BlockHeldElsewhereSendsThatWorkerToDram) {
  run_with_deadline(120, "held block", [] {
    auto tcm = tcm::make_emulated({});
    WorkerPool pool(3);
    TcmWorkspace ws(*tcm, pool);
    ASSERT_EQ(ws.block_of(1), 1);
    std::atomic<bool> holding{false}, done{false};
    std::thread holder([&] {  // another process, for the emulation: holds worker 1's block
      tcm::BlockLease lease(*tcm, 1, std::chrono::microseconds(0));
      holding.store(lease.held());
      while (!done.load()) std::this_thread::yield();
    });
    while (!holding.load()) std::this_thread::yield();
    for (KvDtype dtype : {KvDtype::f32, KvDtype::f16}) {
      const AttnSetup s = make_setup(2, 2, 128, 128, dtype, false, 256, 30, 48, 9);
      const AttentionTiling tiling{8, 32};
      TcmAttentionParams p{.use = TcmUse::kOn, .acquire_timeout_us = 200};
      const TcmRun r = run_tcm(s, pool, &ws, tiling, p);
      ASSERT_TRUE(r.gate.use_tcm) << r.gate.reason;
      EXPECT_EQ(r.stats.workers_without_block, 1);
      EXPECT_EQ(r.stats.workers_with_block, 2);
      EXPECT_TRUE(k3test::bitwise_equal(r.out, run_dram(s, pool, tiling)));
    }
    done.store(true);
    holder.join();
    for (int id = 0; id < 8; ++id) EXPECT_FALSE(tcm->status(id).acquired) << "block " << id;
  });
}

// Randomized shapes, tilings and pool sizes. K3_TCM_STRESS_RUNS / 10 runs (the tsan tree sets
// thousands), 30 by default.
TEST(TcmAttention, StressRandomShapesAndWorkerCounts) {
  const char* env = std::getenv("K3_TCM_STRESS_RUNS");
  const int runs = env != nullptr ? std::max(1, std::atoi(env) / 10) : 30;
  run_with_deadline(1200, "TcmAttention stress", [runs] {
    auto tcm = tcm::make_emulated({});
    SeededRandom rng(2027);
    for (int run = 0; run < runs; ++run) {
      const int workers = 1 + static_cast<int>(rng.next() % 5);
      const bool f16 = (rng.next() & 1) != 0;
      const bool ring = (rng.next() & 1) != 0;
      const std::int64_t tokens = 1 + static_cast<std::int64_t>(rng.next() % 40);
      const std::int64_t past = static_cast<std::int64_t>(rng.next() % 90);
      const std::int64_t capacity = ring ? 48 + static_cast<std::int64_t>(rng.next() % 40) : 256;
      const AttentionTiling tiling{1 + static_cast<int>(rng.next() % 20),
                                   1 + static_cast<int>(rng.next() % 70)};
      TcmAttentionParams p{.use = TcmUse::kOn, .kv_blocks = static_cast<int>(rng.next() % 4)};
      SCOPED_TRACE(testing::Message()
                   << "run " << run << " workers=" << workers << " f16=" << f16 << " ring=" << ring
                   << " tokens=" << tokens << " past=" << past << " q_tile=" << tiling.q_tile
                   << " kv_block=" << tiling.kv_block);
      const AttnSetup s = make_setup(1, 2, 64, 64, f16 ? KvDtype::f16 : KvDtype::f32, ring,
                                     std::max(capacity, tokens), past, tokens,
                                     static_cast<std::uint64_t>(run) + 300);
      WorkerPool pool(workers);
      TcmWorkspace ws(*tcm, pool);
      const TcmRun r = run_tcm(s, pool, &ws, tiling, p);
      ASSERT_TRUE(r.gate.use_tcm) << r.gate.reason;
      ASSERT_TRUE(k3test::bitwise_equal(r.out, run_dram(s, pool, tiling)));
    }
    for (int id = 0; id < 8; ++id) EXPECT_FALSE(tcm->status(id).acquired) << "block " << id;
  });
}

}  // namespace
}  // namespace k3k
