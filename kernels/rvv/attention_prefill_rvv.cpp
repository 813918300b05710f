// RVV attention prefill microkernels (driver: drivers/attention_prefill.cpp, the task decomposition
// query head x tile of q_tile rows, keys in kv_block blocks aligned at first_visible, one
// online-softmax rescale per block), every hot loop vectorised:
//   * Q: RoPE on contiguous halves + scale (rvv_math.h rope_rotate, e32m4), the generic values;
//   * fp16 K/V block -> fp32 once per (tile, block) by integer bit manipulation (e16m2 -> e32m4);
//   * scores: one e32m4 vfmacc dot per (row, key) closed by fold + vfredusum (rvv_math.h), four
//     keys per pass (dot4: the query strip loaded once, the folds sharing their vtype switches);
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

#include "rvv/microkernels.h"
#include "rvv/rvv_math.h"

namespace k3k::rvv {

// One query row (pre-rotated, pre-scaled) against n visible keys: the generic online_block's
// arithmetic (see kernels/generic/attention_lanes16_generic.cpp) in vector form.
void attention_online_block(const float* q, const float* const* kp, const float* const* vp, int n,
                            int hd, float* s, float* /*blk: the block sum lives in registers*/,
                            float& m, float& l, float* acc) {
  int k = 0;
  for (; k + 4 <= n; k += 4) rvv_detail::dot4(q, kp + k, hd, s + k);  // bitwise dot()'s values
  for (; k < n; ++k) s[k] = rvv_detail::dot(q, kp[k], hd);
  const float m_new = std::max(m, rvv_detail::max_of(s, n));
  const float alpha = std::exp(m - m_new);  // first block: exp(-inf) = 0
  const float bsum = rvv_detail::exp_shift_sum(s, n, m_new);
  for (int d = 0; d < hd;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(hd - d));
    vfloat32m4_t blk = __riscv_vfmv_v_f_f32m4(0.0f, vl);
    int j = 0;
    for (; j + 2 <= n; j += 2) {  // two keys per iteration, accumulated in key order
      const vfloat32m4_t v0 = __riscv_vle32_v_f32m4(vp[j] + d, vl);
      const vfloat32m4_t v1 = __riscv_vle32_v_f32m4(vp[j + 1] + d, vl);
      blk = __riscv_vfmacc_vf_f32m4(blk, s[j], v0, vl);
      blk = __riscv_vfmacc_vf_f32m4(blk, s[j + 1], v1, vl);
    }
    if (j < n) blk = __riscv_vfmacc_vf_f32m4(blk, s[j], __riscv_vle32_v_f32m4(vp[j] + d, vl), vl);
    const vfloat32m4_t a = __riscv_vle32_v_f32m4(acc + d, vl);
    __riscv_vse32_v_f32m4(acc + d, __riscv_vfmadd_vf_f32m4(a, alpha, blk, vl), vl);
    d += static_cast<int>(vl);
  }
  l = l * alpha + bsum;
  m = m_new;
}

void attention_divide_row(const float* acc, float l, float* o, int hd) {
  for (int d = 0; d < hd;) {
    const std::size_t vl = __riscv_vsetvl_e32m8(static_cast<std::size_t>(hd - d));
    __riscv_vse32_v_f32m8(o + d, __riscv_vfdiv_vf_f32m8(__riscv_vle32_v_f32m8(acc + d, vl), l, vl),
                          vl);
    d += static_cast<int>(vl);
  }
}

void attention_rotate_scale_q(const float* src, float* dst, int head_dim, int half,
                              const float* cos, const float* sin, float scale) {
  rvv_detail::rope_rotate(src, dst, head_dim, half, cos, sin, scale);
}

void fp16_row(const fp16_t* src, float* dst, std::int64_t n) {
  rvv_detail::f16_to_f32_row(src, dst, n);
}

}  // namespace k3k::rvv
