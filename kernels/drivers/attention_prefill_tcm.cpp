// Prefill attention through TCM (k3k/tcm_attention.h): every worker runs on its own thread
// (run_each: the TCM hand-off is per thread, taken and released by the worker that uses the
// block), takes its block for the call, lays its working set out in it (Q tile, accumulators,
// softmax state, scores, the staged K/V) and pulls tasks from a shared counter. A worker without a
// block (none mapped, or not handed over in time) runs the same tasks from DRAM scratch, reading
// an fp32 cache in place, exactly as the DRAM driver does. Every output row is produced by one
// task with the DRAM driver's arithmetic and order, so the assignment of tasks to workers and the
// memory they run in never change a bit.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <vector>

#include "common/checks.h"
#include "common/query_rope_table.h"
#include "drivers/attention_prefill_task.h"
#include "drivers/drivers.h"

namespace k3k {

std::int64_t tcm_attention_bytes(int head_dim, int rows, int kv_block, int kv_blocks) {
  return driver::detail::prefill_arena_layout(head_dim, rows, kv_block, kv_blocks * kv_block, true)
             .floats *
         static_cast<std::int64_t>(sizeof(float));
}

}  // namespace k3k

namespace k3k::driver {

TcmAttentionStats attention_prefill_tcm(const ukernel::AttentionPrefill& uk,
                                        const TcmAttentionGate& gate, const KvCache& cache,
                                        std::span<const float> q, std::int64_t tokens,
                                        int n_q_heads, std::span<float> out, WorkerPool& pool,
                                        const AttentionTiling& tiling, float scale,
                                        TcmWorkspace& workspace, const TcmAttentionParams& params) {
  detail::check_prefill_args(cache, q, tokens, n_q_heads, out, tiling, scale);
  TcmAttentionStats stats;
  if (tokens == 0) return stats;
  std::optional<RopeTable> own_table;
  const RopeTable& table =
      k3k::detail::query_rope_table(cache, cache.length() - tokens, tokens, &pool, own_table);
  const detail::PrefillCall call =
      detail::prefill_call(uk, cache, q, tokens, n_q_heads, out, tiling, scale, table);
  const int hd = call.head_dim, kv_block = call.kv_block;
  const int stage_rows = std::max(1, gate.kv_blocks) * kv_block;
  const detail::PrefillArenaLayout tcm_layout =
      detail::prefill_arena_layout(hd, call.q_tile, kv_block, stage_rows, true);
  const std::int64_t block_bytes =
      static_cast<std::int64_t>(workspace.tcm().geometry().block_bytes);
  if (tcm_layout.floats * static_cast<std::int64_t>(sizeof(float)) > block_bytes) {
    k3k::detail::fail("attention_prefill (TCM): the gate's stage of ", gate.kv_blocks,
                      " blocks does not fit a TCM block for q_tile ", call.q_tile, ", kv_block ",
                      kv_block, " and head_dim ", hd);
  }
  // DRAM fallback arena of a worker without a block: the DRAM driver's layout.
  const bool f16 = cache.dtype() == KvDtype::f16;
  const detail::PrefillArenaLayout dram_layout =
      detail::prefill_arena_layout(hd, call.q_tile, kv_block, kv_block, f16);

  const int workers = pool.size();
  const std::int64_t tasks = call.n_tiles * n_q_heads;
  std::atomic<std::int64_t> next{0};
  struct alignas(64) WorkerStats {
    std::int64_t bytes = 0;
    bool held = false;
  };
  std::vector<WorkerStats> per_worker(static_cast<std::size_t>(workers));
  std::vector<const float*> pointers(static_cast<std::size_t>(kv_block * workers));

  pool.run_each(workers, [&](int worker) {
    const int block = workspace.block_of(worker);
    std::optional<tcm::BlockLease> lease;
    if (block >= 0) {
      lease.emplace(workspace.tcm(), block, std::chrono::microseconds(params.acquire_timeout_us));
    }
    const bool held = lease && lease->held();
    AlignedBuffer<float> dram;  // only for a worker that runs from DRAM
    if (!held) dram = AlignedBuffer<float>(static_cast<std::size_t>(dram_layout.floats));
    float* base = held ? reinterpret_cast<float*>(workspace.memory_of(worker)) : dram.data();
    const detail::PrefillArena arena = detail::prefill_arena(
        base, held ? tcm_layout : dram_layout, held ? stage_rows : kv_block, held || f16,
        pointers.data() + static_cast<std::ptrdiff_t>(kv_block) * worker);
    WorkerStats& my = per_worker[static_cast<std::size_t>(worker)];
    my.held = held;
    for (std::int64_t t = next.fetch_add(1); t < tasks; t = next.fetch_add(1)) {
      const std::int64_t bytes = detail::run_prefill_task(call, t, arena);
      if (held) my.bytes += bytes;
    }
  });
  for (const WorkerStats& w : per_worker) {
    stats.bytes_staged += w.bytes;
    (w.held ? stats.workers_with_block : stats.workers_without_block) += 1;
  }
  return stats;
}

}  // namespace k3k::driver
