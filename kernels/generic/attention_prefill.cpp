#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention_common.h"
#include "k3k/attention.h"
#include "vec_math.h"

namespace k3k {

using generic_detail::fail;

float default_attention_scale(int head_dim) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
}

void validate(const AttentionTiling& tiling, const char* op) {
  if (tiling.q_tile < 1 || tiling.q_tile > 4096) {
    fail(op, ": tiling.q_tile (", tiling.q_tile, ") must be in [1, 4096]");
  }
  if (tiling.kv_block < 1 || tiling.kv_block > 65536) {
    fail(op, ": tiling.kv_block (", tiling.kv_block, ") must be in [1, 65536]");
  }
}

namespace {

// One query row against one block of n visible keys (online softmax step):
//   s_j = q.k_j (q pre-scaled);  m' = max(m, max_j s_j);  alpha = exp(m - m');  p_j = exp(s_j - m')
//   acc = acc * alpha + sum_j p_j v_j;   l = l * alpha + sum_j p_j;   m = m'.
// The block sums are formed from zero in key order (so each term p_j v_j is rounded at most
// n + 1 times inside the block), then merged with one rescale.
void online_block(const float* q, const float* const* kp, const float* const* vp, int n, int hd,
                  float* s, float* blk, float& m, float& l, float* acc) {
  float mb = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < n; ++j) {
    s[j] = generic_detail::dot_lanes(q, kp[j], hd);
    mb = std::max(mb, s[j]);
  }
  const float m_new = std::max(m, mb);
  const float alpha = std::exp(m - m_new);  // first block: exp(-inf) = 0
  float bsum = 0.0f;
  for (int j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - m_new);
    bsum += s[j];
  }
  for (int d = 0; d < hd; ++d) blk[d] = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float p = s[j];
    const float* v = vp[j];
    for (int d = 0; d < hd; ++d) blk[d] += p * v[d];
  }
  for (int d = 0; d < hd; ++d) acc[d] = acc[d] * alpha + blk[d];
  l = l * alpha + bsum;
  m = m_new;
}

}  // namespace

namespace generic {
void attention_prefill(const KvCache& cache, std::span<const float> q, std::int64_t tokens,
                       int n_q_heads, std::span<float> out, WorkerPool& pool,
                       const AttentionTiling& tiling, float scale) {
  const char* op = "attention_prefill";
  validate(tiling, op);
  generic_detail::check_attention_args(cache, q.size(), out.size(), tokens, n_q_heads, scale, op);
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
  using generic_detail::scratch_stride;
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
    // The last tiles see the most keys: hand them out first for better load balance.
    const std::int64_t tile = n_tiles - 1 - task / n_q_heads;
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
      float* qr = qs + static_cast<std::int64_t>(r) * hd;
      rope_rotate(qd + ((t0 + r) * n_q_heads + h) * hd, qr, hd, half, table.cos_at(pos),
                  table.sin_at(pos));
      for (int d = 0; d < hd; ++d) qr[d] *= sc;
      float* ar = acc + static_cast<std::int64_t>(r) * hd;
      for (int d = 0; d < hd; ++d) ar[d] = 0.0f;
      m[r] = -std::numeric_limits<float>::infinity();
      l[r] = 0.0f;
    }

    const std::int64_t kv_end = first_pos + t0 + rows;  // one past the last row's position
    for (std::int64_t b0 = lo; b0 < kv_end; b0 += kv_block) {
      const int n = static_cast<int>(std::min<std::int64_t>(kv_block, kv_end - b0));
      for (int j = 0; j < n; ++j) {
        kp[j] = generic_detail::k_row(cache, g, b0 + j, kbuf + static_cast<std::int64_t>(j) * hd);
        vp[j] = generic_detail::v_row(cache, g, b0 + j, vbuf + static_cast<std::int64_t>(j) * hd);
      }
      for (int r = 0; r < rows; ++r) {
        const std::int64_t pos = first_pos + t0 + r;
        if (b0 > pos) continue;  // the whole block is in this row's future
        const int nv = static_cast<int>(std::min<std::int64_t>(n, pos - b0 + 1));  // causal
        online_block(qs + static_cast<std::int64_t>(r) * hd, kp, vp, nv, hd, s, blk, m[r], l[r],
                     acc + static_cast<std::int64_t>(r) * hd);
      }
    }

    for (int r = 0; r < rows; ++r) {
      const float* ar = acc + static_cast<std::int64_t>(r) * hd;
      float* o = od + ((t0 + r) * n_q_heads + h) * hd;
      const float lr = l[r];
      for (int d = 0; d < hd; ++d) o[d] = ar[d] / lr;
    }
  });
}
}  // namespace generic

}  // namespace k3k
