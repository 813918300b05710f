// Attention scores over key blocks (k3k/kv_cache.h: K stored [head_dim][key_block] per block), the
// RVV layer's q.k for prefill and decode: one e32m4 vector holds up to VLMAX_m4 = vlenb keys, and
// each dim is one vfmacc of q[d] times that dim's row of the keys, so one instruction advances
// vlenb keys' scores (128 at VLEN 1024) and no key needs a reduction of its own. Two query rows
// share each load of a dim's row (key_scores2), so a load serves two vfmacc.
//
// Order (the error models' reference::rvv_score_depth): the dims in blocks of kScoreDimBlock, each
// block one chain from its first product (vfmul, then one vfmacc per dim), the blocks' sums added
// in dim order: a product goes through at most min(head_dim, 16) + ceil(head_dim / 16) - 1
// roundings. A key's score depends only on q, its own components and head_dim - never on the key
// block, the strip, which keys share a vector or whether a row is paired - so every caller gets
// bitwise the same score for a key however the keys and rows are split.
//
// Registers (LMUL m4, 8 groups): per row a running total and a block chain, plus the loaded dim
// row (and for fp16 its conversion temporaries): 5 groups for a pair.
#pragma once

#include <riscv_vector.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "k3k/fp16.h"
#include "rvv/rvv_math.h"

namespace k3k::rvv_detail {

inline constexpr int kScoreDimBlock = 16;

// The keys' component at p (vl keys, contiguous) as floats: fp32 loaded, fp16 converted exactly.
inline vfloat32m4_t load_keys(const float* p, std::size_t vl) {
  return __riscv_vle32_v_f32m4(p, vl);
}
inline vfloat32m4_t load_keys(const fp16_t* p, std::size_t vl) {
  return f16_to_f32(__riscv_vle16_v_u16m2(p, vl), vl);
}

// Dim i of a block (a = q0 + d0, b = q1 + d0, kp at the dim's row, then moved to the next):
// c0 += a[i] k (and c1 += b[i] k when kPair). Constant i: the q loads take immediate offsets.
template <bool kPair, typename T>
inline void chain_step(const float* a, const float* b, int i, const T*& kp, std::ptrdiff_t ld,
                       std::size_t vl, vfloat32m4_t& c0, vfloat32m4_t& c1) {
  const vfloat32m4_t k = load_keys(kp, vl);
  kp += ld;
  c0 = __riscv_vfmacc_vf_f32m4(c0, a[i], k, vl);
  if (kPair) c1 = __riscv_vfmacc_vf_f32m4(c1, b[i], k, vl);
}

// Dims 1 .. sizeof...(I) of a full block, unrolled: no loop control and no index arithmetic.
template <bool kPair, typename T, int... I>
inline void chain_unrolled(const float* a, const float* b, const T*& kp, std::ptrdiff_t ld,
                           std::size_t vl, vfloat32m4_t& c0, vfloat32m4_t& c1,
                           std::integer_sequence<int, I...>) {
  (chain_step<kPair>(a, b, I + 1, kp, ld, vl, c0, c1), ...);
}

// s0 = q0 . k and, when kPair, s1 = q1 . k for vl keys whose component d is at col + d * ld.
template <bool kPair, typename T>
inline void key_scores(const float* q0, const float* q1, int hd, const T* col, std::ptrdiff_t ld,
                       std::size_t vl, vfloat32m4_t& s0, vfloat32m4_t& s1) {
  const T* kp = col;
  for (int d0 = 0; d0 < hd; d0 += kScoreDimBlock) {
    const float* a = q0 + d0;
    const float* b = kPair ? q1 + d0 : a;
    const vfloat32m4_t k = load_keys(kp, vl);
    kp += ld;
    vfloat32m4_t c0 = __riscv_vfmul_vf_f32m4(k, a[0], vl);
    vfloat32m4_t c1 = kPair ? __riscv_vfmul_vf_f32m4(k, b[0], vl) : c0;
    if (hd - d0 >= kScoreDimBlock) {
      chain_unrolled<kPair>(a, b, kp, ld, vl, c0, c1,
                            std::make_integer_sequence<int, kScoreDimBlock - 1>{});
    } else {
      for (int i = 1; i < hd - d0; ++i) chain_step<kPair>(a, b, i, kp, ld, vl, c0, c1);
    }
    s0 = d0 == 0 ? c0 : __riscv_vfadd_vv_f32m4(s0, c0, vl);
    if (kPair) s1 = d0 == 0 ? c1 : __riscv_vfadd_vv_f32m4(s1, c1, vl);
  }
}

// out0[i] = q0 . key i (and out1[i] = q1 . key i when q1 is not null) for n keys whose columns
// are contiguous from col: component d of key i at col[d * ld + i] (T = float or fp16_t, the latter
// converted exactly in registers). Strips of VLMAX_m4 keys.
template <typename T>
inline void key_scores_rows(const float* q0, const float* q1, int hd, const T* col,
                            std::ptrdiff_t ld, int n, float* out0, float* out1) {
  for (int i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(n - i));
    vfloat32m4_t s0, s1;
    if (q1 != nullptr) {
      key_scores<true>(q0, q1, hd, col + i, ld, vl, s0, s1);
      __riscv_vse32_v_f32m4(out1 + i, s1, vl);
    } else {
      key_scores<false>(q0, q0, hd, col + i, ld, vl, s0, s1);
    }
    __riscv_vse32_v_f32m4(out0 + i, s0, vl);
    i += static_cast<int>(vl);
  }
}

// Prefill's short key pieces (at most one e32m1 or e32m2 register of keys): kRows query rows
// share each load of a dim's row, their chains and totals two e32m8 groups of kRows rows each (8
// rows of m1 or 4 of m2; vget/vset name registers, no moves). Per dim one load, kRows scalar q
// loads and kRows vfmacc: 18 instructions for 8 rows where pairs take 24. Each row's arithmetic is
// key_scores' (the same chain per block of kScoreDimBlock dims, the blocks added in order), so a
// key's score has the same bits on either path.
template <int kRows>
struct RowGroup;
// RowGroup<ROWS>: rows of e32 LMUL L (the intrinsics' suffix), ROWS * L = 8.
#define K3_ROW_GROUP(ROWS, L)                                                                \
  template <>                                                                                \
  struct RowGroup<ROWS> {                                                                    \
    using V = vfloat32##L##_t;                                                               \
    static std::size_t vsetvl(std::size_t n) { return __riscv_vsetvl_e32##L(n); }            \
    static V load(const float* p, std::size_t vl) { return __riscv_vle32_v_f32##L(p, vl); }  \
    static V mul(V k, float a, std::size_t vl) { return __riscv_vfmul_vf_f32##L(k, a, vl); } \
    static V macc(V c, float a, V k, std::size_t vl) {                                       \
      return __riscv_vfmacc_vf_f32##L(c, a, k, vl);                                          \
    }                                                                                        \
    static V add(V a, V b, std::size_t vl) { return __riscv_vfadd_vv_f32##L(a, b, vl); }     \
    static void store(float* p, V v, std::size_t vl) { __riscv_vse32_v_f32##L(p, v, vl); }   \
    template <int r>                                                                         \
    static V get(vfloat32m8_t g) {                                                           \
      return __riscv_vget_v_f32m8_f32##L(g, r);                                              \
    }                                                                                        \
    template <int r>                                                                         \
    static vfloat32m8_t set(vfloat32m8_t g, V v) {                                           \
      return __riscv_vset_v_f32##L##_f32m8(g, r, v);                                         \
    }                                                                                        \
  };
K3_ROW_GROUP(8, m1)
K3_ROW_GROUP(4, m2)
#undef K3_ROW_GROUP

// Dim i of a block for every row r (q row r's block at a[r]): c_r += a[r][i] k.
template <class G, int... R>
[[gnu::always_inline]] inline void rows_step(const float* const* a, int i, const float*& kp,
                                             std::ptrdiff_t ld, std::size_t vl, vfloat32m8_t& c,
                                             std::integer_sequence<int, R...>) {
  const typename G::V k = G::load(kp, vl);
  kp += ld;
  ((c = G::template set<R>(c, G::macc(G::template get<R>(c), a[R][i], k, vl))), ...);
}
template <class G, int... R, int... I>
[[gnu::always_inline]] inline void rows_unrolled(const float* const* a, const float*& kp,
                                                 std::ptrdiff_t ld, std::size_t vl, vfloat32m8_t& c,
                                                 std::integer_sequence<int, R...> rows,
                                                 std::integer_sequence<int, I...>) {
  (rows_step<G>(a, I + 1, kp, ld, vl, c, rows), ...);
}

// out[r * out_stride + j] = q_r . key j for rows r < rows (q_r at q + r * hd; rows <= kRows) and
// vl <= G::vlmax() keys whose component d is at col[d * ld + j].
template <int kRows, int... R>
[[gnu::always_inline]] inline void key_scores_group(const float* q, int rows, int hd,
                                                    const float* col, std::ptrdiff_t ld,
                                                    std::size_t vl, float* out,
                                                    std::ptrdiff_t out_stride,
                                                    std::integer_sequence<int, R...> seq) {
  using G = RowGroup<kRows>;
  // Rows past `rows` repeat the last one (their scores are not stored).
  const float* a[kRows] = {(q + static_cast<std::ptrdiff_t>(std::min(R, rows - 1)) * hd)...};
  const float* kp = col;
  vfloat32m8_t s = __riscv_vundefined_f32m8(), c = s;
  for (int d0 = 0; d0 < hd; d0 += kScoreDimBlock) {
    const typename G::V k = G::load(kp, vl);
    kp += ld;
    ((c = G::template set<R>(c, G::mul(k, a[R][0], vl))), ...);
    if (hd - d0 >= kScoreDimBlock) {
      rows_unrolled<G>(a, kp, ld, vl, c, seq,
                       std::make_integer_sequence<int, kScoreDimBlock - 1>{});
    } else {
      for (int i = 1; i < hd - d0; ++i) rows_step<G>(a, i, kp, ld, vl, c, seq);
    }
    if (d0 == 0) {
      s = c;
    } else {
      ((s = G::template set<R>(s, G::add(G::template get<R>(s), G::template get<R>(c), vl))), ...);
    }
    for (int r = 0; r < kRows; ++r) a[r] += kScoreDimBlock;
  }
  ((R < rows ? G::store(out + R * out_stride, G::template get<R>(s), vl) : void()), ...);
}

// The scores of `rows` (<= kRows) query rows against n keys in strips of G::vlmax() whose columns
// are contiguous from col (as key_scores_rows), row r's to out + r * out_stride.
template <int kRows>
inline void key_scores_rows_group(const float* q, int rows, int hd, const float* col,
                                  std::ptrdiff_t ld, int n, float* out, std::ptrdiff_t out_stride) {
  for (int i = 0; i < n;) {
    const std::size_t vl = RowGroup<kRows>::vsetvl(static_cast<std::size_t>(n - i));
    key_scores_group<kRows>(q, rows, hd, col + i, ld, vl, out + i, out_stride,
                            std::make_integer_sequence<int, kRows>{});
    i += static_cast<int>(vl);
  }
}

}  // namespace k3k::rvv_detail
