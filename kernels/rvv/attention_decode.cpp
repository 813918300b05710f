// RVV attention decode: the generic layer's split (task = kv head x chunk of context positions,
// serving every query head of the group; per-chunk max / sum / accumulator merged per query head
// in ascending chunk order) and argument checks, with the hot loops vectorised:
//   * Q: RoPE + scale on contiguous halves (e32m4), the generic values;
//   * scores: query heads of the group taken in pairs against one K row (dot2: the K strip is
//     loaded once for two e32m4 vfmacc accumulators, each closed by fold + vfredusum exactly like a
//     single dot); fp16 K rows are converted once into a scratch row (e16m2 -> e32m4);
//   * chunk max: vfredmax; exp(s - m) and the chunk sum: vector exp + fold/vfredusum (e32m4);
//   * PV: per e32m4 strip of head_dim, a pair of query heads accumulates sum_j p_j v_j in two
//     register groups with vfmacc in key order (the generic order), one V strip load (and, for
//     fp16, one in-register conversion) serving both. LMUL m4: 2 accumulators + V strip + the
//     fp16 conversion temporaries stay within the 32 registers;
//   * merge: o = o * alpha + acc_c * beta and o / l as e32m4 vector ops.
// Results differ from the generic layer only through the dot/sum reduction order and the vector
// exp (reference::rvv_decode_error_model); per-output order depends on (head_dim, chunk, VLEN)
// only, so outputs are bitwise identical for every worker count.
#include <algorithm>
#include <cmath>
#include <limits>

#include "generic/attention_common.h"
#include "k3k/attention.h"
#include "k3k/rvv.h"
#include "rvv/rvv_math.h"

namespace k3k::rvv {

namespace {

using generic_detail::fail;

// V strip [d, d + vl) of (kv head g, position pos) as floats.
inline vfloat32m4_t v_strip(const KvCache& cache, std::size_t row_off, int d, std::size_t vl) {
  if (cache.dtype() == KvDtype::f32) return __riscv_vle32_v_f32m4(cache.v_f32() + row_off + d, vl);
  return rvv_detail::f16_to_f32(__riscv_vle16_v_u16m2(cache.v_f16() + row_off + d, vl), vl);
}

}  // namespace

void attention_decode(const KvCache& cache, std::span<const float> q, int n_q_heads,
                      std::span<float> out, WorkerPool& pool, const DecodeTiling& tiling,
                      float scale) {
  const char* op = "attention_decode";
  validate(tiling, op);
  generic_detail::check_attention_args(cache, q.size(), out.size(), 1, n_q_heads, scale, op);
  if (cache.length() < 1) {
    fail(op, ": cache.length() is 0; append the query token's K/V to the cache first");
  }

  const int hd = cache.head_dim();
  const int n_kv = cache.n_kv_heads();
  const int group = n_q_heads / n_kv;
  const float sc = scale > 0.0f ? scale : default_attention_scale(hd);
  const std::int64_t pos = cache.length() - 1;
  const std::int64_t lo = cache.first_visible();
  const std::int64_t context = pos + 1 - lo;
  const int chunk = static_cast<int>(std::min<std::int64_t>(tiling.chunk, context));
  const std::int64_t n_chunks = (context + chunk - 1) / chunk;
  const bool f16 = cache.dtype() == KvDtype::f16;

  AlignedBuffer<float> qs(static_cast<std::size_t>(n_q_heads) * hd);
  {
    const RopeTable table(cache.rope(), pos, 1);
    for (int h = 0; h < n_q_heads; ++h) {
      rvv_detail::rope_rotate(q.data() + static_cast<std::int64_t>(h) * hd,
                              qs.data() + static_cast<std::int64_t>(h) * hd, hd, table.half(),
                              table.cos_at(pos), table.sin_at(pos), sc);
    }
  }

  const std::size_t n_part = static_cast<std::size_t>(n_q_heads * n_chunks);
  AlignedBuffer<float> part_m(n_part), part_l(n_part), part_acc(n_part * hd);
  using generic_detail::scratch_stride;
  const std::int64_t off_kb = scratch_stride(static_cast<std::int64_t>(group) * chunk);
  const std::int64_t stride = off_kb + (f16 ? scratch_stride(hd) : 0);
  AlignedBuffer<float> scratch(static_cast<std::size_t>(stride * pool.size()));

  pool.parallel_for(n_kv * n_chunks, [&](std::int64_t task, int worker) {
    const int g = static_cast<int>(task / n_chunks);
    const std::int64_t c = task % n_chunks;
    const std::int64_t c0 = lo + c * chunk;
    const int n = static_cast<int>(std::min<std::int64_t>(chunk, pos + 1 - c0));
    float* s = scratch.data() + worker * stride;
    float* kbuf = s + off_kb;
    const float* qg = qs.data() + static_cast<std::int64_t>(g) * group * hd;

    // Scores s[gi][j].
    for (int j = 0; j < n; ++j) {
      const std::size_t off = cache.row_offset(g, cache.slot(c0 + j));
      const float* k = cache.k_f32() + off;
      if (f16) {
        rvv_detail::f16_to_f32_row(cache.k_f16() + off, kbuf, hd);
        k = kbuf;
      }
      int gi = 0;
      for (; gi + 1 < group; gi += 2) {
        rvv_detail::dot2(qg + static_cast<std::int64_t>(gi) * hd,
                         qg + static_cast<std::int64_t>(gi + 1) * hd, k, hd,
                         s[static_cast<std::int64_t>(gi) * chunk + j],
                         s[static_cast<std::int64_t>(gi + 1) * chunk + j]);
      }
      if (gi < group) {
        s[static_cast<std::int64_t>(gi) * chunk + j] =
            rvv_detail::dot(qg + static_cast<std::int64_t>(gi) * hd, k, hd);
      }
    }
    // Softmax numerators, chunk max and sum.
    for (int gi = 0; gi < group; ++gi) {
      float* sg = s + static_cast<std::int64_t>(gi) * chunk;
      const float m = rvv_detail::max_of(sg, n);
      const float l = rvv_detail::exp_shift_sum(sg, n, m);
      const std::int64_t idx = static_cast<std::int64_t>(g * group + gi) * n_chunks + c;
      part_m[static_cast<std::size_t>(idx)] = m;
      part_l[static_cast<std::size_t>(idx)] = l;
    }
    // Unnormalised chunk accumulators, two query heads per pass over V.
    for (int gi = 0; gi < group; gi += 2) {
      const bool pair = gi + 1 < group;
      const float* p0 = s + static_cast<std::int64_t>(gi) * chunk;
      const float* p1 = pair ? p0 + chunk : p0;
      float* a0 = part_acc.data() + (static_cast<std::int64_t>(g * group + gi) * n_chunks + c) * hd;
      float* a1 = pair ? a0 + n_chunks * hd : a0;
      for (int d = 0; d < hd;) {
        const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(hd - d));
        vfloat32m4_t acc0 = __riscv_vfmv_v_f_f32m4(0.0f, vl);
        vfloat32m4_t acc1 = __riscv_vfmv_v_f_f32m4(0.0f, vl);
        for (int j = 0; j < n; ++j) {
          const vfloat32m4_t v = v_strip(cache, cache.row_offset(g, cache.slot(c0 + j)), d, vl);
          acc0 = __riscv_vfmacc_vf_f32m4(acc0, p0[j], v, vl);
          if (pair) acc1 = __riscv_vfmacc_vf_f32m4(acc1, p1[j], v, vl);
        }
        __riscv_vse32_v_f32m4(a0 + d, acc0, vl);
        if (pair) __riscv_vse32_v_f32m4(a1 + d, acc1, vl);
        d += static_cast<int>(vl);
      }
    }
  });

  // Merge the chunks of each query head in ascending chunk order (fixed, worker-independent).
  pool.parallel_for(n_q_heads, [&](std::int64_t h, int) {
    const std::int64_t base = h * n_chunks;
    float* o = out.data() + h * hd;
    rvv_detail::copy_row(part_acc.data() + base * hd, o, hd);
    float m = part_m[static_cast<std::size_t>(base)];
    float l = part_l[static_cast<std::size_t>(base)];
    for (std::int64_t c = 1; c < n_chunks; ++c) {
      const float mc = part_m[static_cast<std::size_t>(base + c)];
      const float lc = part_l[static_cast<std::size_t>(base + c)];
      const float* ac = part_acc.data() + (base + c) * hd;
      const float m_new = std::max(m, mc);
      const float alpha = std::exp(m - m_new);
      const float beta = std::exp(mc - m_new);
      for (int d = 0; d < hd;) {
        const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(hd - d));
        const vfloat32m4_t t = __riscv_vfmul_vf_f32m4(__riscv_vle32_v_f32m4(ac + d, vl), beta, vl);
        __riscv_vse32_v_f32m4(
            o + d, __riscv_vfmacc_vf_f32m4(t, alpha, __riscv_vle32_v_f32m4(o + d, vl), vl), vl);
        d += static_cast<int>(vl);
      }
      l = l * alpha + lc * beta;
      m = m_new;
    }
    for (int d = 0; d < hd;) {
      const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(hd - d));
      __riscv_vse32_v_f32m8(o + d, __riscv_vfdiv_vf_f32m8(__riscv_vle32_v_f32m8(o + d, vl), l, vl),
                            vl);
      d += static_cast<int>(vl);
    }
  });
}

}  // namespace k3k::rvv
