// RVV attention prefill: the generic layer's task decomposition (query head x tile of q_tile rows,
// keys in kv_block blocks aligned at first_visible, one online-softmax rescale per block) and
// argument checks, with every hot loop vectorised:
//   * Q: RoPE on contiguous halves + scale (rvv_math.h rope_rotate, e32m4), the generic values;
//   * fp16 K/V block -> fp32 once per (tile, block) by integer bit manipulation (e16m2 -> e32m4);
//   * scores: one e32m4 vfmacc dot per (row, key) closed by fold + vfredusum (rvv_math.h);
//   * block max: vfredmax (e32m4); weights exp(s - m) and their sum: vector exp (e32m4) + the same
//     fold/vfredusum reduction;
//   * PV: per e32m4 strip of head_dim, the block sum sum_j p_j v_j is accumulated in registers with
//     vfmacc in key order (the generic order: each term rounded at most n + 1 times), then merged
//     as acc * alpha + blk with one vfmadd (the generic's contracted fma), and o = acc / l by
//     vfdiv. LMUL m4: accumulator + one V strip = 8 registers, and head_dim 128 is 4 strips at VLEN
//     256, one at VLEN 1024.
// Results differ from the generic layer only through the dot/sum reduction order and the vector
// exp; reference::rvv_prefill_error_model is the matching bound. Each output row is produced by one
// task in an order fixed by (head_dim, kv_block, VLEN), so outputs are bitwise identical for every
// worker count and every q_tile.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "generic/attention_common.h"
#include "k3k/attention.h"
#include "k3k/rvv.h"
#include "rvv/rvv_math.h"

namespace k3k::rvv {

namespace {

using generic_detail::fail;

// One query row (pre-rotated, pre-scaled) against n visible keys: the generic online_block's
// arithmetic (see kernels/generic/attention_prefill.cpp) in vector form.
void online_block(const float* q, const float* const* kp, const float* const* vp, int n, int hd,
                  float* s, float& m, float& l, float* acc) {
  for (int j = 0; j < n; ++j) s[j] = rvv_detail::dot(q, kp[j], hd);
  const float m_new = std::max(m, rvv_detail::max_of(s, n));
  const float alpha = std::exp(m - m_new);  // first block: exp(-inf) = 0
  const float bsum = rvv_detail::exp_shift_sum(s, n, m_new);
  for (int d = 0; d < hd;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(hd - d));
    vfloat32m4_t blk = __riscv_vfmv_v_f_f32m4(0.0f, vl);
    for (int j = 0; j < n; ++j) {
      blk = __riscv_vfmacc_vf_f32m4(blk, s[j], __riscv_vle32_v_f32m4(vp[j] + d, vl), vl);
    }
    const vfloat32m4_t a = __riscv_vle32_v_f32m4(acc + d, vl);
    __riscv_vse32_v_f32m4(acc + d, __riscv_vfmadd_vf_f32m4(a, alpha, blk, vl), vl);
    d += static_cast<int>(vl);
  }
  l = l * alpha + bsum;
  m = m_new;
}

}  // namespace

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

  // Per-worker scratch (the generic layout minus its block-sum row, which lives in registers).
  using generic_detail::scratch_stride;
  const std::int64_t off_acc = scratch_stride(static_cast<std::int64_t>(q_tile) * hd);
  const std::int64_t off_m = off_acc + scratch_stride(static_cast<std::int64_t>(q_tile) * hd);
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
    float* m = base + off_m;
    float* l = base + off_l;
    float* s = base + off_s;
    float* kbuf = base + off_kb;
    float* vbuf = base + off_vb;
    const float** kp = rows_scratch.data() + static_cast<std::ptrdiff_t>(2) * kv_block * worker;
    const float** vp = kp + kv_block;

    for (int r = 0; r < rows; ++r) {
      const std::int64_t pos = first_pos + t0 + r;
      rvv_detail::rope_rotate(qd + ((t0 + r) * n_q_heads + h) * hd,
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
          rvv_detail::f16_to_f32_row(cache.k_f16() + off, kr, hd);
          rvv_detail::f16_to_f32_row(cache.v_f16() + off, vr, hd);
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
        online_block(qs + static_cast<std::int64_t>(r) * hd, kp, vp, nv, hd, s, m[r], l[r],
                     acc + static_cast<std::int64_t>(r) * hd);
      }
    }

    for (int r = 0; r < rows; ++r) {
      const float* ar = acc + static_cast<std::int64_t>(r) * hd;
      float* o = od + ((t0 + r) * n_q_heads + h) * hd;
      const float lr = l[r];
      for (int d = 0; d < hd;) {
        const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(hd - d));
        __riscv_vse32_v_f32m8(
            o + d, __riscv_vfdiv_vf_f32m8(__riscv_vle32_v_f32m8(ar + d, vl), lr, vl), vl);
        d += static_cast<int>(vl);
      }
    }
  });
}

}  // namespace k3k::rvv
