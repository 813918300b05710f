// The decode TCM pipeline against the DRAM kernel of the same layer: bitwise identical outputs over
// shapes, worker counts 1-8, slab sizes, pairing on/off and epilogues; every weight byte copied
// exactly once; the gate's decisions and reasons; a held block; and a randomized stress run
// (thousands of runs under ThreadSanitizer in the tsan tree) bounded by a watchdog.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "k3k/attention.h"
#include "k3k/embedding.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/small_ops.h"
#if defined(K3_HAVE_IME2)
#include "k3k/ime2.h"
#endif
#include "k3k/seeded_random.h"
#include "k3k/tcm_linear.h"
#include "support/deadline.h"
#include "tcm/tcm_test_support.h"

namespace k3k {
namespace {

using tcm_test::decode_row;
using tcm_test::random_weights;
using testing_support::run_with_deadline;

std::size_t sz(std::int64_t v) {
  return static_cast<std::size_t>(v);
}

// The layers whose tile body runs here. riscv64 builds check the RVV (and IME2) bodies only: the
// generic one is the same C++ already checked natively, and scalar code under qemu would dominate
// the suite's time.
std::vector<KernelPath> layers() {
#if defined(K3_HAVE_IME2)
  if (!ime2::unusable_because()) return {KernelPath::kRvv, KernelPath::kIme2};
#endif
#if defined(K3_HAVE_RVV)
  if (cpu_features().vector) return {KernelPath::kRvv};
#endif
  return {KernelPath::kGeneric};
}

// The weights a layer's engine would load: the IME2 operand order for ime2, kRowTile32 otherwise.
W4B64Packed weights_for(KernelPath path, std::int64_t n, std::int64_t k, std::uint64_t seed) {
  W4B64Packed w = random_weights(n, k, seed);
#if defined(K3_HAVE_IME2)
  if (path == KernelPath::kIme2) return ime2::pack_w4b64(w);
#endif
  (void)path;
  return w;
}

struct Epilogue {
  std::vector<float> bias, residual;
  LinearEpilogue ep;
};

Epilogue make_epilogue(std::int64_t n, OutputLayout layout, std::uint64_t seed) {
  Epilogue e;
  e.ep.layout = layout;
  if (layout == OutputLayout::kC4) {
    SeededRandom rng(seed);
    e.bias.resize(sz(n));
    e.residual.resize(sz(output_elements(layout, 1, n)));
    for (auto& b : e.bias) b = static_cast<float>(rng.normal());
    for (auto& r : e.residual) r = static_cast<float>(rng.normal());
    e.ep.bias = e.bias.data();
    e.ep.residual = e.residual.data();
    e.ep.clamp_min = -2.0f;
    e.ep.clamp_max = 3.0f;
  }
  return e;
}

// Runs the DRAM kernel and the pipeline and requires identical bytes; returns the pipeline result.
tcm_test::TcmDecodeResult expect_same_as_dram(KernelPath path, const W4B64Packed& w,
                                    const PackedActivations& act, const LinearEpilogue& ep,
                                    WorkerPool& pool, TcmWorkspace& ws,
                                    const TcmDecodeParams& params) {
  const std::size_t count = sz(output_elements(ep.layout, 1, w.n));
  std::vector<float> dram(count, -1.0f), tcm(count, -7.0f);
  k3k::linear_decode_w4b64(path, act, w, ep, dram.data(), pool, {});
  const tcm_test::TcmDecodeResult r =
      tcm_test::decode_with_tcm(path, act, w, ep, tcm.data(), pool, &ws, params);
  EXPECT_EQ(std::memcmp(dram.data(), tcm.data(), count * sizeof(float)), 0)
      << "TCM and DRAM outputs differ (n=" << w.n << " k=" << w.k << " tcm=" << r.gate.use_tcm
      << ": " << r.gate.reason << ")";
  return r;
}

TEST(TcmPipeline, BitwiseIdenticalToDramOverShapesWorkersAndSlabs) {
  run_with_deadline(900, "TcmPipeline equality matrix", [] {
    auto tcm = tcm::make_emulated({});
    WorkerPool pool(8);
    TcmWorkspace ws(*tcm, pool);
    struct Shape {
      std::int64_t n, k;
    };
    // Odd N (partial last tile), one tile, Qwen3-1.7B q_proj/down_proj sizes scaled in N, and a K
    // whose tiles are big enough that only one fits a slab buffer.
    const Shape shapes[] = {{32, 64}, {70, 320}, {96, 2048}, {200, 640}, {1024, 2048}, {160, 6144}};
    std::uint64_t seed = 1;
    for (KernelPath path : layers()) {
      for (const Shape& s : shapes) {
        const W4B64Packed w = weights_for(path, s.n, s.k, seed++);
        const PackedActivations act = decode_row(s.k, seed++);
        const std::int64_t tile_bytes = s.k / 64 * (1024 + 256);
        for (OutputLayout layout : {OutputLayout::kRowMajor, OutputLayout::kC4}) {
          const Epilogue e = make_epilogue(s.n, layout, seed++);
          for (int workers = 1; workers <= 8; ++workers) {
            for (int slab_rows : {0, 32, 64, 96}) {
              // Emulated IME2 is slow under qemu: a subset that keeps odd/even/single worker
              // counts.
              const bool ime2_subset = workers == 1 || workers == 2 || workers == 3 || workers == 8;
              if (path == KernelPath::kIme2 && (!ime2_subset || slab_rows == 64)) continue;
              for (bool pairing : {true, false}) {
                SCOPED_TRACE(testing::Message()
                             << to_string(path) << " n=" << s.n << " k=" << s.k << " workers="
                             << workers << " slab_rows=" << slab_rows << " pairing=" << pairing);
                TcmDecodeParams p;
                p.use = TcmUse::kOn;
                p.compute_workers = workers;
                p.slab_rows = slab_rows;
                p.pairing = pairing;
                const tcm_test::TcmDecodeResult r = expect_same_as_dram(path, w, act, e.ep, pool, ws, p);
                const bool fits =
                    2 * (slab_rows == 0 ? 1 : slab_rows / 32) * tile_bytes <= 384 * 1024;
                if (workers < 2 || !fits) {
                  EXPECT_FALSE(r.gate.use_tcm) << r.gate.reason;
                  continue;
                }
                ASSERT_TRUE(r.gate.use_tcm) << r.gate.reason;
                // Every weight byte went through TCM exactly once and every slab was computed once.
                EXPECT_EQ(r.stats.bytes_copied, w.bytes());
                EXPECT_EQ(r.stats.slabs,
                          (w.row_tiles() + r.gate.slab_rows / 32 - 1) / (r.gate.slab_rows / 32));
                EXPECT_EQ(r.stats.workers_without_block, 0);
              }
            }
          }
        }
      }
    }
  });
}

TEST(TcmPipeline, GateDecisionsAndReasons) {
  auto tcm = tcm::make_emulated({});
  WorkerPool pool(8);
  TcmWorkspace ws(*tcm, pool);
  const W4B64Packed big = random_weights(1024, 2048, 3);    // 1.25 MiB packed
  const W4B64Packed large = random_weights(2048, 2048, 4);  // 2.5 MiB packed
  const W4B64Packed short_k = random_weights(4096, 1024, 5);
  auto decide = [&](KernelPath path, const W4B64Packed& w, TcmDecodeParams p,
                    TcmWorkspace* workspace) {
    return decide_tcm_decode(path, w, workspace, p, pool.size());
  };
  TcmDecodeParams p;  // defaults: auto, k_min 2048, b_min 2 MiB, 6 workers
  // auto treats emulated blocks as what they are, ordinary memory: no pipeline.
  auto d = decide(KernelPath::kGeneric, large, p, &ws);
  EXPECT_FALSE(d.use_tcm);
  EXPECT_NE(d.reason.find("emulated"), std::string::npos) << d.reason;
  p.auto_allows_emulated = true;  // the remaining auto checks, as on real TCM
  d = decide(KernelPath::kGeneric, large, p, &ws);
  EXPECT_TRUE(d.use_tcm) << d.reason;
  EXPECT_EQ(d.workers, 6);
  EXPECT_EQ(d.slab_rows % 32, 0);
  // Two slabs fit in a block: per 32-row tile and 64-block, 1024 code bytes and 32 fp16 pairs.
  EXPECT_LE(2 * (d.slab_rows / 32) * (2048 / 64 * (1024 + 32 * 4)), 384 * 1024);

  d = decide(KernelPath::kGeneric, short_k, p, &ws);
  EXPECT_FALSE(d.use_tcm);
  EXPECT_NE(d.reason.find("k_min"), std::string::npos) << d.reason;
  d = decide(KernelPath::kGeneric, big, p, &ws);
  EXPECT_FALSE(d.use_tcm);
  EXPECT_NE(d.reason.find("b_min"), std::string::npos) << d.reason;
  p.b_min = 1 << 20;  // the thresholds are parameters: lowering b_min admits the same shape
  p.auto_allows_emulated = true;
  EXPECT_TRUE(decide(KernelPath::kGeneric, big, p, &ws).use_tcm);
  p = {};
  p.use = TcmUse::kOn;  // on ignores the size thresholds
  EXPECT_TRUE(decide(KernelPath::kGeneric, short_k, p, &ws).use_tcm);
  p = {};
  p.use = TcmUse::kOff;
  EXPECT_EQ(decide(KernelPath::kGeneric, large, p, &ws).reason, "tcm=off");
  p = {};
  p.auto_allows_emulated = true;
  p.table_disables = true;
  EXPECT_NE(decide(KernelPath::kGeneric, large, p, &ws).reason.find("tuning table"),
            std::string::npos);
  p = {};
  p.auto_allows_emulated = true;
  EXPECT_TRUE(decide(KernelPath::kIme2, large, p, &ws).use_tcm);  // every layer has a tile body
  EXPECT_NE(decide(KernelPath::kGeneric, large, p, nullptr).reason.find("no TCM"),
            std::string::npos);
  p.compute_workers = 1;
  d = decide(KernelPath::kGeneric, large, p, &ws);
  EXPECT_FALSE(d.use_tcm);
  EXPECT_NE(d.reason.find("need 2"), std::string::npos) << d.reason;
  p = {};
  p.auto_allows_emulated = true;
  p.slab_rows = 256;  // 8 tiles x 40 KiB, twice: more than a 384 KiB block
  d = decide(KernelPath::kGeneric, large, p, &ws);
  EXPECT_FALSE(d.use_tcm);
  EXPECT_NE(d.reason.find("slab_rows 256"), std::string::npos) << d.reason;
  p = {};
  p.use = TcmUse::kOn;
  const W4B64Packed huge_k = random_weights(64, 16384, 6);  // one tile is 320 KiB
  d = decide(KernelPath::kGeneric, huge_k, p, &ws);
  EXPECT_FALSE(d.use_tcm);
  EXPECT_NE(d.reason.find("exceed a TCM block"), std::string::npos) << d.reason;

  // A board with a single block: the pipeline needs two.
  auto one_block = tcm::make_emulated({.block_bytes = 384 * 1024, .blocks = 1});
  TcmWorkspace ws1(*one_block, pool);
  d = decide(KernelPath::kGeneric, large, {.use = TcmUse::kOn}, &ws1);
  EXPECT_FALSE(d.use_tcm);
  EXPECT_NE(d.reason.find("only 1 usable"), std::string::npos) << d.reason;
}

TEST(TcmPipeline, BlockHeldElsewhereFallsBackToDramForThatWorker) {
  run_with_deadline(120, "held block", [] {
    auto tcm = tcm::make_emulated({});
    WorkerPool pool(4);
    TcmWorkspace ws(*tcm, pool);
    ASSERT_EQ(ws.block_of(1), 1);
    // Another thread (standing in for another process) holds worker 1's block for the whole call.
    std::atomic<bool> holding{false}, done{false};
    std::thread holder([&] {
      tcm::BlockLease lease(*tcm, 1, std::chrono::microseconds(0));
      holding.store(lease.held());
      while (!done.load()) std::this_thread::yield();
    });
    while (!holding.load()) std::this_thread::yield();
    EXPECT_EQ(ws.usable_blocks(), 3);
    const W4B64Packed w = random_weights(512, 2048, 9);
    const PackedActivations act = decode_row(2048, 10);
    TcmDecodeParams p;
    p.use = TcmUse::kOn;
    p.compute_workers = 4;
    p.acquire_timeout_us = 200;
    const tcm_test::TcmDecodeResult r = expect_same_as_dram(KernelPath::kGeneric, w, act, {}, pool, ws, p);
    ASSERT_TRUE(r.gate.use_tcm) << r.gate.reason;
    EXPECT_EQ(r.stats.workers_without_block, 1);
    EXPECT_LT(r.stats.bytes_copied, w.bytes());  // worker 1's slabs were read from DRAM
    done.store(true);
    holder.join();
    // Every lease taken by the pipeline was released: all blocks are free again.
    for (int id = 0; id < 8; ++id) EXPECT_FALSE(tcm->status(id).acquired) << "block " << id;
  });
}

// Randomized runs: shapes, pool sizes 1-8, compute workers, slabs, pairing. K3_TCM_STRESS_RUNS sets
// the count (the tsan tree runs thousands; the default keeps the ordinary suites fast).
TEST(TcmPipeline, StressRandomShapesAndWorkerCounts) {
  const char* env = std::getenv("K3_TCM_STRESS_RUNS");
  const int runs = env != nullptr ? std::atoi(env) : 200;
  run_with_deadline(1200, "TcmPipeline stress", [runs] {
    auto tcm = tcm::make_emulated({});
    std::vector<std::unique_ptr<WorkerPool>> pools;
    std::vector<std::unique_ptr<TcmWorkspace>> spaces;
    for (int size = 1; size <= 8; ++size) {
      pools.push_back(std::make_unique<WorkerPool>(size));
      spaces.push_back(std::make_unique<TcmWorkspace>(*tcm, *pools.back()));
    }
    SeededRandom rng(2026);
    const std::vector<KernelPath> paths = layers();
    for (int run = 0; run < runs; ++run) {
      const std::int64_t n = 1 + static_cast<std::int64_t>(rng.next() % 300);
      const std::int64_t k = 64 * (1 + static_cast<std::int64_t>(rng.next() % 16));
      const int size = 1 + static_cast<int>(rng.next() % 8);
      TcmDecodeParams p;
      p.use = TcmUse::kOn;
      p.compute_workers = 1 + static_cast<int>(rng.next() % 8);
      p.slab_rows = 32 * static_cast<int>(rng.next() % 4);
      p.pairing = (rng.next() & 1) != 0;
      const KernelPath path = paths[rng.next() % paths.size()];
      SCOPED_TRACE(testing::Message()
                   << "run " << run << " n=" << n << " k=" << k << " pool=" << size
                   << " workers=" << p.compute_workers << " slab=" << p.slab_rows);
      const W4B64Packed w = random_weights(n, k, static_cast<std::uint64_t>(run) + 100);
      const PackedActivations act = decode_row(k, static_cast<std::uint64_t>(run) + 7);
      expect_same_as_dram(path, w, act, {}, *pools[sz(size - 1)], *spaces[sz(size - 1)], p);
      if (testing::Test::HasFailure()) return;
    }
    // All leases released after thousands of calls.
    for (int id = 0; id < 8; ++id) EXPECT_FALSE(tcm->status(id).acquired) << "block " << id;
  });
}

}  // namespace
}  // namespace k3k
