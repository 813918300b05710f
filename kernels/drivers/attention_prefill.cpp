// Attention prefill: a task is (query head, tile of q_tile query rows), the last tiles (which see
// the most keys) handed out first; it walks the keys in blocks of kv_block positions aligned at
// cache.first_visible(), one online-softmax rescale per block per row, never materialising the
// score matrix. Each output row is produced by one task in an order fixed by (head_dim, kv_block)
// and the layer, so outputs are bitwise identical for every worker count and q_tile.
#include <algorithm>
#include <limits>
#include <vector>

#include "common/attention_checks.h"
#include "drivers/drivers.h"

namespace k3k::driver {

using detail::fail;

void attention_prefill(const ukernel::AttentionPrefill& uk, const KvCache& cache,
                       std::span<const float> q, std::int64_t tokens, int n_q_heads,
                       std::span<float> out, WorkerPool& pool, const AttentionTiling& tiling,
                       float scale) {
  const char* op = "attention_prefill";
  validate(tiling, op);
  detail::check_attention_args(cache, q.size(), out.size(), tokens, n_q_heads, scale, op);
  if (tokens > cache.length()) {
    fail(op, ": tokens (", tokens, ") exceeds cache.length() (", cache.length(),
         "); append the new K/V to the cache first");
  }
  if (cache.ring() && tokens > cache.capacity()) {
    fail(op, ": tokens (", tokens, ") exceeds the ring cache capacity (", cache.capacity(), ")");
  }
  if (tokens == 0) return;

  const int hd = cache.head_dim();
  const int group = n_q_heads / cache.n_kv_heads();
  const float sc = scale > 0.0f ? scale : default_attention_scale(hd);
  const std::int64_t first_pos = cache.length() - tokens;
  const std::int64_t lo = cache.first_visible();
  const int q_tile = static_cast<int>(std::min<std::int64_t>(tiling.q_tile, tokens));
  const int kv_block = tiling.kv_block;
  const std::int64_t n_tiles = (tokens + q_tile - 1) / q_tile;
  const bool f16 = cache.dtype() == KvDtype::f16;
  const RopeTable table(cache.rope(), first_pos, tokens, pool);
  const int half = table.half();

  // Per-worker scratch, allocated once per call: rotated+scaled Q tile, accumulators, one block
  // sum, row max / sum, block scores, and (fp16 caches) the converted K and V block.
  using detail::scratch_stride;
  const std::int64_t off_acc = scratch_stride(static_cast<std::int64_t>(q_tile) * hd);
  const std::int64_t off_blk = off_acc + scratch_stride(static_cast<std::int64_t>(q_tile) * hd);
  const std::int64_t off_m = off_blk + scratch_stride(hd);
  const std::int64_t off_l = off_m + scratch_stride(q_tile);
  const std::int64_t off_s = off_l + scratch_stride(q_tile);
  const std::int64_t off_kb = off_s + scratch_stride(kv_block);
  const std::int64_t kv_floats = f16 ? scratch_stride(static_cast<std::int64_t>(kv_block) * hd) : 0;
  const std::int64_t off_vb = off_kb + kv_floats;
  const std::int64_t stride = off_vb + kv_floats;
  AlignedBuffer<float> scratch(static_cast<std::size_t>(stride * pool.size()));
  std::vector<const float*> rows_scratch(static_cast<std::size_t>(2 * kv_block * pool.size()));

  const float* qd = q.data();
  float* od = out.data();
  pool.parallel_for(n_tiles * n_q_heads, [&](std::int64_t task, int worker) {
    const std::int64_t tile = n_tiles - 1 - task / n_q_heads;  // longest tiles first
    const int h = static_cast<int>(task % n_q_heads);
    const int g = h / group;
    const std::int64_t t0 = tile * q_tile;
    const int rows = static_cast<int>(std::min<std::int64_t>(q_tile, tokens - t0));
    float* base = scratch.data() + worker * stride;
    float* qs = base;
    float* acc = base + off_acc;
    float* blk = base + off_blk;
    float* m = base + off_m;
    float* l = base + off_l;
    float* s = base + off_s;
    float* kbuf = base + off_kb;
    float* vbuf = base + off_vb;
    const float** kp = rows_scratch.data() + static_cast<std::ptrdiff_t>(2) * kv_block * worker;
    const float** vp = kp + kv_block;

    for (int r = 0; r < rows; ++r) {
      const std::int64_t pos = first_pos + t0 + r;
      uk.rotate_scale_q(qd + ((t0 + r) * n_q_heads + h) * hd,
                        qs + static_cast<std::int64_t>(r) * hd, hd, half, table.cos_at(pos),
                        table.sin_at(pos), sc);
      m[r] = -std::numeric_limits<float>::infinity();
      l[r] = 0.0f;
    }
    std::fill(acc, acc + static_cast<std::int64_t>(rows) * hd, 0.0f);

    const std::int64_t kv_end = first_pos + t0 + rows;  // one past the last row's position
    for (std::int64_t b0 = lo; b0 < kv_end; b0 += kv_block) {
      const int n = static_cast<int>(std::min<std::int64_t>(kv_block, kv_end - b0));
      for (int j = 0; j < n; ++j) {
        const std::size_t off = cache.row_offset(g, cache.slot(b0 + j));
        if (f16) {
          float* kr = kbuf + static_cast<std::int64_t>(j) * hd;
          float* vr = vbuf + static_cast<std::int64_t>(j) * hd;
          uk.f16_row(cache.k_f16() + off, kr, hd);
          uk.f16_row(cache.v_f16() + off, vr, hd);
          kp[j] = kr;
          vp[j] = vr;
        } else {
          kp[j] = cache.k_f32() + off;
          vp[j] = cache.v_f32() + off;
        }
      }
      for (int r = 0; r < rows; ++r) {
        const std::int64_t pos = first_pos + t0 + r;
        if (b0 > pos) continue;  // the whole block is in this row's future
        const int nv = static_cast<int>(std::min<std::int64_t>(n, pos - b0 + 1));  // causal
        uk.online_block(qs + static_cast<std::int64_t>(r) * hd, kp, vp, nv, hd, s, blk, m[r], l[r],
                        acc + static_cast<std::int64_t>(r) * hd);
      }
    }

    for (int r = 0; r < rows; ++r) {
      uk.divide_row(acc + static_cast<std::int64_t>(r) * hd, l[r],
                    od + ((t0 + r) * n_q_heads + h) * hd, hd);
    }
  });
}

}  // namespace k3k::driver
