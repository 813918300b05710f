// RVV Gated DeltaNet chunk microkernel (contract: ukernels/deltanet.h GdnChunk), VLEN-agnostic.
// Columns are strip-mined at e32m2 (vl = VLEN/16 floats). The state products W = K S and R = Q S
// keep four tokens' W and R strips in registers (8 m2 groups) over all k_dim rows, so each state
// strip is loaded once per four tokens; the state update keeps four state rows in registers over
// all tokens of the chunk. Per element every sum is sequential in the contract's order with one
// fused rounding per term (vfmacc/vfnmsac), the depth the reference bound assumes.
#include <riscv_vector.h>

#include <algorithm>

#include "rvv/microkernels.h"
#include "rvv/rvv_math.h"

namespace k3k::rvv {
namespace {

using vf = vfloat32m2_t;

// W, R rows of tokens [t0, t0 + 4) over columns [j0, j0 + vl).
void state_products4(const ukernel::GdnChunk& c, int t0, int j0, std::size_t vl, float* W,
                     float* R, int n) {
  vf w0 = __riscv_vfmv_v_f_f32m2(0.0f, vl), w1 = w0, w2 = w0, w3 = w0;
  vf r0 = w0, r1 = w0, r2 = w0, r3 = w0;
  const float* k0 = c.k + t0 * c.k_stride;
  const float* k1 = k0 + c.k_stride;
  const float* k2 = k1 + c.k_stride;
  const float* k3 = k2 + c.k_stride;
  const float* q0 = c.q + t0 * c.q_stride;
  const float* q1 = q0 + c.q_stride;
  const float* q2 = q1 + c.q_stride;
  const float* q3 = q2 + c.q_stride;
  for (int i = 0; i < c.k_dim; ++i) {
    const vf s = __riscv_vle32_v_f32m2(c.state + i * c.state_stride + j0, vl);
    w0 = __riscv_vfmacc_vf_f32m2(w0, k0[i], s, vl);
    w1 = __riscv_vfmacc_vf_f32m2(w1, k1[i], s, vl);
    w2 = __riscv_vfmacc_vf_f32m2(w2, k2[i], s, vl);
    w3 = __riscv_vfmacc_vf_f32m2(w3, k3[i], s, vl);
    r0 = __riscv_vfmacc_vf_f32m2(r0, q0[i], s, vl);
    r1 = __riscv_vfmacc_vf_f32m2(r1, q1[i], s, vl);
    r2 = __riscv_vfmacc_vf_f32m2(r2, q2[i], s, vl);
    r3 = __riscv_vfmacc_vf_f32m2(r3, q3[i], s, vl);
  }
  float* w = W + std::int64_t(t0) * n + j0;
  float* r = R + std::int64_t(t0) * n + j0;
  __riscv_vse32_v_f32m2(w, w0, vl);
  __riscv_vse32_v_f32m2(w + n, w1, vl);
  __riscv_vse32_v_f32m2(w + 2 * n, w2, vl);
  __riscv_vse32_v_f32m2(w + 3 * n, w3, vl);
  __riscv_vse32_v_f32m2(r, r0, vl);
  __riscv_vse32_v_f32m2(r + n, r1, vl);
  __riscv_vse32_v_f32m2(r + 2 * n, r2, vl);
  __riscv_vse32_v_f32m2(r + 3 * n, r3, vl);
}

void state_products1(const ukernel::GdnChunk& c, int t, int j0, std::size_t vl, float* W, float* R,
                     int n) {
  vf w = __riscv_vfmv_v_f_f32m2(0.0f, vl), r = w;
  const float* k = c.k + t * c.k_stride;
  const float* q = c.q + t * c.q_stride;
  for (int i = 0; i < c.k_dim; ++i) {
    const vf s = __riscv_vle32_v_f32m2(c.state + i * c.state_stride + j0, vl);
    w = __riscv_vfmacc_vf_f32m2(w, k[i], s, vl);
    r = __riscv_vfmacc_vf_f32m2(r, q[i], s, vl);
  }
  __riscv_vse32_v_f32m2(W + std::int64_t(t) * n + j0, w, vl);
  __riscv_vse32_v_f32m2(R + std::int64_t(t) * n + j0, r, vl);
}

// State rows [i0, i0 + 4): S = a_end S + sum_t khat[t][i] D_t.
void update_rows4(const ukernel::GdnChunk& c, int i0, int j0, std::size_t vl, const float* D,
                  int n) {
  float* s0p = c.state + i0 * c.state_stride + j0;
  float* s1p = s0p + c.state_stride;
  float* s2p = s1p + c.state_stride;
  float* s3p = s2p + c.state_stride;
  vf s0 = __riscv_vfmul_vf_f32m2(__riscv_vle32_v_f32m2(s0p, vl), c.a_end, vl);
  vf s1 = __riscv_vfmul_vf_f32m2(__riscv_vle32_v_f32m2(s1p, vl), c.a_end, vl);
  vf s2 = __riscv_vfmul_vf_f32m2(__riscv_vle32_v_f32m2(s2p, vl), c.a_end, vl);
  vf s3 = __riscv_vfmul_vf_f32m2(__riscv_vle32_v_f32m2(s3p, vl), c.a_end, vl);
  for (int t = 0; t < c.tokens; ++t) {
    const vf d = __riscv_vle32_v_f32m2(D + std::int64_t(t) * n + j0, vl);
    const float* kh = c.khat + std::int64_t(t) * c.k_dim + i0;
    s0 = __riscv_vfmacc_vf_f32m2(s0, kh[0], d, vl);
    s1 = __riscv_vfmacc_vf_f32m2(s1, kh[1], d, vl);
    s2 = __riscv_vfmacc_vf_f32m2(s2, kh[2], d, vl);
    s3 = __riscv_vfmacc_vf_f32m2(s3, kh[3], d, vl);
  }
  __riscv_vse32_v_f32m2(s0p, s0, vl);
  __riscv_vse32_v_f32m2(s1p, s1, vl);
  __riscv_vse32_v_f32m2(s2p, s2, vl);
  __riscv_vse32_v_f32m2(s3p, s3, vl);
}

void update_row1(const ukernel::GdnChunk& c, int i, int j0, std::size_t vl, const float* D, int n) {
  float* sp = c.state + i * c.state_stride + j0;
  vf s = __riscv_vfmul_vf_f32m2(__riscv_vle32_v_f32m2(sp, vl), c.a_end, vl);
  for (int t = 0; t < c.tokens; ++t) {
    s = __riscv_vfmacc_vf_f32m2(s, c.khat[std::int64_t(t) * c.k_dim + i],
                                __riscv_vle32_v_f32m2(D + std::int64_t(t) * n + j0, vl), vl);
  }
  __riscv_vse32_v_f32m2(sp, s, vl);
}

}  // namespace

float gdn_dot(const float* a, const float* b, int n) { return rvv_detail::dot(a, b, n); }

void gdn_chunk_columns(const ukernel::GdnChunk& c) {
  const int C = c.tokens, n = c.cols;
  float* W = c.scratch;
  float* R = W + std::int64_t(C) * n;
  float* D = R + std::int64_t(C) * n;
  for (int j0 = 0; j0 < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m2(static_cast<std::size_t>(n - j0));
    int t = 0;
    for (; t + 4 <= C; t += 4) state_products4(c, t, j0, vl, W, R, n);
    for (; t < C; ++t) state_products1(c, t, j0, vl, W, R, n);
    // Pseudo-values: D_t = beta_t ((v_t - e_t W_t) - sum_{s<t} kk_ts D_s).
    for (t = 0; t < C; ++t) {
      vf acc = __riscv_vle32_v_f32m2(c.v + t * c.v_stride + j0, vl);
      acc = __riscv_vfnmsac_vf_f32m2(acc, c.e[t],
                                     __riscv_vle32_v_f32m2(W + std::int64_t(t) * n + j0, vl), vl);
      const float* kk = c.kk + std::int64_t(t) * c.ld;
      for (int s = 0; s < t; ++s) {
        acc = __riscv_vfnmsac_vf_f32m2(acc, kk[s],
                                       __riscv_vle32_v_f32m2(D + std::int64_t(s) * n + j0, vl), vl);
      }
      __riscv_vse32_v_f32m2(D + std::int64_t(t) * n + j0, __riscv_vfmul_vf_f32m2(acc, c.beta[t], vl),
                            vl);
    }
    // Outputs: o_t = e_t R_t + sum_{s<=t} qk_ts D_s.
    for (t = 0; t < C; ++t) {
      vf acc = __riscv_vfmul_vf_f32m2(__riscv_vle32_v_f32m2(R + std::int64_t(t) * n + j0, vl),
                                      c.e[t], vl);
      const float* qk = c.qk + std::int64_t(t) * c.ld;
      for (int s = 0; s <= t; ++s) {
        acc = __riscv_vfmacc_vf_f32m2(acc, qk[s],
                                      __riscv_vle32_v_f32m2(D + std::int64_t(s) * n + j0, vl), vl);
      }
      __riscv_vse32_v_f32m2(c.out + t * c.out_stride + j0, acc, vl);
    }
    int i = 0;
    for (; i + 4 <= c.k_dim; i += 4) update_rows4(c, i, j0, vl, D, n);
    for (; i < c.k_dim; ++i) update_row1(c, i, j0, vl, D, n);
    j0 += static_cast<int>(vl);
  }
}

}  // namespace k3k::rvv
