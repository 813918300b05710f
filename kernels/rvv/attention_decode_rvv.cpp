// RVV attention decode microkernels (driver: drivers/attention_decode.cpp, task = kv head x chunk
// of context positions serving every query head of the group; per-chunk max / sum / accumulator
// merged per query head in ascending chunk order), the hot loops vectorised:
//   * Q: RoPE + scale on contiguous halves (e32m4), the generic values;
//   * scores: query heads of the group taken in pairs against one K row (dot2: the K strip is
//     loaded once for two e32m4 vfmacc accumulators, each closed by fold + vfredusum exactly like a
//     single dot), for fp32 caches against two K rows at once (dot2x2, four accumulators whose
//     folds share their vtype switches); fp16 K rows are converted once into a scratch row
//     (e16m2 -> e32m4);
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

#include "common/prefetch.h"
#include "rvv/microkernels.h"
#include "rvv/rvv_math.h"

namespace k3k::rvv {

namespace {

// prefetch.r of the row bytes that lie `distance` bytes ahead of row (the rows that follow in the
// kv head's storage).
inline void prefetch_ahead(const void* row, std::size_t bytes, int distance) {
  if (distance == 0) return;
  k3k::detail::prefetch_read_range(static_cast<const std::uint8_t*>(row) + distance, bytes);
}

// V strip [d, d + vl) of (kv head g, position pos) as floats.
inline vfloat32m4_t v_strip(const KvCache& cache, std::size_t row_off, int d, std::size_t vl) {
  if (cache.dtype() == KvDtype::f32) return __riscv_vle32_v_f32m4(cache.v_f32() + row_off + d, vl);
  return rvv_detail::f16_to_f32(__riscv_vle16_v_u16m2(cache.v_f16() + row_off + d, vl), vl);
}

}  // namespace

void attention_decode_chunk(const ukernel::DecodeChunk& c) {
  const KvCache& cache = *c.cache;
  const int hd = cache.head_dim(), n = c.n, group = c.group, g = c.kv_head;
  const bool f16 = cache.dtype() == KvDtype::f16;
  const std::int64_t c0 = c.first_pos, chunk = c.score_stride, heads = c.head_stride;
  float* s = c.scores;
  float* kbuf = c.kbuf;
  const float* qg = c.q;
  const std::size_t row_bytes = static_cast<std::size_t>(hd) * (f16 ? 2 : 4);

  // Scores s[gi][j]. fp32 caches: two keys per pass for pairs of query heads (dot2x2: the folds
  // share their vtype switches); every score keeps dot()'s order, so the values do not depend on
  // the pairing.
  auto score = [&](int gi, int j) -> float& {
    return s[static_cast<std::int64_t>(gi) * chunk + j];
  };
  auto q_of = [&](int gi) { return qg + static_cast<std::int64_t>(gi) * hd; };
  auto k_row = [&](int j) { return cache.row_offset(g, cache.slot(c0 + j)); };
  // The K and V rows `distance` bytes ahead (V is read by the value pass after all scores).
  auto prefetch_rows = [&](std::size_t off) {
    if (c.prefetch_bytes == 0) return;
    prefetch_ahead(f16 ? static_cast<const void*>(cache.k_f16() + off)
                       : static_cast<const void*>(cache.k_f32() + off),
                   row_bytes, c.prefetch_bytes);
    prefetch_ahead(f16 ? static_cast<const void*>(cache.v_f16() + off)
                       : static_cast<const void*>(cache.v_f32() + off),
                   row_bytes, c.prefetch_bytes);
  };
  int j = 0;
  if (!f16) {
    for (; j + 2 <= n; j += 2) {
      const std::size_t off0 = k_row(j), off1 = k_row(j + 1);
      prefetch_rows(off0);
      prefetch_rows(off1);
      const float* k0 = cache.k_f32() + off0;
      const float* k1 = cache.k_f32() + off1;
      int gi = 0;
      for (; gi + 1 < group; gi += 2) {
        float r[4];
        rvv_detail::dot2x2(q_of(gi), q_of(gi + 1), k0, k1, hd, r);
        score(gi, j) = r[0];
        score(gi + 1, j) = r[1];
        score(gi, j + 1) = r[2];
        score(gi + 1, j + 1) = r[3];
      }
      // The odd head: q against both rows (a product's operands commute exactly in an fma).
      if (gi < group) rvv_detail::dot2(k0, k1, q_of(gi), hd, score(gi, j), score(gi, j + 1));
    }
  }
  for (; j < n; ++j) {
    const std::size_t off = k_row(j);
    prefetch_rows(off);
    const float* k = cache.k_f32() + off;
    if (f16) {
      rvv_detail::f16_to_f32_row(cache.k_f16() + off, kbuf, hd);
      k = kbuf;
    }
    int gi = 0;
    for (; gi + 1 < group; gi += 2) {
      rvv_detail::dot2(q_of(gi), q_of(gi + 1), k, hd, score(gi, j), score(gi + 1, j));
    }
    if (gi < group) score(gi, j) = rvv_detail::dot(q_of(gi), k, hd);
  }
  // Softmax numerators, chunk max and sum.
  for (int gi = 0; gi < group; ++gi) {
    float* sg = s + static_cast<std::int64_t>(gi) * chunk;
    const float m = rvv_detail::max_of(sg, n);
    const float l = rvv_detail::exp_shift_sum(sg, n, m);
    c.m[gi * heads] = m;
    c.l[gi * heads] = l;
  }
  // Unnormalised chunk accumulators, two query heads per pass over V.
  for (int gi = 0; gi < group; gi += 2) {
    const bool pair = gi + 1 < group;
    const float* p0 = s + static_cast<std::int64_t>(gi) * chunk;
    const float* p1 = pair ? p0 + chunk : p0;
    float* a0 = c.acc + gi * heads * hd;
    float* a1 = pair ? a0 + heads * hd : a0;
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
}

void attention_merge_chunks(const float* acc, const float* m_c, const float* l_c,
                            std::int64_t n_chunks, int hd, float* o) {
  rvv_detail::copy_row(acc, o, hd);
  float m = m_c[0];
  float l = l_c[0];
  for (std::int64_t c = 1; c < n_chunks; ++c) {
    const float mc = m_c[c];
    const float lc = l_c[c];
    const float* ac = acc + c * hd;
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
  attention_divide_row(o, l, o, hd);
}

}  // namespace k3k::rvv
