// RVV attention decode microkernels (driver: drivers/attention_decode.cpp, task = kv head x chunk
// of context positions serving every query head of the group; per-chunk max / sum / accumulator
// merged per query head in ascending chunk order), the hot loops vectorised:
//   * Q: RoPE + scale on contiguous halves (e32m4), the generic values;
//   * scores over key blocks (rvv/key_scores.h): the chunk's keys are walked in pieces that share a
//     key block of the cache (k3k/kv_cache.h, split where a ring wraps), and per strip of up to
//     VLMAX_m4 = vlenb keys a pair of query heads takes one load and two vfmacc per dim (q[d]
//     against that dim's row of keys; fp16 rows converted in registers, e16m2 -> e32m4); no
//     per-key reduction, so the work per instruction grows with VLEN;
//   * chunk max: vfredmax; exp(s - m) and the chunk sum: vector exp + fold/vfredusum (e32m4);
//   * PV: per e32m4 strip of head_dim, a pair of query heads accumulates sum_j p_j v_j in two
//     register groups with vfmacc in key order (the generic order), one V strip load (and, for
//     fp16, one in-register conversion) serving both, V rows walked by pointer within a run of
//     slots. LMUL m4: 2 accumulators + V strip + the fp16 conversion temporaries stay within the
//     32 registers;
//   * merge: o = o * alpha + acc_c * beta and o / l as e32m4 vector ops.
// fp16 caches take the scaled halves' path first (attention_decode_scaled_rvv.cpp: the same
// results, a third of the instructions), this one when it does not apply.
// Results differ from the generic layer only through the score and sum orders and the vector exp
// (reference::rvv_decode_error_model); per-output order depends on (head_dim, chunk, VLEN) only,
// so outputs are bitwise identical for every worker count and key block size.
#include <algorithm>
#include <cmath>

#include "common/kv_runs.h"
#include "common/prefetch.h"
#include "rvv/decode_chunk_passes.h"
#include "rvv/decode_scaled.h"
#include "rvv/key_scores.h"
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

// V strip [d, d + vl) of the row at row_off as floats.
inline vfloat32m4_t v_strip(const KvCache& cache, std::size_t row_off, int d, std::size_t vl) {
  if (cache.dtype() == KvDtype::f32) return __riscv_vle32_v_f32m4(cache.v_f32() + row_off + d, vl);
  return rvv_detail::f16_to_f32(__riscv_vle16_v_u16m2(cache.v_f16() + row_off + d, vl), vl);
}

}  // namespace

void attention_decode_chunk(const ukernel::DecodeChunk& c) {
  const KvCache& cache = *c.cache;
  // fp16 caches: the scaled halves' path, bitwise these results (attention_decode_scaled_rvv.cpp),
  // unless a query or a cached value is outside what it covers. Without prefetch: the scaled path
  // issues none.
  if (cache.dtype() == KvDtype::f16 && c.prefetch_bytes == 0 &&
      attention_decode_chunk_f16_scaled(c))
    return;
  const int hd = cache.head_dim(), n = c.n, group = c.group, g = c.kv_head;
  const bool f16 = cache.dtype() == KvDtype::f16;
  const std::int64_t c0 = c.first_pos, chunk = c.score_stride;
  const std::size_t elem = f16 ? sizeof(fp16_t) : sizeof(float);
  const int kb = cache.key_block();
  float* s = c.scores;
  auto q_of = [&](int gi) { return c.q + static_cast<std::int64_t>(gi) * hd; };

  // Scores s[gi][j], a piece of keys sharing a key block at a time. Prefetch: the K block bytes
  // and V rows `distance` ahead of the piece's (V is read by the value pass after all scores).
  k3k::detail::for_each_key_piece(
      cache, c0, n, [&](std::int64_t j, std::int64_t slot, std::int64_t piece) {
        const std::size_t k_off = cache.k_offset(g, slot);
        if (c.prefetch_bytes != 0) {
          const std::size_t block = cache.k_offset(g, slot - slot % kb);
          prefetch_ahead(f16 ? static_cast<const void*>(cache.k_f16() + block)
                             : static_cast<const void*>(cache.k_f32() + block),
                         static_cast<std::size_t>(kb) * hd * elem, c.prefetch_bytes);
          const std::size_t v_off = cache.v_offset(g, slot);
          prefetch_ahead(f16 ? static_cast<const void*>(cache.v_f16() + v_off)
                             : static_cast<const void*>(cache.v_f32() + v_off),
                         static_cast<std::size_t>(piece * hd) * elem, c.prefetch_bytes);
        }
        for (int gi = 0; gi < group; gi += 2) {  // query heads in pairs: one load per dim for two
          const bool pair = gi + 1 < group;
          float* s0 = s + gi * chunk + j;
          const float* q1 = pair ? q_of(gi + 1) : nullptr;
          if (f16) {
            rvv_detail::key_scores_rows(q_of(gi), q1, hd, cache.k_f16() + k_off, kb,
                                        static_cast<int>(piece), s0, s0 + chunk);
          } else {
            rvv_detail::key_scores_rows(q_of(gi), q1, hd, cache.k_f32() + k_off, kb,
                                        static_cast<int>(piece), s0, s0 + chunk);
          }
        }
      });
  // Softmax numerators, chunk max and sum.
  rvv_detail::chunk_softmax_numerators(c);
  // Unnormalised chunk accumulators, two query heads per pass over V, a run of V rows at a time.
  rvv_detail::chunk_value_pass(
      c, [&](const rvv_detail::ValueRun& r, vfloat32m4_t& acc0, vfloat32m4_t& acc1) {
        std::size_t off = cache.v_offset(g, r.slot);
        for (std::int64_t j = r.j0; j < r.j0 + r.run; ++j, off += static_cast<std::size_t>(hd)) {
          const vfloat32m4_t v = v_strip(cache, off, r.d, r.vl);
          acc0 = __riscv_vfmacc_vf_f32m4(acc0, r.p0[j], v, r.vl);
          if (r.pair) acc1 = __riscv_vfmacc_vf_f32m4(acc1, r.p1[j], v, r.vl);
        }
      });
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
