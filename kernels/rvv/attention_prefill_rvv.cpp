// RVV attention prefill microkernels (driver: drivers/attention_prefill.cpp, the task decomposition
// query head x tile of q_tile rows, keys in kv_block blocks aligned at first_visible, one
// online-softmax rescale per block), every hot loop vectorised:
//   * Q: RoPE on contiguous halves + scale (rvv_math.h rope_rotate, e32m4), the generic values;
//   * scores over key blocks (rvv/key_scores.h): K arrives transposed (ukernel::KeysT: the cache's
//     key blocks, or the driver's stage of them), so per strip of keys that share a block each dim
//     is one load and one vfmacc per row of a group of query rows (8 rows over up to VLMAX_m1
//     keys, 4 over VLMAX_m2, else 2 over VLMAX_m4): one instruction per dim and row for up to
//     vlenb keys, no per-key reduction;
//   * block max: vfredmax (e32m4); weights exp(s - m) and their sum: vector exp (e32m4) + the
//     fold/vfredusum reduction;
//   * PV: per e32m4 strip of head_dim, the block sum sum_j p_j v_j of each row of the pair is
//     accumulated in registers with vfmacc in key order (the generic order: each term rounded at
//     most n + 1 times), one V strip load serving both rows, then merged as acc * alpha + blk with
//     one vfmadd (the generic's contracted fma), and o = acc / l by vfdiv. LMUL m4: two block sums
//     + one V strip = 12 registers, and head_dim 128 is 4 strips at VLEN 256, one at VLEN 1024.
// Results differ from the generic layer only through the score and sum orders and the vector exp;
// reference::rvv_prefill_error_model is the matching bound. Each output row is produced by one task
// in an order fixed by (head_dim, kv_block, VLEN), so outputs are bitwise identical for every
// worker count, every q_tile and every key block size (a key's score does not depend on it).
#include <algorithm>
#include <cmath>
#include <limits>

#include "rvv/key_scores.h"
#include "rvv/microkernels.h"
#include "rvv/rvv_math.h"

namespace k3k::rvv {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// s[j] = exp(s[j] - m') for j < n with m' = max(m, max s); returns alpha = exp(m - m') and sets
// m = m', l = l * alpha + sum_j s[j] (the generic online_row's softmax step, vectorised).
float softmax_step(float* s, int n, float& m, float& l) {
  const float m_new = std::max(m, rvv_detail::max_of(s, n));
  const float alpha = std::exp(m - m_new);  // first block: exp(-inf) = 0
  l = l * alpha + rvv_detail::exp_shift_sum(s, n, m_new);
  m = m_new;
  return alpha;
}

// acc0 = acc0 * alpha0 + sum_{j < n0} p0[j] v_j and, for a pair, acc1 likewise over j < n1
// (n0 <= n1), per e32m4 strip of head_dim: the block sums accumulate in registers in key order
// from zero, one V strip load serving both rows, then one vfmadd merge per row. A row's first
// block (fresh) does not read its accumulator: sum + 0, the merge's value for acc = +0.
template <bool kPair>
void accumulate_values(const float* const* vp, int hd, const float* p0, int n0, float alpha0,
                       bool fresh0, float* acc0, const float* p1, int n1, float alpha1, bool fresh1,
                       float* acc1) {
  auto merge = [](float* acc, float alpha, bool fresh, vfloat32m4_t sum, std::size_t vl) {
    __riscv_vse32_v_f32m4(
        acc,
        fresh ? __riscv_vfadd_vf_f32m4(sum, 0.0f, vl)
              : __riscv_vfmadd_vf_f32m4(__riscv_vle32_v_f32m4(acc, vl), alpha, sum, vl),
        vl);
  };
  for (int d = 0; d < hd;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(hd - d));
    vfloat32m4_t b0 = __riscv_vfmv_v_f_f32m4(0.0f, vl);
    vfloat32m4_t b1 = b0;
    int j = 0;
    for (; j + 2 <= n0; j += 2) {  // two keys per iteration, still in key order
      const vfloat32m4_t v0 = __riscv_vle32_v_f32m4(vp[j] + d, vl);
      const vfloat32m4_t v1 = __riscv_vle32_v_f32m4(vp[j + 1] + d, vl);
      b0 = __riscv_vfmacc_vf_f32m4(b0, p0[j], v0, vl);
      if (kPair) b1 = __riscv_vfmacc_vf_f32m4(b1, p1[j], v0, vl);
      b0 = __riscv_vfmacc_vf_f32m4(b0, p0[j + 1], v1, vl);
      if (kPair) b1 = __riscv_vfmacc_vf_f32m4(b1, p1[j + 1], v1, vl);
    }
    for (; j < n0; ++j) {
      const vfloat32m4_t v = __riscv_vle32_v_f32m4(vp[j] + d, vl);
      b0 = __riscv_vfmacc_vf_f32m4(b0, p0[j], v, vl);
      if (kPair) b1 = __riscv_vfmacc_vf_f32m4(b1, p1[j], v, vl);
    }
    if (kPair) {
      for (; j < n1; ++j) {
        b1 = __riscv_vfmacc_vf_f32m4(b1, p1[j], __riscv_vle32_v_f32m4(vp[j] + d, vl), vl);
      }
      merge(acc1 + d, alpha1, fresh1, b1, vl);
    }
    merge(acc0 + d, alpha0, fresh0, b0, vl);
    d += static_cast<int>(vl);
  }
}

}  // namespace

// Scores first, for a group of rows that share every K load: 8 rows when the group's last (most
// seeing) row's keys fit an e32m1 register, 4 when they fit e32m2 (prefill's key blocks at VLEN
// 1024, rvv/key_scores.h key_scores_rows_group), else a pair over e32m4 strips (the longer row's
// keys; the other row ignores its extra one). Then the rows in pairs: each row's softmax step,
// then both rows' value sums share every V load. Each row's arithmetic is the single row's, so
// neither the grouping nor the pairing changes a bit.
static_assert(ukernel::kOnlineScoreRows >= 8, "8-row groups score 8 rows of a block");

void attention_online_block(const float* q, int rows, int nv0, const ukernel::KeysT& k,
                            const float* const* vp, int n, int hd, float* s, float* /*blk*/,
                            float* m, float* l, float* acc) {
  const int vlmax1 = static_cast<int>(__riscv_vsetvlmax_e32m1());
  const int vlmax2 = static_cast<int>(__riscv_vsetvlmax_e32m2());
  const auto keys_of = [&](int row) { return std::min(n, nv0 + row); };
  for (int r = 0; r < rows;) {
    const int left = rows - r;
    const float* qr = q + static_cast<std::ptrdiff_t>(r) * hd;
    int group = 2;
    if (left > 2 && keys_of(r + std::min(8, left) - 1) <= vlmax1) {
      group = 8;
    } else if (left > 2 && keys_of(r + std::min(4, left) - 1) <= vlmax2) {
      group = 4;
    }
    const int group_rows = std::min(group, left);
    const int n_last = keys_of(r + group_rows - 1);
    for (int j = 0; j < n_last;) {  // pieces of keys that share a key block
      const int piece = std::min(n_last - j, k.run(j));
      if (group == 8) {
        rvv_detail::key_scores_rows_group<8>(qr, group_rows, hd, k.col(j), k.block, piece, s + j,
                                             n);
      } else if (group == 4) {
        rvv_detail::key_scores_rows_group<4>(qr, group_rows, hd, k.col(j), k.block, piece, s + j,
                                             n);
      } else {
        rvv_detail::key_scores_rows(qr, group_rows == 2 ? qr + hd : nullptr, hd, k.col(j), k.block,
                                    piece, s + j, s + n + j);
      }
      j += piece;
    }
    for (int p = 0; p < group_rows; p += 2) {
      const int r0 = r + p;
      const bool pair = p + 1 < group_rows;
      const int n0 = keys_of(r0), n1 = pair ? keys_of(r0 + 1) : n0;
      float* s0 = s + static_cast<std::ptrdiff_t>(p) * n;
      float* s1 = s0 + n;
      float* a0 = acc + static_cast<std::ptrdiff_t>(r0) * hd;
      const bool fresh0 = m[r0] == -kInf, fresh1 = pair && m[r0 + 1] == -kInf;
      const float alpha0 = softmax_step(s0, n0, m[r0], l[r0]);
      if (pair) {
        const float alpha1 = softmax_step(s1, n1, m[r0 + 1], l[r0 + 1]);
        accumulate_values<true>(vp, hd, s0, n0, alpha0, fresh0, a0, s1, n1, alpha1, fresh1,
                                a0 + hd);
      } else {
        accumulate_values<false>(vp, hd, s0, n0, alpha0, fresh0, a0, nullptr, 0, 0.0f, false,
                                 nullptr);
      }
    }
    r += group_rows;
  }
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

void fp16_rows(const fp16_t* src, std::ptrdiff_t src_stride, float* dst, std::ptrdiff_t dst_stride,
               std::int64_t rows, std::int64_t n) {
  if (rows == 1 || n > static_cast<std::int64_t>(__riscv_vsetvlmax_e32m4())) {
    for (std::int64_t r = 0; r < rows; ++r)
      rvv_detail::f16_to_f32_row(src + r * src_stride, dst + r * dst_stride, n);
    return;
  }
  // Short rows (a piece of a key block's dims, staged): one strip per row, one vsetvl for all.
  const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < rows; ++r, src += src_stride, dst += dst_stride)
    __riscv_vse32_v_f32m4(dst, rvv_detail::f16_to_f32(__riscv_vle16_v_u16m2(src, vl), vl), vl);
}

}  // namespace k3k::rvv
