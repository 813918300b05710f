#include "drivers/attention_prefill_task.h"

#include <algorithm>
#include <limits>

#include "common/checks.h"
#include "common/kv_runs.h"
#include "common/prefetch.h"
#include "k3k/tcm.h"

namespace k3k::driver::detail {

namespace {

using k3k::detail::for_each_slot_run;

// Prefetches [p + distance, p + distance + bytes): the rows that follow in the same kv head's
// storage (a hint: addresses past the buffer are never accessed).
void prefetch_ahead(const void* p, std::size_t bytes, int distance) {
  if (distance == 0) return;
  k3k::detail::prefetch_read_range(static_cast<const std::uint8_t*>(p) + distance, bytes);
}

// Bytes of K storage that slots [slot, slot + run) of one head span (whole key blocks), from
// the first one's block start: what a prefetch ahead of them covers.
std::size_t k_span_bytes(const KvCache& cache, std::int64_t slot, std::int64_t run,
                         std::size_t elem) {
  const std::int64_t kb = cache.key_block();
  const std::int64_t blocks = (slot + run - 1) / kb - slot / kb + 1;
  return static_cast<std::size_t>(blocks * kb * cache.head_dim()) * elem;
}

// K of positions [p0, p0 + n) of kv head g into `kt`, transposed in blocks of `block` keys
// ([n / block][head_dim][block], KeysT with first = 0), fp16 converted exactly, fp32 copied (the
// streaming copy the TCM stage uses): the same values the cache holds. Copies a dim's run of
// columns at a time, split where either the cache's or the stage's key block ends.
void stage_keys(const PrefillCall& c, int g, std::int64_t p0, std::int64_t n, int block,
                float* kt) {
  const KvCache& cache = *c.cache;
  const std::int64_t hd = c.head_dim, kb = cache.key_block();
  const bool f16 = cache.dtype() == KvDtype::f16;
  for_each_slot_run(cache, p0, n, [&](std::int64_t i0, std::int64_t slot0, std::int64_t run) {
    for (std::int64_t i = 0; i < run;) {
      const std::int64_t slot = slot0 + i, at = i0 + i;
      const std::int64_t piece = std::min({run - i, kb - slot % kb, block - at % block});
      const std::size_t src = cache.k_offset(g, slot);
      float* dst = kt + (at / block) * block * hd + at % block;
      if (f16) {
        c.uk->f16_rows(cache.k_f16() + src, kb, dst, block, hd, piece);  // a row per dim
      } else {
        for (std::int64_t d = 0; d < hd; ++d) {
          tcm::stream_copy(dst + d * block, cache.k_f32() + src + d * kb,
                           static_cast<std::size_t>(piece) * sizeof(float));
        }
      }
      i += piece;
    }
  });
}

// K/V of positions [p0, p0 + n) of kv head g into the stage: K as stage_keys with blocks of
// kv_block keys, V rows into vbuf (fp16 converted exactly, fp32 copied). Returns the bytes written.
std::int64_t stage_rows(const PrefillCall& c, int g, std::int64_t p0, std::int64_t n, float* kbuf,
                        float* vbuf) {
  const KvCache& cache = *c.cache;
  const std::int64_t hd = c.head_dim;
  const bool f16 = cache.dtype() == KvDtype::f16;
  const std::size_t elem = f16 ? sizeof(fp16_t) : sizeof(float);
  for_each_slot_run(cache, p0, n, [&](std::int64_t i, std::int64_t slot, std::int64_t run) {
    const std::size_t off = cache.v_offset(g, slot);
    const std::size_t k_block = cache.k_offset(g, slot - slot % cache.key_block());
    const std::size_t bytes = static_cast<std::size_t>(run * hd) * elem;
    const std::size_t k_bytes = k_span_bytes(cache, slot, run, elem);
    float* vd = vbuf + i * hd;
    if (f16) {
      prefetch_ahead(cache.k_f16() + k_block, k_bytes, c.prefetch_bytes);
      prefetch_ahead(cache.v_f16() + off, bytes, c.prefetch_bytes);
      c.uk->f16_rows(cache.v_f16() + off, 0, vd, 0, 1, run * hd);
    } else {
      prefetch_ahead(cache.k_f32() + k_block, k_bytes, c.prefetch_bytes);
      prefetch_ahead(cache.v_f32() + off, bytes, c.prefetch_bytes);
      tcm::stream_copy(vd, cache.v_f32() + off, bytes);
    }
  });
  stage_keys(c, g, p0, n, c.kv_block, kbuf);
  return 2 * n * hd * static_cast<std::int64_t>(sizeof(float));
}

// Keys and V rows of positions [b0, b0 + n) straight from an fp32 cache: V row pointers, and K in
// place when the block's slots do not wrap (one run of columns), else K transposed into kbuf.
ukernel::KeysT point_into_cache(const PrefillCall& c, int g, std::int64_t b0, int n, float* kbuf,
                                const float** vp) {
  const KvCache& cache = *c.cache;
  const std::int64_t hd = c.head_dim;
  for_each_slot_run(cache, b0, n, [&](std::int64_t i, std::int64_t slot, std::int64_t run) {
    const std::size_t off = cache.v_offset(g, slot);
    const std::size_t bytes = static_cast<std::size_t>(run * hd) * sizeof(float);
    prefetch_ahead(cache.k_f32() + cache.k_offset(g, slot - slot % cache.key_block()),
                   k_span_bytes(cache, slot, run, sizeof(float)), c.prefetch_bytes);
    prefetch_ahead(cache.v_f32() + off, bytes, c.prefetch_bytes);
    for (std::int64_t j = 0; j < run; ++j) vp[i + j] = cache.v_f32() + off + j * hd;
  });
  const std::int64_t slot = cache.slot(b0);
  const int kb = cache.key_block();
  if (slot + n <= cache.capacity()) {
    return {cache.k_f32() + cache.k_offset(g, slot - slot % kb), std::int64_t{kb} * hd, kb,
            static_cast<int>(slot % kb)};
  }
  stage_keys(c, g, b0, n, c.kv_block, kbuf);
  return {kbuf, c.kv_block * hd, c.kv_block, 0};
}

}  // namespace

PrefillArenaLayout prefill_arena_layout(int head_dim, int q_tile, int kv_block, int stage_rows,
                                        bool staged) {
  const std::int64_t tile = k3k::detail::scratch_stride(std::int64_t{q_tile} * head_dim);
  const std::int64_t kv = k3k::detail::scratch_stride(std::int64_t{stage_rows} * head_dim);
  PrefillArenaLayout a{};
  a.acc = tile;
  a.blk = a.acc + tile;
  a.m = a.blk + k3k::detail::scratch_stride(head_dim);
  a.l = a.m + k3k::detail::scratch_stride(q_tile);
  a.s = a.l + k3k::detail::scratch_stride(q_tile);
  a.kbuf = a.s + k3k::detail::scratch_stride(std::int64_t{ukernel::kOnlineScoreRows} * kv_block);
  a.vbuf = a.kbuf + kv;  // K is always there: a wrapping block of an fp32 cache is staged
  a.floats = a.vbuf + (staged ? kv : 0);
  return a;
}

PrefillArena prefill_arena(float* base, const PrefillArenaLayout& layout, int stage_rows,
                           bool staged, const float** row_pointers) {
  return {base,
          base + layout.acc,
          base + layout.blk,
          base + layout.m,
          base + layout.l,
          base + layout.s,
          base + layout.kbuf,
          staged ? base + layout.vbuf : nullptr,
          row_pointers,
          stage_rows,
          staged};
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
    a.m[r] = -std::numeric_limits<float>::infinity();  // the first block writes acc unread
    a.l[r] = 0.0f;
  }

  std::int64_t staged = 0;
  const std::int64_t kv_end = c.first_pos + t0 + rows;  // one past the last row's position
  for (std::int64_t s0 = c.lo; s0 < kv_end; s0 += a.stage_rows) {
    const std::int64_t stage_n = std::min<std::int64_t>(a.stage_rows, kv_end - s0);
    if (a.staged) staged += stage_rows(c, g, s0, stage_n, a.kbuf, a.vbuf);
    for (std::int64_t b0 = s0; b0 < s0 + stage_n; b0 += c.kv_block) {
      const int n = static_cast<int>(std::min<std::int64_t>(c.kv_block, s0 + stage_n - b0));
      ukernel::KeysT keys{};
      if (a.staged) {
        keys = {a.kbuf + (b0 - s0) * hd, c.kv_block * hd, c.kv_block, 0};  // b0 - s0: whole blocks
        for (int j = 0; j < n; ++j) a.vp[j] = a.vbuf + (b0 - s0 + j) * hd;
      } else {
        keys = point_into_cache(c, g, b0, n, a.kbuf, a.vp);
      }
      // Rows before r0 have the whole block in their future; row r >= r0 (position pos) sees
      // min(n, pos - b0 + 1) keys (causal), i.e. nv0 = pos(r0) - b0 + 1 plus one per row.
      const std::int64_t r0 = std::max<std::int64_t>(0, b0 - (c.first_pos + t0));
      if (r0 < rows) {
        const int nv0 = static_cast<int>(c.first_pos + t0 + r0 - b0 + 1);
        uk.online_block(a.qs + r0 * hd, static_cast<int>(rows - r0), nv0, keys, a.vp, n, c.head_dim,
                        a.s, a.blk, a.m + r0, a.l + r0, a.acc + r0 * hd);
      }
    }
  }

  for (int r = 0; r < rows; ++r) {
    uk.divide_row(a.acc + r * hd, a.l[r], c.out + ((t0 + r) * c.n_q_heads + h) * hd, c.head_dim);
  }
  return staged;
}

}  // namespace k3k::driver::detail
