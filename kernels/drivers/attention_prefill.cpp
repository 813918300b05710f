// Attention prefill: a task is (query head, tile of q_tile query rows), the last tiles (which see
// the most keys) handed out first; it walks the keys in blocks of kv_block positions aligned at
// cache.first_visible(), one online-softmax rescale per block per row, never materialising the
// score matrix. Each output row is produced by one task in an order fixed by (head_dim, kv_block)
// and the layer, so outputs are bitwise identical for every worker count and q_tile.
#include <algorithm>
#include <limits>
#include <optional>
#include <span>

#include "common/attention_checks.h"
#include "common/query_rope_table.h"
#include "drivers/attention_prefill_task.h"
#include "drivers/drivers.h"
#include "k3k/aligned_buffer.h"

namespace k3k::driver {

using k3k::detail::fail;

namespace detail {

void check_prefill_args(const KvCache& cache, std::span<const float> q, std::int64_t tokens,
                        int n_q_heads, std::span<float> out, const AttentionTiling& tiling,
                        float scale) {
  const char* op = "attention_prefill";
  validate(tiling, op);
  k3k::detail::check_attention_args(cache, q.size(), out.size(), tokens, n_q_heads, scale, op);
  if (tokens > cache.length()) {
    fail(op, ": tokens (", tokens, ") exceeds cache.length() (", cache.length(),
         "); append the new K/V to the cache first");
  }
  if (cache.ring() && tokens > cache.capacity()) {
    fail(op, ": tokens (", tokens, ") exceeds the ring cache capacity (", cache.capacity(), ")");
  }
}

PrefillCall prefill_call(const ukernel::AttentionPrefill& uk, const KvCache& cache,
                         std::span<const float> q, std::int64_t tokens, int n_q_heads,
                         std::span<float> out, const AttentionTiling& tiling, float scale,
                         const RopeTable& table) {
  const int hd = cache.head_dim();
  const int q_tile = static_cast<int>(std::clamp<std::int64_t>(tiling.q_tile, 1, tokens));
  return {&uk,
          &cache,
          q.data(),
          out.data(),
          tokens,
          n_q_heads,
          hd,
          n_q_heads / cache.n_kv_heads(),
          q_tile,
          tiling.kv_block,
          scale > 0.0f ? scale : default_attention_scale(hd),
          cache.length() - tokens,
          cache.first_visible(),
          (tokens + q_tile - 1) / q_tile,
          &table,
          tiling.prefetch_bytes};
}

}  // namespace detail

void attention_prefill(const ukernel::AttentionPrefill& uk, const KvCache& cache,
                       std::span<const float> q, std::int64_t tokens, int n_q_heads,
                       std::span<float> out, WorkerPool& pool, const AttentionTiling& tiling,
                       float scale) {
  detail::check_prefill_args(cache, q, tokens, n_q_heads, out, tiling, scale);
  if (tokens == 0) return;
  std::optional<RopeTable> own_table;
  const RopeTable& table =
      k3k::detail::query_rope_table(cache, cache.length() - tokens, tokens, &pool, own_table);
  const detail::PrefillCall call =
      detail::prefill_call(uk, cache, q, tokens, n_q_heads, out, tiling, scale, table);

  // Per-worker scratch in the calling thread's buffers (kept between calls), not zeroed: a task
  // writes every element before it reads it (zeroing it was a tenth of a 32-token call). fp16
  // caches are converted a block at a time (and an fp32 block that wraps around a ring cache has
  // its K transposed into the scratch).
  const bool f16 = cache.dtype() == KvDtype::f16;
  const detail::PrefillArenaLayout layout =
      detail::prefill_arena_layout(call.head_dim, call.q_tile, call.kv_block, call.kv_block, f16);
  thread_local AlignedBuffer<float> scratch_buffer;
  thread_local AlignedBuffer<const float*> rows_buffer;
  const std::span<float> scratch =
      reused_for_overwrite(scratch_buffer, static_cast<std::size_t>(layout.floats * pool.size()));
  const std::span<const float*> rows_scratch =
      reused_for_overwrite(rows_buffer, static_cast<std::size_t>(call.kv_block * pool.size()));

  pool.parallel_for(call.n_tiles * n_q_heads, [&](std::int64_t task, int worker) {
    const detail::PrefillArena arena = detail::prefill_arena(
        scratch.data() + worker * layout.floats, layout, call.kv_block, f16,
        rows_scratch.data() + static_cast<std::ptrdiff_t>(call.kv_block) * worker);
    detail::run_prefill_task(call, task, arena);
  });
}

}  // namespace k3k::driver
