// KV-cache appends: kv_append splits (kv head x 64-token chunk) over the pool after taking the
// RoPE table of the new positions (kept in the cache for attention over them); kv_append_one runs
// one task per kv head. Each stored row has one writer and no reduction, so the stored bits do not
// depend on the worker count.
//
// Every layer of a model appends the same positions under the same RoPE, so the appends share
// their tables: the last table built is kept with its key (rotary_dim, theta, positions) and handed
// to the next append that needs the same one. A table depends only on its key, so the stored bits
// are those of a table of its own (a decode step's 28 layers build one table instead of 28: the
// table's double cos and sin were three quarters of an append), and the table before the last is
// rebuilt in its own storage once no cache reads it. The row scratch is the calling thread's,
// kept between calls.
#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <vector>

#include "common/checks.h"
#include "common/op_checks.h"
#include "drivers/drivers.h"

namespace k3k::driver {

namespace {

constexpr std::int64_t kAppendTokensPerTask = 64;

// Writes tokens [t_begin, t_end) of kv head `head` (K down its key block's column, V as a row).
// `scratch` holds head_dim floats (the rotated K before it is scattered).
void write_rows(const ukernel::KvAppend& uk, KvCache& cache, const float* k, const float* v,
                const RopeTable& table, int head, std::int64_t t_begin, std::int64_t t_end,
                float* scratch) {
  const int hd = cache.head_dim();
  const int half = table.half();
  const std::int64_t row_stride = static_cast<std::int64_t>(cache.n_kv_heads()) * hd;
  const std::int64_t pos0 = cache.length();
  for (std::int64_t t = t_begin; t < t_end; ++t) {
    const std::int64_t pos = pos0 + t;
    const std::int64_t slot = cache.slot(pos);
    const std::size_t k_off = cache.k_offset(head, slot), v_off = cache.v_offset(head, slot);
    const float* ks = k + t * row_stride + static_cast<std::int64_t>(head) * hd;
    const float* vs = v + t * row_stride + static_cast<std::int64_t>(head) * hd;
    if (cache.dtype() == KvDtype::f32) {
      uk.row_f32(ks, vs, cache.k_f32() + k_off, cache.key_block(), cache.v_f32() + v_off, hd, half,
                 table.cos_at(pos), table.sin_at(pos), scratch);
    } else {
      uk.row_f16(ks, vs, cache.k_f16() + k_off, cache.key_block(), cache.v_f16() + v_off, hd, half,
                 table.cos_at(pos), table.sin_at(pos), scratch);
    }
  }
}

// head_dim floats per worker of `pool`, the calling thread's buffer (grown, never shrunk).
float* row_scratch(const KvCache& cache, WorkerPool& pool) {
  thread_local AlignedBuffer<float> scratch;
  return reused_for_overwrite(scratch, static_cast<std::size_t>(
                                           detail::scratch_stride(cache.head_dim()) * pool.size()))
      .data();
}

// The RoPE table of positions [first_pos, first_pos + count): the last one built when its key is
// the same, else one built now (in parallel over `pool` when given) and kept for the next append.
// Two tables are kept: the latest, which the caches of the layers that appended it still read,
// and the one before it, which no cache reads once every layer has appended past it and is then
// rebuilt in its own storage. So a decode step's table costs its cos and sin and no allocation.
std::shared_ptr<const RopeTable> shared_table(const RopeConfig& rope, std::int64_t first_pos,
                                              std::int64_t count, WorkerPool* pool) {
  static std::mutex mu;
  static RopeConfig last_rope;
  static std::int64_t last_first = -1, last_count = -1;
  static std::array<std::shared_ptr<RopeTable>, 2> kept;
  static std::size_t latest = 0;
  const std::lock_guard lock(mu);
  if (kept[latest] != nullptr && last_rope.rotary_dim == rope.rotary_dim &&
      last_rope.theta == rope.theta && last_first == first_pos && last_count == count) {
    return kept[latest];
  }
  // Only this function hands out references to kept tables, under `mu`: a use count of 1 (ours)
  // cannot grow while we rebuild. A table some cache still reads is let go instead.
  const std::size_t other = 1 - latest;
  if (kept[other] == nullptr || kept[other].use_count() != 1)
    kept[other] = std::make_shared<RopeTable>();
  kept[other]->rebuild(rope, first_pos, count, pool);
  latest = other;
  last_rope = rope;
  last_first = first_pos;
  last_count = count;
  return kept[latest];
}

}  // namespace

void kv_append(const ukernel::KvAppend& uk, KvCache& cache, std::span<const float> k,
               std::span<const float> v, std::int64_t tokens, WorkerPool& pool) {
  detail::check_kv_append(cache, k.size(), v.size(), tokens, "kv_append");
  if (tokens == 0) return;
  auto table = shared_table(cache.rope(), cache.length(), tokens, &pool);
  const std::int64_t stride = detail::scratch_stride(cache.head_dim());
  float* const scratch = row_scratch(cache, pool);
  const std::int64_t chunks = (tokens + kAppendTokensPerTask - 1) / kAppendTokensPerTask;
  pool.parallel_for(cache.n_kv_heads() * chunks, [&](std::int64_t task, int worker) {
    const int head = static_cast<int>(task / chunks);
    const std::int64_t t0 = (task % chunks) * kAppendTokensPerTask;
    float* s = scratch + worker * stride;
    write_rows(uk, cache, k.data(), v.data(), *table, head, t0,
               std::min(tokens, t0 + kAppendTokensPerTask), s);
  });
  cache.set_length(cache.length() + tokens);
  cache.keep_append_rope_table(std::move(table));  // for attention over these positions
}

void kv_append_one(const ukernel::KvAppend& uk, KvCache& cache, std::span<const float> k,
                   std::span<const float> v, WorkerPool& pool) {
  detail::check_kv_append(cache, k.size(), v.size(), 1, "kv_append_one");
  // Serial: rotary_dim/2 cos+sin.
  auto table = shared_table(cache.rope(), cache.length(), 1, nullptr);
  const std::int64_t stride = detail::scratch_stride(cache.head_dim());
  float* const scratch = row_scratch(cache, pool);
  pool.parallel_for(cache.n_kv_heads(), [&](std::int64_t task, int worker) {
    float* s = scratch + worker * stride;
    write_rows(uk, cache, k.data(), v.data(), *table, static_cast<int>(task), 0, 1, s);
  });
  cache.set_length(cache.length() + 1);
  cache.keep_append_rope_table(std::move(table));  // for the decode step at this position
}

}  // namespace k3k::driver
