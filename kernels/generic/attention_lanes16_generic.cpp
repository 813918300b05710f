// Generic attention microkernels: q.k by the fixed-order 16-lane dot (lanes_dot.h) over the key
// gathered from its key-block column (k3k/kv_cache.h; the gather moves values, so the scores do not
// depend on the key block), scalar exp, key-order accumulation of p_j v_j. The error models of
// reference::attention_* are derived for exactly this order.
#include <algorithm>
#include <cmath>
#include <limits>

#include "generic/lanes_dot.h"
#include "generic/microkernels.h"

namespace k3k::generic {

void attention_rotate_scale_q(const float* src, float* dst, int head_dim, int half,
                              const float* cos, const float* sin, float scale) {
  rope_rotate(src, dst, head_dim, half, cos, sin);
  for (int d = 0; d < head_dim; ++d) dst[d] *= scale;
}

namespace {

// One query row against one block of n visible keys (online softmax step):
//   s_j = q.k_j (q pre-scaled);  m' = max(m, max_j s_j);  alpha = exp(m - m');  p_j = exp(s_j - m')
//   acc = acc * alpha + sum_j p_j v_j;   l = l * alpha + sum_j p_j;   m = m'.
// The block sums are formed from zero in key order (so each term p_j v_j is rounded at most
// n + 1 times inside the block), then merged with one rescale.
void online_row(const float* q, const ukernel::KeysT& k, const float* const* vp, int n, int hd,
                float* s, float* blk, float& m, float& l, float* acc) {
  float mb = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < n; ++j) {
    const float* col = k.col(j);  // blk holds the gathered key until the block sum needs it
    for (int d = 0; d < hd; ++d) blk[d] = col[static_cast<std::ptrdiff_t>(d) * k.block];
    s[j] = dot_lanes(q, blk, hd);
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
  // A row's first block (m = -inf) does not read its accumulator: blk + 0, the merge's value for
  // acc = +0 (the sign of a zero sum included).
  if (m == -std::numeric_limits<float>::infinity()) {
    for (int d = 0; d < hd; ++d) acc[d] = blk[d] + 0.0f;
  } else {
    for (int d = 0; d < hd; ++d) acc[d] = acc[d] * alpha + blk[d];
  }
  l = l * alpha + bsum;
  m = m_new;
}

}  // namespace

// The rows one at a time, each with the first min(n, nv0 + r) keys.
void attention_online_block(const float* q, int rows, int nv0, const ukernel::KeysT& k,
                            const float* const* vp, int n, int hd, float* s, float* blk, float* m,
                            float* l, float* acc) {
  for (int r = 0; r < rows; ++r) {
    const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(r) * hd;
    online_row(q + off, k, vp, std::min(n, nv0 + r), hd, s, blk, m[r], l[r], acc + off);
  }
}

void fp16_rows(const fp16_t* src, std::ptrdiff_t src_stride, float* dst, std::ptrdiff_t dst_stride,
               std::int64_t rows, std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r)
    fp16_to_fp32_row(src + r * src_stride, dst + r * dst_stride, n);
}

void attention_divide_row(const float* acc, float l, float* out, int head_dim) {
  for (int d = 0; d < head_dim; ++d) out[d] = acc[d] / l;
}

namespace {
// The K of (kv head, position) gathered from its key-block column into `buf` as floats (fp16
// converted exactly).
const float* key_f32(const KvCache& cache, int head, std::int64_t pos, float* buf) {
  const std::size_t off = cache.k_offset(head, cache.slot(pos));
  const std::ptrdiff_t kb = cache.key_block();
  if (cache.dtype() == KvDtype::f32) {
    for (int d = 0; d < cache.head_dim(); ++d) buf[d] = cache.k_f32()[off + d * kb];
  } else {
    for (int d = 0; d < cache.head_dim(); ++d) buf[d] = fp16_to_fp32(cache.k_f16()[off + d * kb]);
  }
  return buf;
}
// The V row of (kv head, position): a pointer into an fp32 cache, or the row converted from fp16
// into `buf` (head_dim floats).
const float* value_f32(const KvCache& cache, int head, std::int64_t pos, float* buf) {
  const std::size_t off = cache.v_offset(head, cache.slot(pos));
  if (cache.dtype() == KvDtype::f32) return cache.v_f32() + off;
  fp16_to_fp32_row(cache.v_f16() + off, buf, cache.head_dim());
  return buf;
}
}  // namespace

void attention_decode_chunk(const ukernel::DecodeChunk& c) {
  const KvCache& cache = *c.cache;
  const int hd = cache.head_dim(), n = c.n, group = c.group;
  float* s = c.scores;
  for (int j = 0; j < n; ++j) {
    const float* k = key_f32(cache, c.kv_head, c.first_pos + j, c.kbuf);
    for (int gi = 0; gi < group; ++gi) {
      s[static_cast<std::int64_t>(gi) * c.score_stride + j] =
          dot_lanes(c.q + static_cast<std::int64_t>(gi) * hd, k, hd);
    }
  }
  for (int gi = 0; gi < group; ++gi) {
    float* sg = s + static_cast<std::int64_t>(gi) * c.score_stride;
    float m = -std::numeric_limits<float>::infinity();
    for (int j = 0; j < n; ++j) m = std::max(m, sg[j]);
    float l = 0.0f;
    for (int j = 0; j < n; ++j) {
      sg[j] = std::exp(sg[j] - m);
      l += sg[j];
    }
    c.m[gi * c.head_stride] = m;
    c.l[gi * c.head_stride] = l;
    float* a = c.acc + gi * c.head_stride * hd;
    for (int d = 0; d < hd; ++d) a[d] = 0.0f;
  }
  for (int j = 0; j < n; ++j) {
    const float* v = value_f32(cache, c.kv_head, c.first_pos + j, c.vbuf);
    for (int gi = 0; gi < group; ++gi) {
      const float p = s[static_cast<std::int64_t>(gi) * c.score_stride + j];
      float* a = c.acc + gi * c.head_stride * hd;
      for (int d = 0; d < hd; ++d) a[d] += p * v[d];
    }
  }
}

// m' = max(m, m_c);  acc = acc * exp(m - m') + acc_c * exp(m_c - m');  l likewise.
void attention_merge_chunks(const float* acc, const float* m_c, const float* l_c,
                            std::int64_t n_chunks, int hd, float* o) {
  for (int d = 0; d < hd; ++d) o[d] = acc[d];
  float m = m_c[0];
  float l = l_c[0];
  for (std::int64_t c = 1; c < n_chunks; ++c) {
    const float* ac = acc + c * hd;
    const float m_new = std::max(m, m_c[c]);
    const float alpha = std::exp(m - m_new);
    const float beta = std::exp(m_c[c] - m_new);
    for (int d = 0; d < hd; ++d) o[d] = o[d] * alpha + ac[d] * beta;
    l = l * alpha + l_c[c] * beta;
    m = m_new;
  }
  for (int d = 0; d < hd; ++d) o[d] = o[d] / l;
}

}  // namespace k3k::generic
