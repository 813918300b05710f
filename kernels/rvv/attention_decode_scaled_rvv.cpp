// The RVV decode chunk over an fp16 KV cache on scaled halves, bitwise the exact path's results
// with a third of its instructions. The exact path converts every cached half with eleven integer
// operations (rvv_math.h f16_to_f32, no Zvfh in rv64gcv); here a half h becomes the float whose
// bits are sext(h) << 13 with bits 28..30 cleared: h's value times 2^-112, exactly, for every
// finite half (k3k/fp16.h fp16_scaled_2m112), by one widening multiply and one and. The queries are
// multiplied by 2^112 before the scores and the softmax numerators before P.V, so every product
// q' k' and p' v' is exactly q k and p v and every multiply and fused step rounds as it does on the
// values: the scores, numerators and accumulators are bit for bit the exact path's.
//
// It applies when every |q| < 2^15 (q 2^112 stays finite) and no key or value the chunk reads is
// inf or NaN (exponent 31, whose scaled float is finite): the loads track the largest h << 1
// (>= 0xF800 exactly for those), and a chunk that met one, or such a query, returns false for the
// exact path to compute it (it overwrites everything this wrote).
//
// When a key block is one e32m4 vector (key_block = vlenb, the default) and so is a head (head_dim
// = VLEN / 8: 128 at VLEN 1024), two dims of a block's keys, and two V rows, are adjacent: one
// e16m4 load and one e32m8 conversion serve both, and the products run per e32m4 half. Elsewhere
// one dim (one row strip) per load.
#include <riscv_vector.h>

#include <array>
#include <cmath>
#include <utility>

#include "common/kv_runs.h"
#include "rvv/decode_chunk_passes.h"
#include "rvv/decode_scaled.h"
#include "rvv/key_scores.h"
#include "rvv/rvv_math.h"

namespace k3k::rvv {

namespace {

constexpr std::uint16_t kSpecialShifted = 0xF800;  // (h << 1) >= this: exponent 31 (inf, NaN)
constexpr float kUp = 0x1p112f;
constexpr float kQueryLimit = 0x1p15f;
constexpr int kMaxHeadDim = 1024;

// Scaled floats of the halves at p and the running max of h << 1 (tail undisturbed).
inline vfloat32m4_t scaled_m4(const fp16_t* p, std::size_t vl, vuint16m2_t& mx) {
  const vuint16m2_t h = __riscv_vle16_v_u16m2(p, vl);
  mx = __riscv_vmaxu_vv_u16m2_tu(mx, mx, __riscv_vsll_vx_u16m2(h, 1, vl), vl);
  const vint32m4_t w =
      __riscv_vwmul_vx_i32m4(__riscv_vreinterpret_v_u16m2_i16m2(h), kFp16ScaledShift, vl);
  return __riscv_vreinterpret_v_u32m4_f32m4(
      __riscv_vand_vx_u32m4(__riscv_vreinterpret_v_i32m4_u32m4(w), kFp16ScaledMask, vl));
}
// Two adjacent rows of vl halves each (vl = VLMAX_m4 of e32: 2 vl halves = VLMAX of e16m4, so
// the tracker has no tail to keep), widened at e16m4: row r's scaled floats are
// scaled_half(w, r), masked per e32m4 half (one fewer vtype change than an e32m8 and). Values,
// not out-parameters: references to vector values go through the stack.
[[gnu::always_inline]] inline vint32m8_t widened_pair(const fp16_t* p, vuint16m4_t& mx) {
  const std::size_t vl2 = __riscv_vsetvlmax_e16m4();
  const vuint16m4_t h = __riscv_vle16_v_u16m4(p, vl2);
  mx = __riscv_vmaxu_vv_u16m4(mx, __riscv_vadd_vv_u16m4(h, h, vl2), vl2);
  return __riscv_vwmul_vx_i32m8(__riscv_vreinterpret_v_u16m4_i16m4(h), kFp16ScaledShift, vl2);
}
// The same for a key block's first vl < VLMAX_m4 keys: the loads read the block's whole rows (its
// storage is whole blocks), and `keys` (lanes whose index mod VLMAX_m4 is below vl) keeps the
// slots past them, stale or never written, out of the tracker. The products ignore them: they
// run at vl.
[[gnu::always_inline]] inline vint32m8_t widened_pair(const fp16_t* p, vuint16m4_t& mx,
                                                      vbool4_t keys) {
  const std::size_t vl2 = __riscv_vsetvlmax_e16m4();
  const vuint16m4_t h = __riscv_vle16_v_u16m4(p, vl2);
  mx = __riscv_vmaxu_vv_u16m4_mu(keys, mx, mx, __riscv_vadd_vv_u16m4(h, h, vl2), vl2);
  return __riscv_vwmul_vx_i32m8(__riscv_vreinterpret_v_u16m4_i16m4(h), kFp16ScaledShift, vl2);
}
inline vbool4_t first_keys_of_pair(std::size_t vl) {
  const std::size_t vl2 = __riscv_vsetvlmax_e16m4();
  const std::size_t kb = __riscv_vsetvlmax_e32m4();
  return __riscv_vmsltu_vx_u16m4_b4(
      __riscv_vand_vx_u16m4(__riscv_vid_v_u16m4(vl2), static_cast<std::uint16_t>(kb - 1), vl2), vl,
      vl2);
}
template <int R>
[[gnu::always_inline]] inline vfloat32m4_t scaled_half(vint32m8_t w, std::size_t vl) {
  return __riscv_vreinterpret_v_u32m4_f32m4(__riscv_vand_vx_u32m4(
      __riscv_vreinterpret_v_i32m4_u32m4(__riscv_vget_v_i32m8_i32m4(w, R)), kFp16ScaledMask, vl));
}

// Dims 2i and 2i + 1 of a block of kScoreDimBlock (a, b at the block's first dim; kp at dim 2i's
// row, the next dim's row right after it): c0 += a[2i] k + a[2i+1] k' (c1 with b when kPair), the
// block's first dim by vfmul. Constant i: the query loads take immediate offsets.
template <bool kPair, bool kPartial, int I>
[[gnu::always_inline]] inline void two_dims(const float* a, const float* b, const fp16_t*& kp,
                                            std::ptrdiff_t ld, std::size_t vl, vfloat32m4_t& c0,
                                            vfloat32m4_t& c1, vuint16m4_t& mx4, vbool4_t keys) {
  const vint32m8_t w = kPartial ? widened_pair(kp, mx4, keys) : widened_pair(kp, mx4);
  kp += 2 * ld;
  const vfloat32m4_t k = scaled_half<0>(w, vl), kn = scaled_half<1>(w, vl);
  c0 = I == 0 ? __riscv_vfmul_vf_f32m4(k, a[0], vl) : __riscv_vfmacc_vf_f32m4(c0, a[2 * I], k, vl);
  c0 = __riscv_vfmacc_vf_f32m4(c0, a[2 * I + 1], kn, vl);
  if constexpr (kPair) {
    c1 =
        I == 0 ? __riscv_vfmul_vf_f32m4(k, b[0], vl) : __riscv_vfmacc_vf_f32m4(c1, b[2 * I], k, vl);
    c1 = __riscv_vfmacc_vf_f32m4(c1, b[2 * I + 1], kn, vl);
  }
}
template <bool kPair, bool kPartial, int... I>
[[gnu::always_inline]] inline void block_two_dims(const float* a, const float* b, const fp16_t*& kp,
                                                  std::ptrdiff_t ld, std::size_t vl,
                                                  vfloat32m4_t& c0, vfloat32m4_t& c1,
                                                  vuint16m4_t& mx4, vbool4_t keys,
                                                  std::integer_sequence<int, I...>) {
  (two_dims<kPair, kPartial, I>(a, b, kp, ld, vl, c0, c1, mx4, keys), ...);
}

// Scores of vl keys (component d at col + d * ld) against a (and b when kPair), in the chain order
// of key_scores.h (blocks of kScoreDimBlock dims, each from a vfmul, block sums in dim order).
// kTwoDims: the strip starts a key block of one e32m4 vector, two dims per load, a full block of
// dims unrolled; kPartial: it holds fewer keys than the block (the loads' other slots masked out
// of the tracker).
template <bool kPair, bool kTwoDims, bool kPartial = false>
inline void strip_scores(const float* a, const float* b, int hd, const fp16_t* col,
                         std::ptrdiff_t ld, std::size_t vl, float* out0, float* out1,
                         vuint16m2_t& mx2, vuint16m4_t& mx4) {
  constexpr int kBlock = rvv_detail::kScoreDimBlock;
  // The blocks' running sums wait in out0 / out1 (registers go to the chains and conversions).
  auto add_block = [&](int d0, float* out, vfloat32m4_t c) {
    __riscv_vse32_v_f32m4(
        out, d0 == 0 ? c : __riscv_vfadd_vv_f32m4(__riscv_vle32_v_f32m4(out, vl), c, vl), vl);
  };
  const fp16_t* kp = col;
  vbool4_t keys{};
  if constexpr (kPartial) keys = first_keys_of_pair(vl);
  for (int d0 = 0; d0 < hd; d0 += kBlock) {
    const int dims = std::min(kBlock, hd - d0);
    vfloat32m4_t c0, c1;
    if (kTwoDims && dims == kBlock) {
      block_two_dims<kPair, kPartial>(a + d0, b + d0, kp, ld, vl, c0, c1, mx4, keys,
                                      std::make_integer_sequence<int, kBlock / 2>{});
    } else {
      for (int i = 0; i < dims; ++i, kp += ld) {
        const int d = d0 + i;
        const vfloat32m4_t k = scaled_m4(kp, vl, mx2);
        c0 =
            i == 0 ? __riscv_vfmul_vf_f32m4(k, a[d], vl) : __riscv_vfmacc_vf_f32m4(c0, a[d], k, vl);
        if constexpr (kPair)
          c1 = i == 0 ? __riscv_vfmul_vf_f32m4(k, b[d], vl)
                      : __riscv_vfmacc_vf_f32m4(c1, b[d], k, vl);
      }
    }
    add_block(d0, out0, c0);
    if constexpr (kPair) add_block(d0, out1, c1);
  }
}

// Scores of n keys whose columns are contiguous from col (cache slot `slot` onwards), in strips of
// VLMAX_m4 keys.
template <bool kPair>
void piece_scores(const float* a, const float* b, int hd, const fp16_t* col, std::ptrdiff_t ld,
                  int n, std::int64_t slot, float* out0, float* out1, vuint16m2_t& mx2,
                  vuint16m4_t& mx4) {
  const std::size_t vlmax = __riscv_vsetvlmax_e32m4();
  const bool two_dims = static_cast<std::ptrdiff_t>(vlmax) == ld && hd % 2 == 0;
  for (int i = 0; i < n;) {
    const std::size_t vl = __riscv_vsetvl_e32m4(static_cast<std::size_t>(n - i));
    if (two_dims && vl == vlmax)
      strip_scores<kPair, true>(a, b, hd, col + i, ld, vl, out0 + i, out1 + i, mx2, mx4);
    else if (two_dims && i == 0 && slot % ld == 0)  // a block's first keys (a chunk's last piece)
      strip_scores<kPair, true, true>(a, b, hd, col, ld, vl, out0, out1, mx2, mx4);
    else
      strip_scores<kPair, false>(a, b, hd, col + i, ld, vl, out0 + i, out1 + i, mx2, mx4);
    i += static_cast<int>(vl);
  }
}

// acc0 += sum_j p0[j] v_j (acc1 with p1 when kPair) over a run of rows, key order; the rows' dims
// [d, d + vl) (kTwoRows: d = 0 and vl = head_dim = VLMAX_m4, two rows per load).
template <bool kPair>
inline void run_values(const fp16_t* v, int hd, int d, std::size_t vl, std::int64_t rows,
                       const float* p0, const float* p1, vfloat32m4_t& acc0, vfloat32m4_t& acc1,
                       vuint16m2_t& mx2, vuint16m4_t& mx4) {
  std::int64_t j = 0;
  if (static_cast<std::size_t>(hd) == vl && vl == __riscv_vsetvlmax_e32m4()) {
    auto two_rows = [&](const fp16_t* rows2, const float* q0, const float* q1) {
      const vint32m8_t w = widened_pair(rows2, mx4);
      const vfloat32m4_t r0 = scaled_half<0>(w, vl), r1 = scaled_half<1>(w, vl);
      acc0 = __riscv_vfmacc_vf_f32m4(acc0, q0[0], r0, vl);
      acc0 = __riscv_vfmacc_vf_f32m4(acc0, q0[1], r1, vl);
      if constexpr (kPair) {
        acc1 = __riscv_vfmacc_vf_f32m4(acc1, q1[0], r0, vl);
        acc1 = __riscv_vfmacc_vf_f32m4(acc1, q1[1], r1, vl);
      }
    };
    for (; j + 4 <= rows; j += 4, v += 4 * hd) {  // two pairs a pass: half the loop control
      two_rows(v, p0 + j, p1 + j);
      two_rows(v + 2 * hd, p0 + j + 2, p1 + j + 2);
    }
    for (; j + 2 <= rows; j += 2, v += 2 * hd) two_rows(v, p0 + j, p1 + j);
  }
  for (; j < rows; ++j, v += hd) {
    const vfloat32m4_t r = scaled_m4(v + d, vl, mx2);
    acc0 = __riscv_vfmacc_vf_f32m4(acc0, p0[j], r, vl);
    if constexpr (kPair) acc1 = __riscv_vfmacc_vf_f32m4(acc1, p1[j], r, vl);
  }
}

}  // namespace

bool attention_decode_chunk_f16_scaled(const ukernel::DecodeChunk& c) {
  const KvCache& cache = *c.cache;
  const int hd = cache.head_dim(), n = c.n, group = c.group, g = c.kv_head;
  if (hd > kMaxHeadDim) return false;
  // The queries times 2^112, unless one would overflow.
  const std::int64_t qn = std::int64_t(group) * hd;
  if (std::fabs(rvv_detail::max_abs(c.q, qn)) >= kQueryLimit) return false;
  thread_local std::array<float, 2 * kMaxHeadDim> qs;  // the pair of query heads being scored
  const std::int64_t c0 = c.first_pos, chunk = c.score_stride;
  const int kb = cache.key_block();
  float* s = c.scores;
  vuint16m2_t mx2 = __riscv_vmv_v_x_u16m2(0, __riscv_vsetvlmax_e16m2());
  vuint16m4_t mx4 = __riscv_vmv_v_x_u16m4(0, __riscv_vsetvlmax_e16m4());

  for (int gi = 0; gi < group; gi += 2) {
    const bool pair = gi + 1 < group;
    rvv_detail::scale_row(c.q + std::int64_t(gi) * hd, qs.data(), (pair ? 2 : 1) * hd, kUp);
    k3k::detail::for_each_key_piece(
        cache, c0, n, [&](std::int64_t j, std::int64_t slot, std::int64_t piece) {
          const fp16_t* col = cache.k_f16() + cache.k_offset(g, slot);
          float* s0 = s + gi * chunk + j;
          if (pair)
            piece_scores<true>(qs.data(), qs.data() + hd, hd, col, kb, static_cast<int>(piece),
                               slot, s0, s0 + chunk, mx2, mx4);
          else
            piece_scores<false>(qs.data(), qs.data(), hd, col, kb, static_cast<int>(piece), slot,
                                s0, s0, mx2, mx4);
        });
  }
  // Softmax numerators and the chunk's max and sum, as the exact path; then the numerators times
  // 2^112 for P.V (exact: they are in [0, 1]).
  rvv_detail::chunk_softmax_numerators(c,
                                       [&](float* sg) { rvv_detail::scale_row(sg, sg, n, kUp); });
  rvv_detail::chunk_value_pass(
      c, [&](const rvv_detail::ValueRun& r, vfloat32m4_t& acc0, vfloat32m4_t& acc1) {
        const fp16_t* v = cache.v_f16() + cache.v_offset(g, r.slot);
        const float* p0 = r.p0 + r.j0;
        if (r.pair)
          run_values<true>(v, hd, r.d, r.vl, r.run, p0, r.p1 + r.j0, acc0, acc1, mx2, mx4);
        else
          run_values<false>(v, hd, r.d, r.vl, r.run, p0, p0, acc0, acc1, mx2, mx4);
      });
  const vuint16m1_t zero = __riscv_vmv_s_x_u16m1(0, 1);
  const std::uint16_t seen = std::max(__riscv_vmv_x_s_u16m1_u16(__riscv_vredmaxu_vs_u16m2_u16m1(
                                          mx2, zero, __riscv_vsetvlmax_e16m2())),
                                      __riscv_vmv_x_s_u16m1_u16(__riscv_vredmaxu_vs_u16m4_u16m1(
                                          mx4, zero, __riscv_vsetvlmax_e16m4())));
  return seen < kSpecialShifted;
}

}  // namespace k3k::rvv
