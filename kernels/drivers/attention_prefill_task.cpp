#include "drivers/attention_prefill_task.h"

#include <algorithm>
#include <limits>

#include "common/checks.h"
#include "common/prefetch.h"
#include "k3k/tcm.h"

namespace k3k::driver::detail {

namespace {

// Prefetches [p + distance, p + distance + bytes): the rows that follow in the same kv head's
// storage (a hint: addresses past the buffer are never accessed).
void prefetch_ahead(const void* p, std::size_t bytes, int distance) {
  if (distance == 0) return;
  k3k::detail::prefetch_read_range(static_cast<const std::uint8_t*>(p) + distance, bytes);
}

// Calls fn(slot, count) for the slots of positions [p0, p0 + n) of one head, split where a ring
// cache wraps (positions in one run have consecutive slots, so their rows are contiguous).
template <typename Fn>
void for_each_slot_run(const KvCache& cache, std::int64_t p0, std::int64_t n, Fn&& fn) {
  for (std::int64_t i = 0; i < n;) {
    const std::int64_t slot = cache.slot(p0 + i);
    const std::int64_t run = std::min(n - i, cache.capacity() - slot);
    fn(i, slot, run);
    i += run;
  }
}

// K/V of positions [p0, p0 + n) of kv head g into kbuf / vbuf as fp32 rows (fp16 converted exactly,
// fp32 copied: the same values the cache holds). Returns the bytes written.
std::int64_t stage_rows(const PrefillCall& c, int g, std::int64_t p0, std::int64_t n, float* kbuf,
                        float* vbuf) {
  const KvCache& cache = *c.cache;
  const std::int64_t hd = c.head_dim;
  const bool f16 = cache.dtype() == KvDtype::f16;
  for_each_slot_run(cache, p0, n, [&](std::int64_t i, std::int64_t slot, std::int64_t run) {
    const std::size_t off = cache.row_offset(g, slot);
    float* kd = kbuf + i * hd;
    float* vd = vbuf + i * hd;
    if (f16) {
      const std::size_t bytes = static_cast<std::size_t>(run * hd) * sizeof(fp16_t);
      prefetch_ahead(cache.k_f16() + off, bytes, c.prefetch_bytes);
      prefetch_ahead(cache.v_f16() + off, bytes, c.prefetch_bytes);
      c.uk->f16_row(cache.k_f16() + off, kd, run * hd);
      c.uk->f16_row(cache.v_f16() + off, vd, run * hd);
    } else {
      const std::size_t bytes = static_cast<std::size_t>(run * hd) * sizeof(float);
      prefetch_ahead(cache.k_f32() + off, bytes, c.prefetch_bytes);
      prefetch_ahead(cache.v_f32() + off, bytes, c.prefetch_bytes);
      tcm::stream_copy(kd, cache.k_f32() + off, bytes);
      tcm::stream_copy(vd, cache.v_f32() + off, bytes);
    }
  });
  return 2 * n * hd * static_cast<std::int64_t>(sizeof(float));
}

// Row pointers of positions [b0, b0 + n) straight into an fp32 cache (nothing staged).
void point_into_cache(const PrefillCall& c, int g, std::int64_t b0, int n, const float** kp,
                      const float** vp) {
  const KvCache& cache = *c.cache;
  const std::int64_t hd = c.head_dim;
  for_each_slot_run(cache, b0, n, [&](std::int64_t i, std::int64_t slot, std::int64_t run) {
    const std::size_t off = cache.row_offset(g, slot);
    const std::size_t bytes = static_cast<std::size_t>(run * hd) * sizeof(float);
    prefetch_ahead(cache.k_f32() + off, bytes, c.prefetch_bytes);
    prefetch_ahead(cache.v_f32() + off, bytes, c.prefetch_bytes);
    for (std::int64_t j = 0; j < run; ++j) {
      kp[i + j] = cache.k_f32() + off + j * hd;
      vp[i + j] = cache.v_f32() + off + j * hd;
    }
  });
}

}  // namespace

PrefillArenaLayout prefill_arena_layout(int head_dim, int q_tile, int kv_block, int stage_rows,
                                        bool staged) {
  const std::int64_t tile = k3k::detail::scratch_stride(std::int64_t{q_tile} * head_dim);
  const std::int64_t kv =
      staged ? k3k::detail::scratch_stride(std::int64_t{stage_rows} * head_dim) : 0;
  PrefillArenaLayout a{};
  a.acc = tile;
  a.blk = a.acc + tile;
  a.m = a.blk + k3k::detail::scratch_stride(head_dim);
  a.l = a.m + k3k::detail::scratch_stride(q_tile);
  a.s = a.l + k3k::detail::scratch_stride(q_tile);
  a.kbuf = a.s + k3k::detail::scratch_stride(kv_block);
  a.vbuf = a.kbuf + kv;
  a.floats = a.vbuf + kv;
  return a;
}

PrefillArena prefill_arena(float* base, const PrefillArenaLayout& layout, int kv_block,
                           int stage_rows, bool staged, const float** row_pointers) {
  return {base,
          base + layout.acc,
          base + layout.blk,
          base + layout.m,
          base + layout.l,
          base + layout.s,
          staged ? base + layout.kbuf : nullptr,
          staged ? base + layout.vbuf : nullptr,
          row_pointers,
          row_pointers + kv_block,
          stage_rows};
}

std::int64_t run_prefill_task(const PrefillCall& c, std::int64_t task, const PrefillArena& a) {
  const std::int64_t tile = c.n_tiles - 1 - task / c.n_q_heads;  // longest tiles first
  const int h = static_cast<int>(task % c.n_q_heads);
  const int g = h / c.group;
  const std::int64_t hd = c.head_dim;
  const std::int64_t t0 = tile * c.q_tile;
  const int rows = static_cast<int>(std::min<std::int64_t>(c.q_tile, c.tokens - t0));
  const ukernel::AttentionPrefill& uk = *c.uk;
  const RopeTable& table = *c.table;

  for (int r = 0; r < rows; ++r) {
    const std::int64_t pos = c.first_pos + t0 + r;
    uk.rotate_scale_q(c.q + ((t0 + r) * c.n_q_heads + h) * hd, a.qs + r * hd, c.head_dim,
                      table.half(), table.cos_at(pos), table.sin_at(pos), c.scale);
    a.m[r] = -std::numeric_limits<float>::infinity();
    a.l[r] = 0.0f;
  }
  std::fill(a.acc, a.acc + rows * hd, 0.0f);

  std::int64_t staged = 0;
  const std::int64_t kv_end = c.first_pos + t0 + rows;  // one past the last row's position
  for (std::int64_t s0 = c.lo; s0 < kv_end; s0 += a.stage_rows) {
    const std::int64_t stage_n = std::min<std::int64_t>(a.stage_rows, kv_end - s0);
    if (a.kbuf != nullptr) staged += stage_rows(c, g, s0, stage_n, a.kbuf, a.vbuf);
    for (std::int64_t b0 = s0; b0 < s0 + stage_n; b0 += c.kv_block) {
      const int n = static_cast<int>(std::min<std::int64_t>(c.kv_block, s0 + stage_n - b0));
      if (a.kbuf != nullptr) {
        for (int j = 0; j < n; ++j) {
          a.kp[j] = a.kbuf + (b0 - s0 + j) * hd;
          a.vp[j] = a.vbuf + (b0 - s0 + j) * hd;
        }
      } else {
        point_into_cache(c, g, b0, n, a.kp, a.vp);
      }
      for (int r = 0; r < rows; ++r) {
        const std::int64_t pos = c.first_pos + t0 + r;
        if (b0 > pos) continue;  // the whole block is in this row's future
        const int nv = static_cast<int>(std::min<std::int64_t>(n, pos - b0 + 1));  // causal
        uk.online_block(a.qs + r * hd, a.kp, a.vp, nv, c.head_dim, a.s, a.blk, a.m[r], a.l[r],
                        a.acc + r * hd);
      }
    }
  }

  for (int r = 0; r < rows; ++r) {
    uk.divide_row(a.acc + r * hd, a.l[r], c.out + ((t0 + r) * c.n_q_heads + h) * hd, c.head_dim);
  }
  return staged;
}

}  // namespace k3k::driver::detail
